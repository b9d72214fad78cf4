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
  std::ostringstream text;
  // operator<< from an empty file's buffer sets failbit on `text` and reads nothing: not an error.
  if (in.peek() != std::ifstream::traits_type::eof()) text << in.rdbuf();
  if (in.bad()) throw std::invalid_argument("cannot be read: the read failed");
  return text.str();
}

}  // namespace hydragen
