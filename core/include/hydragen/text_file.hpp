#pragma once
// Reading back a file the project wrote or a user names: a sweep's CSV for --resume, a calibration's
// rates. One contract for all of them, so that none reads an unreadable file as an empty one.
#include <optional>
#include <string>

namespace hydragen {

// The whole text of the file at `path`, byte for byte; nullopt when there is no such file. Throws
// std::invalid_argument ("cannot be read: WHY", without the path: callers name it as their user knows
// it) when it exists and cannot be read: a directory, no permission, a read that fails.
std::optional<std::string> read_text_if_exists(const std::string& path);

}  // namespace hydragen
