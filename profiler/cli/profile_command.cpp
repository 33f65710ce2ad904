// SPDX-License-Identifier: Apache-2.0
// zb profile [--store DB] [--name NAME] [--pp P] [--layout loop|v] [--skip-iters N]
//            [--rules FILE] [--shard-dir DIR] ... -- CMD ARGS...
//
// Runs CMD with the injection library set up (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH) and
// ZBKIT_SHARD_DIR pointing at a shard directory; every process of the job that initializes CUDA
// or NVTX writes <dir>/rank<R>.zbshard (the environment is inherited by torchrun's and
// torch.multiprocessing's workers). When CMD exits, the shards are read, attributed and
// aggregated as `zb import` does. The exit code is always CMD's (128 + signal if it was killed):
// profiling problems are one warning line, never a different exit code, so that wrapping a job
// in `zb profile` cannot change what its scheduler sees.
//
// With --torch (CPU jobs, or wherever CUPTI is not wanted) the job is a PyTorch one and is
// profiled by torch.profiler instead: the PyTorch adapter's startup hook goes first on PYTHONPATH
// with ZBKIT_TORCH_PROFILE=<dir>, every rank writes <dir>/rank<R>.json.gz for a window of
// --torch-iters steps after --torch-skip, and the traces are analysed as `zb import <dir>
// --format chrome` does (PyTorch's PP:<action> ranges; the hook labels the schedules that
// record none).
//
// Either way, a PyTorch pipelining job's per-block costs are measured by the hook beside the
// traces (rank<R>.blocks.json, zbkit/profiler/block_costs.h; ZBKIT_BLOCKS_DIR under the injection
// library, in step --skip-iters).
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

#include "analysis.h"
#include "profiler_commands.h"
#include "zbkit/cli/child_process.h"
#include "zbkit/cli/output.h"
#include "zbkit/cli/stall_supervision.h"
#include "zbkit/cli/torch_hook.h"
#include "zbkit/profiler/import.h"
#include "zbkit/profiler/shard.h"

namespace zb::cli {
namespace {

namespace fs = std::filesystem;

bool FileExists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string Absolute(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) != nullptr) return resolved;
  return path;
}

// The injection library: ZBKIT_INJECT_LIBRARY if set (and only it), else the build tree's, else
// ../lib next to this zb. Empty with `why` set when there is none.
std::string FindInjectionLibrary(std::string& why) {
  if (const char* env = std::getenv("ZBKIT_INJECT_LIBRARY"); env != nullptr && *env != '\0') {
    if (FileExists(env)) return Absolute(env);
    why = std::string("ZBKIT_INJECT_LIBRARY=") + env + " does not exist";
    return {};
  }
#ifdef ZBKIT_INJECT_BUILD_PATH
  if (FileExists(ZBKIT_INJECT_BUILD_PATH)) return ZBKIT_INJECT_BUILD_PATH;
#endif
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path installed = self.parent_path() / ".." / "lib" / "libzbkit_inject.so";
    if (FileExists(installed.string())) return Absolute(installed.string());
  }
  why = "libzbkit_inject.so not found (built only with the CUDA Toolkit; set ZBKIT_INJECT_LIBRARY)";
  return {};
}

// A job name from the command: the script of `python train.py`, else the program's name.
std::string NameFromCommand(const std::vector<std::string>& command) {
  for (const std::string& arg : command) {
    if (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".py") == 0) {
      return fs::path(arg).stem().string();
    }
  }
  return fs::path(command[0]).filename().string();
}

bool HoldsChromeTraces(const std::string& dir) {
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (profiler::IsChromeTraceFileName(it->path().filename().string())) return true;
  }
  return false;
}

// Where the job's processes write their traces: --shard-dir (created; refused when it already
// holds an earlier run's traces) or a temporary directory, removed after the analysis.
struct ShardDirectory {
  std::string path;
  bool temporary = false;
};

