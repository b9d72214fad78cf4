#include "hydragen/text_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace hydragen {

std::optional<std::string> read_text_if_exists(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) return std::nullopt;
  if (error) throw std::invalid_argument("cannot be read: " + error.message());
  // An ifstream opens a directory and then reads nothing, which would pass for an empty file.
  if (std::filesystem::is_directory(status)) throw std::invalid_argument("cannot be read: it is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(std::string("cannot be read: ") + std::strerror(errno != 0 ? errno : EIO));
  // A read that fails shows on the stream that saw it: peek's sets badbit on `in`, the copy's sets
  // failbit on `text`. The copy also sets failbit when it moves nothing, so an empty file is not copied.
  const bool empty = in.peek() == std::ifstream::traits_type::eof();
  if (in.bad()) throw std::invalid_argument("cannot be read: the read failed");
  std::ostringstream text;
  if (!empty && !(text << in.rdbuf())) throw std::invalid_argument("cannot be read: the read failed");
  return text.str();
}

}  // namespace hydragen
