// SPDX-License-Identifier: Apache-2.0
// Where a command's file output goes: "-" is the command's standard output, anything else a file
// written atomically (a reader never sees half a file, a failed write leaves the old one).
#ifndef ZBKIT_CLI_OUTPUT_H_
#define ZBKIT_CLI_OUTPUT_H_

#include <ostream>
#include <string>

#include "zbkit/schemas/status.h"

namespace zb::cli {

// Writes `content` to `out` when `destination` is "-", else atomically to the file.
Status WriteToFileOrStdout(const std::string& destination, const std::string& content,
                           std::ostream& out);

}  // namespace zb::cli

#endif  // ZBKIT_CLI_OUTPUT_H_
