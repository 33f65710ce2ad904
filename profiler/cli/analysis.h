// SPDX-License-Identifier: Apache-2.0
// What `zb profile` and `zb import` share once they hold raw traces: the options that steer
// attribution and aggregation, and the report of profiler::Analyze's result (text or JSON). The
// work itself (attribution, aggregation, storing) is the library's: zbkit/profiler/analyze.h.
#ifndef ZBKIT_PROFILER_CLI_ANALYSIS_H_
#define ZBKIT_PROFILER_CLI_ANALYSIS_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "zbkit/cli/options.h"
#include "zbkit/profiler/analyze.h"
#include "zbkit/profiler/trace.h"

namespace zb::cli {

struct AnalysisSettings {
  profiler::AnalyzeSettings analyze;
  std::optional<std::string> store;
  std::string cluster = "local";
  std::optional<std::string> name;
  std::optional<std::string> costs_out;   // write zb-costs/1 here too
  std::optional<std::string> layers_out;  // write the per-block costs (zb-layers/1) here
  bool json = false;
  bool list_ops = false;  // per-op table even when long
};

// The end of `zb profile --help` and `zb import --help`: the range names the profiler knows
// (docs/range-names.md says the rest).
inline constexpr const char* kRangeNamesHelp =
    "range names recognized (docs/range-names.md):\n"
    "  zb:<F|B|W|BW>:s<stage>:mb<mb>  zbkit's own: an op of a stage and microbatch;\n"
    "                                  zb:iter:<n> a training iteration\n"
    "  PP:<stage><F|I|W|B><mb>        torch.distributed.pipelining's (I: input gradient,\n"
    "                                  B: full backward); ProfilerStep#<n> an iteration\n"
    "  <F|B|W|BW><mb>.<chunk>.<seq>   the zero-bubble Megatron fork's NVTX ranges;\n"
    "                                  iter_<rank>_<n> an iteration\n"
    "  anything else: --rules FILE, e.g. [{\"regex\": \"^## forward ##$\", \"kind\": \"F\"},\n"
    "                                     {\"regex\": \"^## backward ##$\", \"kind\": \"BW\"}]\n";

void AddAnalysisOptions(po::options_description& options);
Expected<AnalysisSettings> ReadAnalysisSettings(const po::variables_map& values);

struct AnalysisInput {
  std::vector<profiler::RawTrace> traces;
  std::string source;                    // shown in the report: the file, or the shard directory
  RunKind run_kind = RunKind::kProfile;  // kProfile or kImport
  std::string command;                   // the profiled command line or the imported file
  std::optional<int> exit_code;
  std::string default_name;  // job / profile name when --name is not given
  // Directories that may hold the PyTorch hook's rank<R>.blocks.json (block_costs.h).
  std::vector<std::string> block_costs_dirs;
};

// A job name from a path: its base name without .json/.gz/.sqlite/.zbshard.
std::string DefaultNameFor(const std::string& path);

// profiler::Analyze, then --out, the store (profiler::StoreAnalysis) when asked, and the table
// (or JSON) to `out`. The error when nothing was recognized starts with profiler::kNoPipelineOps.
// `reported` (if given) says whether the report went to `out`: an error after it (--layers-out)
// leaves the report standing.
Status AnalyzeAndReport(const AnalysisInput& input, const AnalysisSettings& settings,
                        std::ostream& out, bool* reported = nullptr);

// What a run that gave no profile reports: the one line `why` to `err` as a warning (to `out`
// instead when a warning already said why, as the report), and with --json the
// zb-profile-report/1 document with no ranks, stages or ops and "nothing" set to `why` to `out`,
// so that a script reading the report always gets one (docs/formats.md).
void ReportNothingMeasured(const AnalysisInput& input, const AnalysisSettings& settings,
                           const std::string& why, bool already_warned, std::ostream& out,
                           std::ostream& err);

}  // namespace zb::cli

#endif  // ZBKIT_PROFILER_CLI_ANALYSIS_H_
