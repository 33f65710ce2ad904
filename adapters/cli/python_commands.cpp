// SPDX-License-Identifier: Apache-2.0
// zb demo [--store DB] [--dir DIR] [--iters K] [--rounds R] [--mem-limit L|auto] [--quick] [--json]
// zb rehearse --costs FILE -m M --mem-limit L [--schedules LIST] [--iters K] [--store DB] [--json]
// zb rehearse --layers FILE -p P -m M [--layout L] [--mem-limit SIZE|none] [--iters K] [--json]
//
// Both orchestrate Python jobs, so they live in Python: the modules zbkit_harness.demo and
// zbkit_harness.rehearse, or zbkit_harness.rehearse_split for the splits of a per-block profile
// (adapters/pytorch/zbkit_harness/demo.py, rehearse.py and rehearse_split.py say what they do).
// These commands run them with the project's interpreter (ZBKIT_PYTHON, else the .venv
// scripts/setup.sh made, else python3) and tell them where this build's parts are: ZBKIT_ZB_BINARY
// (this zb), ZBKIT_ZBRT_LIBRARY, ZBKIT_ZBVIEW_BINARY (when built) and ZBKIT_TORCH_EXAMPLES; the
// package goes first on PYTHONPATH. The module parses the options; its exit code (0, 1 failure, 2
// usage) is the command's.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "adapter_commands.h"
#include "zbkit/cli/child_process.h"
#include "zbkit/cli/options.h"
#include "zbkit/cli/torch_hook.h"

namespace zb::cli {
namespace {

namespace fs = std::filesystem;

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::string Python() {
  std::string python = EnvOr("ZBKIT_PYTHON", "");
#ifdef ZBKIT_VENV_PYTHON
  if (python.empty() && fs::exists(ZBKIT_VENV_PYTHON)) python = ZBKIT_VENV_PYTHON;
#endif
  return python.empty() ? "python3" : python;
}

// Runs `python -m module args...` for `zb command_name`.
int RunPythonModule(const std::string& command_name, const std::string& module, const Args& args,
                    std::ostream& out, std::ostream& err) {
  // The hook directory is adapters/pytorch/zbkit/_hook: the package root is two levels up.
  auto hook = TorchHookDirectory();
  if (!hook.ok()) return ReportError(err, command_name, hook.status());
  const fs::path package_root = fs::path(*hook).parent_path().parent_path();
  EnvironmentOverrides env = {
      {"ZBKIT_ZB_BINARY", SelfPath()},
      {"ZBKIT_PYTHON", Python()},
      {"ZBKIT_TORCH_EXAMPLES", EnvOr("ZBKIT_TORCH_EXAMPLES", (package_root / "examples").string())},
      {"PYTHONPATH", package_root.string() +
                         (EnvOr("PYTHONPATH", "").empty() ? "" : ":" + EnvOr("PYTHONPATH", ""))},
  };
#ifdef ZBKIT_ZBRT_BUILD_PATH
  env.emplace_back("ZBKIT_ZBRT_LIBRARY", EnvOr("ZBKIT_ZBRT_LIBRARY", ZBKIT_ZBRT_BUILD_PATH));
#endif
#ifdef ZBKIT_ZBVIEW_BUILD_PATH
  if (fs::exists(ZBKIT_ZBVIEW_BUILD_PATH)) {
    env.emplace_back("ZBKIT_ZBVIEW_BINARY", EnvOr("ZBKIT_ZBVIEW_BINARY", ZBKIT_ZBVIEW_BUILD_PATH));
  }
#endif
  std::vector<std::string> command = {Python(), "-m", module};
  command.insert(command.end(), args.begin(), args.end());
  out.flush();
  err.flush();
  return RunChildCommand(command_name, command, env);
}

}  // namespace

int RunDemoCommand(const Args& args, std::ostream& out, std::ostream& err) {
  return RunPythonModule("demo", "zbkit_harness.demo", args, out, err);
}

int RunRehearseCommand(const Args& args, std::ostream& out, std::ostream& err) {
  for (const std::string& arg : args) {
    if (arg == "--layers" || arg.rfind("--layers=", 0) == 0) {
      return RunPythonModule("rehearse", "zbkit_harness.rehearse_split", args, out, err);
    }
  }
  return RunPythonModule("rehearse", "zbkit_harness.rehearse", args, out, err);
}

}  // namespace zb::cli
