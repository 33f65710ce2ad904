// SPDX-License-Identifier: Apache-2.0
// Where zbkit's PyTorch adapter lives, for the subcommands that start torch jobs (`zb replay`,
// `zb profile --torch`, `zb demo`): the startup-hook directory whose sitecustomize.py installs the
// shim (adapters/pytorch/zbkit/_hook), and the environment that activates it in every process of
// a job (torchrun's workers inherit it).
#ifndef ZBKIT_CLI_TORCH_HOOK_H_
#define ZBKIT_CLI_TORCH_HOOK_H_

#include <string>
#include <utility>

#include "zbkit/schemas/status.h"

namespace zb::cli {

// ZBKIT_TORCH_HOOK_DIR when set, else the source tree's adapters/pytorch/zbkit/_hook (compiled
// in). kNotFound naming the variable to set when neither is a directory.
Expected<std::string> TorchHookDirectory();

// The PYTHONPATH override that puts `hook_dir` first, ahead of the job's own PYTHONPATH.
std::pair<std::string, std::string> PythonPathWithHook(const std::string& hook_dir);

}  // namespace zb::cli

#endif  // ZBKIT_CLI_TORCH_HOOK_H_
