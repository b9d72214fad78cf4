// read_text_if_exists: the one way the project reads back a file it wrote or a user named (a sweep's
// CSV for --resume, a calibration's rates).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "hydragen/text_file.hpp"

namespace hydragen {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("hydragen_text_file_" + std::to_string(getpid()) + "_" + name);
}

TEST(TextFile, AFileIsReadWholeByteForByte) {
  const std::filesystem::path path = scratch("whole.csv");
  const std::string text = std::string("a,b\r\n1,2\n") + '\0' + "no line break at the end";
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(read_text_if_exists(path.string()), text);
  std::filesystem::remove(path);
}

TEST(TextFile, AnEmptyFileIsEmptyTextNotAMissingOne) {
  const std::filesystem::path path = scratch("empty.csv");
  std::ofstream{path};
  EXPECT_EQ(read_text_if_exists(path.string()), std::string());
  std::filesystem::remove(path);
}

TEST(TextFile, AMissingFileHasNoText) {
  EXPECT_FALSE(read_text_if_exists(scratch("never-written.csv").string()).has_value());
}

TEST(TextFile, ADirectoryIsAnErrorNotAnEmptyFile) {
  const std::filesystem::path path = scratch("dir");
  std::filesystem::create_directory(path);
  EXPECT_THAT([&] { read_text_if_exists(path.string()); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("cannot be read: it is a directory")));
  std::filesystem::remove(path);
}

TEST(TextFile, AReadThatFailsIsAnErrorNotAnEmptyFile) {
  // Linux's /proc/self/mem opens, and reading its first page (never mapped) fails with EIO.
  if (!std::filesystem::exists("/proc/self/mem")) GTEST_SKIP() << "no /proc/self/mem here";
  EXPECT_THAT([] { read_text_if_exists("/proc/self/mem"); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("cannot be read: the read failed")));
}

TEST(TextFile, AFileThatCannotBeOpenedIsAnError) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads a file whatever its mode";
  const std::filesystem::path path = scratch("locked.csv");
  std::ofstream(path) << "x\n";
  std::filesystem::permissions(path, std::filesystem::perms::none);
  EXPECT_THAT([&] { read_text_if_exists(path.string()); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("cannot be read: Permission denied")));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace hydragen
