// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/output.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>

#include "zbkit/schemas/json_io.h"

namespace zb::cli {

Status WriteToFileOrStdout(const std::string& destination, const std::string& content,
                           std::ostream& out) {
  if (destination == "-") {
    out << content;
    return Status::Ok();
  }
  return WriteFileAtomically(destination, content);
}

std::string TemporaryRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

Expected<std::string> MakeTemporaryDirectory(const std::string& stem, const std::string& what) {
  std::string pattern = TemporaryRoot() + "/" + stem + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return IoError("cannot create a " + what + " " + pattern + ": " + std::strerror(errno));
  }
  return pattern;
}

}  // namespace zb::cli
