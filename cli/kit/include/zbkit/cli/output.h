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

// Where zb makes its temporary files and directories: $TMPDIR, else /tmp.
std::string TemporaryRoot();

// A fresh directory <TemporaryRoot()>/<stem>-XXXXXX; IoError "cannot create a <what> ..." when
// it cannot be made.
Expected<std::string> MakeTemporaryDirectory(const std::string& stem, const std::string& what);

}  // namespace zb::cli

#endif  // ZBKIT_CLI_OUTPUT_H_
