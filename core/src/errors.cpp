#include "hydragen/errors.hpp"

namespace hydragen {

OutOfMemory::OutOfMemory(const std::string& where, std::size_t requested_bytes, const std::string& detail)
    : std::runtime_error(where + ": out of memory allocating " + std::to_string(requested_bytes) + " bytes (" +
                         detail + ")"),
      requested_(requested_bytes) {}

}  // namespace hydragen
