// SPDX-License-Identifier: Apache-2.0
// The runtime's `zb` subcommands: doctor.
#ifndef ZBKIT_DOCTOR_CLI_DOCTOR_COMMANDS_H_
#define ZBKIT_DOCTOR_CLI_DOCTOR_COMMANDS_H_

#include <ostream>

#include "zbkit/cli/options.h"

namespace zb::cli {

// zb doctor RUN_DIR... [--json] [--stall-timeout S]
int RunDoctorCommand(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace zb::cli

#endif  // ZBKIT_DOCTOR_CLI_DOCTOR_COMMANDS_H_
