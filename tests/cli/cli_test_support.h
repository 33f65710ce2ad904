// SPDX-License-Identifier: Apache-2.0
// What the tests of the `zb` command share: running zb as users run it (stdout, stderr, exit code),
// golden files, and the one-line error contract. cli_test.cpp tests the commands' output,
// cli_bad_input_test.cpp the malformed inputs of docs/reliability.md's table.
//
// Golden files live in tests/data/cli; run with ZBKIT_UPDATE_GOLDEN=1 to rewrite them after an
// intended change (and read the diff).
#ifndef ZBKIT_TESTS_CLI_CLI_TEST_SUPPORT_H_
#define ZBKIT_TESTS_CLI_CLI_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"

namespace zb::cli_testing {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("zbkit_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs zb with `args` (a shell-quoted string), in `cwd` when given, capturing stdout, stderr
  // and the exit code.
  Result Zb(const std::string& args, const fs::path& cwd = {}) {
    const fs::path out = dir_ / "stdout";
    const fs::path err = dir_ / "stderr";
    const std::string command = (cwd.empty() ? "" : "cd '" + cwd.string() + "' && ") +
                                std::string(ZBKIT_ZB_BINARY) + " " + args + " >" + out.string() +
                                " 2>" + err.string();
    const int status = std::system(command.c_str());
    Result result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = Slurp(out);
    result.err = Slurp(err);
    return result;
  }

  static std::string Data(const std::string& name) {
    return std::string(ZBKIT_TEST_DATA_DIR) + "/" + name;
  }

  // Compares with tests/data/cli/<name>, or rewrites it when ZBKIT_UPDATE_GOLDEN is set.
  static void ExpectGolden(const std::string& name, const std::string& actual) {
    const fs::path path = fs::path(ZBKIT_TEST_DATA_DIR) / "cli" / name;
    if (std::getenv("ZBKIT_UPDATE_GOLDEN") != nullptr) {
      std::ofstream(path, std::ios::binary) << actual;
      return;
    }
    ASSERT_TRUE(fs::exists(path)) << path << " missing; run with ZBKIT_UPDATE_GOLDEN=1";
    EXPECT_EQ(actual, Slurp(path)) << "golden " << path;
  }

  // The error contract: the exit code, nothing on stdout for early errors, exactly one line on
  // stderr that starts with "zb <command>: " and contains `fragment`.
  static void ExpectOneLineError(const Result& result, int exit_code, const std::string& command,
                                 const std::string& fragment) {
    EXPECT_EQ(result.exit_code, exit_code) << result.err;
    ASSERT_FALSE(result.err.empty());
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << "one line: " << result.err;
    EXPECT_EQ(result.err.rfind("zb " + command + ": ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(fragment), std::string::npos) << result.err;
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

}  // namespace zb::cli_testing

#endif  // ZBKIT_TESTS_CLI_CLI_TEST_SUPPORT_H_
