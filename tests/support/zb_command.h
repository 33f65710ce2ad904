// SPDX-License-Identifier: Apache-2.0
// Running the real `zb` as a user does, for the tests of the profiler's commands: shell-quoted
// arguments, stdout and stderr kept in files of a scratch directory, the exit code.
#ifndef ZBKIT_TESTS_SUPPORT_ZB_COMMAND_H_
#define ZBKIT_TESTS_SUPPORT_ZB_COMMAND_H_

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace zb::testing_support {

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct ZbResult {
  int code = -1;  // the exit code, -1 when zb did not exit (killed by a signal)
  std::string out;
  std::string err;
};

// `env zb args` (env and args are shell text); the output files go in `scratch`.
inline ZbResult RunZb(const std::string& args, const std::string& scratch,
                      const std::string& env = "") {
  const std::string out = scratch + "/stdout";
  const std::string err = scratch + "/stderr";
  const std::string command = env + (env.empty() ? "" : " ") + "'" + ZBKIT_ZB_BINARY + "' " + args +
                              " > '" + out + "' 2> '" + err + "'";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadWholeFile(out), ReadWholeFile(err)};
}

}  // namespace zb::testing_support

#endif  // ZBKIT_TESTS_SUPPORT_ZB_COMMAND_H_