Expected<ShardDirectory> PrepareShardDirectory(const po::variables_map& values) {
  if (values.count("shard-dir")) {
    const std::string dir = values["shard-dir"].as<std::string>();
    std::error_code error;
    fs::create_directories(dir, error);
    if (error) return IoError("--shard-dir " + dir + ": " + error.message());
    auto existing = profiler::ListShards(dir);
    if ((existing.ok() && !existing->empty()) || HoldsChromeTraces(dir)) {
      return UsageError("--shard-dir " + dir +
                        " already holds traces of an earlier run; remove them, or analyze them "
                        "with zb import " +
                        dir);
    }
    return ShardDirectory{Absolute(dir), false};
  }
  auto made = MakeTemporaryDirectory("zbkit-profile", "shard directory");
  if (!made.ok()) return made.status();
  return ShardDirectory{*made, true};
}

// What a job profiled through the injection library gets: the shard directory, the library for
// CUDA and NVTX, and for a PyTorch pipelining job the hook that measures its per-block costs in
// step `skip_iters` (nothing happens in a process that never runs a pipelining step; without the
// hook, stage totals only).
EnvironmentOverrides InjectionEnvironment(const std::string& library, const std::string& shard_dir,
                                          int skip_iters) {
  EnvironmentOverrides env = {{"ZBKIT_SHARD_DIR", shard_dir},
                              {"CUDA_INJECTION64_PATH", library},
                              {"NVTX_INJECTION64_PATH", library}};
  if (auto hook = TorchHookDirectory(); hook.ok()) {
    env.emplace_back("ZBKIT_BLOCKS_DIR", shard_dir);
    env.emplace_back("ZBKIT_PROFILE_SKIP", std::to_string(skip_iters));
    env.push_back(PythonPathWithHook(*hook));
  }
  return env;
}

// What the job needs to be profiled: torch.profiler through the hook (--torch), else the
// injection library; without either the command runs unprofiled, with a warning.
struct ProfilingSetup {
  EnvironmentOverrides env;
  bool injection_library = false;  // the job is profiled by libzbkit_inject
};
Expected<ProfilingSetup> ProfilingEnvironment(const po::variables_map& values,
                                              const AnalysisSettings& settings,
                                              const std::string& shard_dir, std::ostream& err) {
  const bool torch = values["torch"].as<bool>();
  const int torch_skip = values["torch-skip"].as<int>();
  const int torch_iters = values["torch-iters"].as<int>();
  if (torch_skip < 0 || torch_iters < 1) {
    return UsageError("--torch-skip must be >= 0 and --torch-iters >= 1");
  }
  if (torch) {
    auto hook = TorchHookDirectory();
    if (!hook.ok()) return hook.status();
    return ProfilingSetup{{{"ZBKIT_TORCH_PROFILE", shard_dir},
                           {"ZBKIT_PROFILE_SKIP", std::to_string(torch_skip)},
                           {"ZBKIT_PROFILE_ITERS", std::to_string(torch_iters)},
                           PythonPathWithHook(*hook)},
                          false};
  }
  std::string why;
  const std::string library = FindInjectionLibrary(why);
  if (!library.empty()) {
    return ProfilingSetup{
        InjectionEnvironment(library, shard_dir, settings.analyze.costs.skip_iters), true};
  }
  err << "zb profile: warning: " << why << "; running the command without profiling\n";
  err.flush();
  return ProfilingSetup{{{"ZBKIT_SHARD_DIR", shard_dir}}, false};
}

}  // namespace

int RunProfileCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command_name = "profile";
  const std::string usage = "[options] -- CMD ARGS...";
  const auto [own_args, command] = SplitAtSeparator(args);
  po::options_description options("options");
  AddAnalysisOptions(options);
  options.add_options()("shard-dir", po::value<std::string>(),
                        "keep the shards in this directory (default: a temporary one, removed)")(
      "torch", po::bool_switch(),
      "profile a PyTorch job with torch.profiler (CPU jobs) instead of the injection library")(
      "torch-skip", po::value<int>()->default_value(1), "with --torch: steps before the window")(
      "torch-iters", po::value<int>()->default_value(3), "with --torch: steps in the window");
  AddStallOptions(options);
  po::variables_map values;
  int exit_code = 0;
  const std::string epilogue =
      std::string(
          "examples:\n"
          "  zb profile --store zbkit.db -- torchrun --nproc-per-node 4 train.py\n"
          "      a CUDA job: NVTX ranges and kernels through the injection library\n"
          "  zb profile --torch --pp 2 --json -- torchrun --nproc-per-node 2 train.py\n"
          "      a CPU PyTorch job: torch.profiler through zbkit's hook; with --json the\n"
          "      job's own output goes to stderr\n\n") +
      kRangeNamesHelp;
  if (!ParseCommandLine(command_name, usage, own_args, options, {}, values, out, err, exit_code,
                        epilogue)) {
    return exit_code;
  }
  if (command.empty()) {
    return ReportError(err, command_name,
                       UsageError("give the command to profile after --: zb profile " + usage));
  }
  auto settings = ReadAnalysisSettings(values);
  if (!settings.ok()) return ReportError(err, command_name, settings.status());

  EnvironmentOverrides stall_env;
  auto supervision = StallSupervision::Start(command_name, values, stall_env);
  if (!supervision.ok()) return ReportError(err, command_name, supervision.status());
  auto shards = PrepareShardDirectory(values);
  if (!shards.ok()) return ReportError(err, command_name, shards.status());
  const std::string shard_dir = shards->path;
  const bool temporary = shards->temporary;

  const bool torch = values["torch"].as<bool>();
  auto job_env = ProfilingEnvironment(values, *settings, shard_dir, err);
  if (!job_env.ok()) return ReportError(err, command_name, job_env.status());
  EnvironmentOverrides env = std::move(job_env->env);
  const bool profiled_by_library = job_env->injection_library;
  env.insert(env.end(), stall_env.begin(), stall_env.end());

  int killed_by = 0;
  // With --json, zb's stdout is the report alone: the job's own output goes to stderr.
  const int child_code = RunChildCommand(command_name, command, env, "", &killed_by, settings->json,
                                         (*supervision)->Watch(err));
  (*supervision)->Finish(child_code, err);
  if (killed_by != 0) {
    // Said first: the report below (if any) covers a run cut short.
    err << "zb profile: the job was killed by " << SignalName(killed_by) << " (exit code "
        << child_code << "); what it recorded until then is analyzed below\n";
    err.flush();
  }

  // From here on the command's exit code is what zb returns.
  std::vector<std::string> skipped;
  auto traces = torch ? profiler::ImportChromeTraceDirectory(shard_dir, skipped)
                      : profiler::ReadShardDirectory(shard_dir, skipped);
  // A temporary directory goes once the analysis has read what it needs (the per-block files).
  struct RemoveWhenDone {
    std::string path;
    ~RemoveWhenDone() {
      std::error_code error;
      if (!path.empty()) fs::remove_all(path, error);
    }
  } remove_when_done{temporary ? shard_dir : std::string()};
  AnalysisInput input;
  input.source = temporary ? JoinCommand(command) : shard_dir;
  input.run_kind = RunKind::kProfile;
  input.command = JoinCommand(command);
  input.exit_code = child_code;
  input.default_name = NameFromCommand(command);
  input.block_costs_dirs = {shard_dir};
  if (!traces.ok() || traces->empty()) {
    std::string why;
    if (torch) {
      why =
          "nothing was recorded (no process of the command ran torch.distributed.pipelining "
          "steps through the torch hook" +
          (traces.ok() ? "" : ": " + traces.status().message()) + ")";
    } else if (!profiled_by_library) {
      why = "nothing was recorded (no injection library)";
    } else {
      why = "nothing was recorded (no process of the command initialized CUDA or NVTX" +
            (skipped.empty() ? "" : "; unreadable shards: " + skipped[0]) + ")";
    }
    // Without the injection library a warning has said so already: the line is the report.
    const bool already_warned = !torch && !profiled_by_library;
    ReportNothingMeasured(input, *settings, why, already_warned, out, err);
    return child_code;
  }
  input.traces = std::move(*traces);
  for (const std::string& problem : skipped) {
    err << "zb profile: warning: skipped shard: " << problem << "\n";
  }
  bool reported = false;
  Status status = AnalyzeAndReport(input, *settings, out, &reported);
  if (!status.ok() && reported) err << "zb profile: warning: " << status.message() << "\n";
  if (!status.ok() && !reported) {
    ReportNothingMeasured(input, *settings, status.message(), false, out, err);
  }
  return child_code;
}

}  // namespace zb::cli
