// SPDX-License-Identifier: Apache-2.0
// `zb`: the zbkit command-line front end, the top layer: it includes the commands and only
// dispatches; each subcommand lives with its component (tuner/cli: tune, partition, export, show,
// list, bench;
// profiler/cli: profile, import, costs; adapters/cli: replay, demo, rehearse; doctor/cli:
// doctor), which build on the kit below them (cli/kit: what every command shares).
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "adapter_commands.h"
#include "doctor_commands.h"
#include "profiler_commands.h"
#include "tuner_commands.h"
#include "zbkit/cli/options.h"

namespace {

struct Subcommand {
  const char* name;
  zb::cli::CommandFunction run;
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"tune", zb::cli::RunTuneCommand,
     "pick the best schedule for a cost profile under a memory cap"},
    {"export", zb::cli::RunExportCommand,
     "write a stored schedule as zb-schedule/1 JSON or PyTorch CSV"},
    {"partition", zb::cli::RunPartitionCommand,
     "choose the layer split with the schedule, from per-layer costs (zb-layers/1)"},
    {"show", zb::cli::RunShowCommand, "print a schedule's per-rank timeline and summary"},
    {"list", zb::cli::RunListCommand, "list the schedules a store holds"},
    {"bench", zb::cli::RunBenchCommand, "recompute the paper's Table 5 (zb bench paper)"},
    {"profile", zb::cli::RunProfileCommand,
     "run a job under the profiler and print its per-stage costs (zb profile -- CMD ...)"},
    {"import", zb::cli::RunImportCommand,
     "per-stage costs from an nsys SQLite export, a Chrome/Kineto trace or kept shards"},
    {"costs", zb::cli::RunCostsCommand, "export (zb-costs/1) or list stored cost profiles"},
    {"trace", zb::cli::RunTraceCommand,
     "a schedule or a measured run out to Perfetto (Chrome trace) or HTA (Kineto per rank)"},
    {"replay", zb::cli::RunReplayCommand,
     "run a torch.distributed.pipelining job with a zbkit schedule (zb replay ... -- CMD ...)"},
    {"demo", zb::cli::RunDemoCommand,
     "profile -> tune -> replay -> measure the bundled PyTorch job against torch's schedules"},
    {"rehearse", zb::cli::RunRehearseCommand,
     "run schedules on real ranks with emulated compute: measured against predicted"},
    {"doctor", zb::cli::RunDoctorCommand,
     "name the rank, op and chain of waits where a job stalled or failed (zb doctor RUN_DIR)"},
};

void PrintUsage(std::ostream& out) {
  out << "usage: zb <command> [options]   (zb <command> --help for its options)\n\ncommands:\n";
  for (const Subcommand& sub : kSubcommands) {
    out << "  " << sub.name << std::string(10 - std::strlen(sub.name), ' ') << sub.summary << "\n";
  }
  out << "\nexit codes: 0 success, 2 usage error, 1 any other failure\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(std::cerr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(std::cout);
    return 0;
  }
  if (name == "--version") {
    std::cout << "zb " << ZBKIT_VERSION << "\n";
    return 0;
  }
  for (const Subcommand& sub : kSubcommands) {
    if (name == sub.name)
      return sub.run(zb::cli::Args(argv + 2, argv + argc), std::cout, std::cerr);
  }
  std::cerr << "zb: unknown command \"" << name << "\" (see zb --help)\n";
  return 2;
}
