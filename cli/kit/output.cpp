// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/output.h"

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

}  // namespace zb::cli
