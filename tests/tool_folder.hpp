#pragma once
// A test's own fresh folder, and a tool run in it by the shell (the tests of the flags that keep
// files: hydragen-sweep's and hydragen-decode's --resume).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hydragen::testing {

class ToolFolder : public ::testing::Test {
 protected:
  struct Run {
    int exit_code;
    std::string out, err;
  };

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hydragen_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `binary args` in the folder; stdout and stderr kept beside it, then removed.
  Run run(const std::string& binary, const std::string& args) const {
    const std::string base = "../" + dir_.filename().string();
    const std::string command = "cd '" + dir_.string() + "' && '" + binary + "' " + args + " > " + base + ".out 2> " + base + ".err";
    const int status = std::system(command.c_str());
    Run run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_.string() + ".out"), slurp(dir_.string() + ".err")};
    std::filesystem::remove(dir_.string() + ".out");
    std::filesystem::remove(dir_.string() + ".err");
    return run;
  }

  static std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }
  std::string read(const std::string& name) const { return slurp(dir_ / name); }

  std::filesystem::path dir_;
};

}  // namespace hydragen::testing
