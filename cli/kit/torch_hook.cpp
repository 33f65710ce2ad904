// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/torch_hook.h"

#include <stdlib.h>
#include <sys/stat.h>

namespace zb::cli {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace

Expected<std::string> TorchHookDirectory() {
  if (const char* env = std::getenv("ZBKIT_TORCH_HOOK_DIR"); env != nullptr && *env != '\0') {
    if (IsDirectory(env)) return std::string(env);
    return NotFound(std::string("ZBKIT_TORCH_HOOK_DIR=") + env + " is not a directory");
  }
#ifdef ZBKIT_TORCH_HOOK_BUILD_DIR
  if (IsDirectory(ZBKIT_TORCH_HOOK_BUILD_DIR)) return std::string(ZBKIT_TORCH_HOOK_BUILD_DIR);
#endif
  return NotFound(
      "the PyTorch shim (adapters/pytorch/zbkit/_hook) was not found; set ZBKIT_TORCH_HOOK_DIR");
}

std::pair<std::string, std::string> PythonPathWithHook(const std::string& hook_dir) {
  const char* python_path = std::getenv("PYTHONPATH");
  return {"PYTHONPATH",
          hook_dir + (python_path && *python_path ? std::string(":") + python_path : "")};
}

}  // namespace zb::cli
