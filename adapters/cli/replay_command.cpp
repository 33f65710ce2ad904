// SPDX-License-Identifier: Apache-2.0
// zb replay (FILE | --store DB --schedule ID) [--shard-dir D] -- CMD ARGS...
//
// The job's processes find the schedule through the environment, which torchrun and
// torch.multiprocessing pass on to their workers:
//   ZBKIT_SCHEDULE      the exported CSV (PyTorch >= 2.6 dialect, compute only; PyTorch adds the
//                       communication when it loads it)
//   ZBKIT_SCHEDULE_NAME what the user named (FILE, or "DB schedule ID"), for the shim's messages
//   PYTHONPATH          the hook directory first: its sitecustomize installs zbkit.pipelining
//   ZBKIT_ZB_BINARY     this zb, for the shim's own conversions
//   ZBKIT_CHECKPOINTING_PLAN  with --checkpointing-plan: the zb-split/1 whose per-block modes the
//                       shim applies before step 1 (docs/memory-plan.md §5)
//   ZBKIT_TORCH_PROFILE, ZBKIT_SHARD_DIR   with --shard-dir: where each rank writes its trace
//   ZBKIT_PROGRESS_DIR  where each rank keeps its progress record, which zb replay watches for
//                       stalls (--run-dir, --stall-timeout, --on-stall; docs/stalls.md)
// The exit code is CMD's (128 + signal if it was killed), so that a scheduler sees the job's.
// Only problems before CMD starts are zb's own: 2 for usage, 1 otherwise.
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "adapter_commands.h"
#include "zbkit/cli/child_process.h"
#include "zbkit/cli/options.h"
#include "zbkit/cli/output.h"
#include "zbkit/cli/schedule_source.h"
#include "zbkit/cli/stall_supervision.h"
#include "zbkit/cli/torch_hook.h"
#include "zbkit/tuner/torch_export.h"

namespace zb::cli {

namespace fs = std::filesystem;

int RunReplayCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command_name = "replay";
  const std::string usage =
      "(FILE | --store DB --schedule ID) [--shard-dir D] [--run-dir D] [--stall-timeout S] "
      "[--on-stall report|kill] -- CMD ARGS...";
  const auto [own_args, command] = SplitAtSeparator(args);
  po::options_description options("options");
  po::positional_options_description positional;
  AddScheduleSourceOptions(options, positional);
  options.add_options()("shard-dir", po::value<std::string>(),
                        "also record the run: each rank writes its PyTorch profiler trace "
                        "(rank<R>.json.gz) here, for zb import D --format chrome");
  options.add_options()("checkpointing-plan", po::value<std::string>(),
                        "a zb-split/1 with a memory plan (zb partition --checkpointing ... "
                        "--split-out): each block checkpointed as it says, before step 1");
  AddStallOptions(options);
  po::variables_map values;
  int exit_code = 0;
  const std::string epilogue =
      "The script runs unmodified: zbkit's shim (put on the job's PYTHONPATH) loads the schedule\n"
      "into the pipelining schedule object the script builds, on every rank. That object must\n"
      "have the schedule's layout: a loop schedule with one stage per rank needs a single-stage\n"
      "class (Schedule1F1B, ScheduleGPipe), one with V stages per rank a multi-stage class built\n"
      "with V stages (ScheduleInterleaved1F1B, ...), a V placement ScheduleZBVZeroBubble or\n"
      "ScheduleDualPipeV; a schedule that does not fit is refused on every rank, naming both\n"
      "sides. The shim finds this zb through ZBKIT_ZB_BINARY, which zb replay sets.\n\n"
      "examples:\n"
      "  zb replay tuned.json -- torchrun --nproc-per-node 2 train.py\n"
      "      run train.py with the order in tuned.json (zb tune --out)\n"
      "  zb replay --store zb.db --schedule 3 --shard-dir run1 -- torchrun --nproc-per-node 2 "
      "train.py\n"
      "      a stored schedule, recording each rank's trace for zb import run1 --format chrome\n"
      "  zb replay tuned.json --stall-timeout 60 --on-stall kill -- torchrun ... train.py\n"
      "      end the job when no rank makes progress for 60 s, after naming the culprit\n";
  if (!ParseCommandLine(command_name, usage, own_args, options, positional, values, out, err,
                        exit_code, epilogue)) {
    return exit_code;
  }
  if (command.empty()) {
    return ReportError(err, command_name,
                       UsageError("give the job to run after --: zb replay " + usage));
  }
  auto schedule = LoadScheduleFromArguments(values);
  if (!schedule.ok()) return ReportError(err, command_name, schedule.status());
  auto csv = tuner::ExportTorchCsv(*schedule, tuner::TorchCsvFormat::kComputeOnly);
  if (!csv.ok()) {
    return ReportError(err, command_name, csv.status().WithContext(ScheduleSourceName(values)));
  }
  auto hook = TorchHookDirectory();
  if (!hook.ok()) return ReportError(err, command_name, hook.status());

  EnvironmentOverrides env;
  auto supervision = StallSupervision::Start(command_name, values, env);
  if (!supervision.ok()) return ReportError(err, command_name, supervision.status());
  if (values.count("shard-dir")) {
    const std::string dir = values["shard-dir"].as<std::string>();
    std::error_code error;
    fs::create_directories(dir, error);
    if (error) {
      return ReportError(err, command_name, IoError("--shard-dir " + dir + ": " + error.message()));
    }
    const std::string absolute = fs::absolute(dir, error).string();
    env.emplace_back("ZBKIT_TORCH_PROFILE", absolute);
    env.emplace_back("ZBKIT_SHARD_DIR", absolute);
  }

  std::string path = TemporaryRoot() + "/zbkit-replay-XXXXXX.csv";
  const int fd = mkstemps(path.data(), 4);
  if (fd < 0) {
    return ReportError(err, command_name,
                       IoError("cannot create " + path + ": " + std::strerror(errno)));
  }
  const std::string& text = *csv;
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written) {
    unlink(path.c_str());
    return ReportError(err, command_name, IoError("cannot write " + path));
  }
  env.emplace_back("ZBKIT_SCHEDULE", path);
  // The shim names the schedule the user gave, not the temporary CSV made from it.
  env.emplace_back("ZBKIT_SCHEDULE_NAME", ScheduleSourceName(values));
  env.push_back(PythonPathWithHook(*hook));
  env.emplace_back("ZBKIT_ZB_BINARY", SelfPath());
  if (values.count("checkpointing-plan") > 0) {
    const std::string plan = values["checkpointing-plan"].as<std::string>();
    std::error_code error;
    if (!fs::is_regular_file(plan, error)) {
      unlink(path.c_str());
      return ReportError(err, command_name,
                         IoError("--checkpointing-plan " + plan + ": no such file"));
    }
    env.emplace_back("ZBKIT_CHECKPOINTING_PLAN", fs::absolute(plan, error).string());
  }
  const int code =
      RunChildCommand(command_name, command, env, "", nullptr, false, (*supervision)->Watch(err));
  unlink(path.c_str());
  (*supervision)->Finish(code, err);
  return code;
}

}  // namespace zb::cli
