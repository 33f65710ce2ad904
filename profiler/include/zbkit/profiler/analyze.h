// SPDX-License-Identifier: Apache-2.0
// The profiling use case as library calls, for `zb profile` / `zb import` and for in-process
// callers (the runtime shim, the Python adapters): raw traces (from shards, an nsys export or a
// Chrome trace) and the attribution and aggregation settings in; the per-stage cost profile, the
// measured timeline, every attributed op and the notes out, as data. Storing the result (the run,
// the cost profile, the measured timeline) is a separate call. Nothing is printed.
#ifndef ZBKIT_PROFILER_ANALYZE_H_
#define ZBKIT_PROFILER_ANALYZE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/profiler/attribution.h"
#include "zbkit/profiler/block_costs.h"
#include "zbkit/profiler/costs.h"
#include "zbkit/profiler/trace.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/types.h"

namespace zb::profiler {

// The exact first words of Analyze's error when no range matched a rule (tests and scripts key
// on it).
inline constexpr const char* kNoPipelineOps = "no pipeline ops recognized";

struct AnalyzeSettings {
  AttributionOptions attribution;  // pipeline ranks, chunk placement, cross-thread kernels
  CostOptions costs;               // warm-up iterations to drop, model dims for memory
  RuleSet rules;                   // user rules on top of the built-in range names
};

struct Analysis {
  std::string source;       // what was analyzed (a file, a shard directory, a command line)
  size_t processes = 0;     // traces analyzed
  size_t ranges = 0;        // ranges in them
  Attribution attribution;  // .ops: one row per attributed op; kernel and per-family counts
  CostReport report;        // per-stage / per-rank spreads, hops, .timeline (measured), .notes
  CostProfile costs;        // report.ToCostProfile(): the zb-costs/1 profile `zb tune` reads
  // Per-block costs measured beside the traces (block_costs.h), when the caller read them:
  // stored with the profile.
  std::optional<LayerProfile> layers;
};

// Attributes the traces' ranges and kernels to pipeline ops and aggregates them. kInvalidInput
// starting with kNoPipelineOps when no range was recognized, or from the aggregation (prefixed
// with `source`).
Expected<Analysis> Analyze(const std::vector<RawTrace>& traces, const std::string& source,
                           const AnalyzeSettings& settings);

// Where and as what an analysis is recorded.
struct AnalysisStoreTarget {
  std::string path;
  std::string cluster = "local";
  std::string name;  // the job's and the cost profile's name
};
struct AnalysisRun {
  RunKind kind = RunKind::kProfile;  // kProfile or kImport
  std::string command;               // the profiled command line, or the imported file
  std::optional<int> exit_code;      // the profiled command's
};
struct StoredAnalysis {
  int64_t run_id = 0;
  int64_t profile_id = 0;
  int64_t timeline_id = 0;
};

// Records the run, the cost profile (with its spreads and per-block costs, linked to the run) and
// the measured timeline in the store (created when missing), in one transaction: on any error
// none of them (nor the cluster or job) is stored.
Expected<StoredAnalysis> StoreAnalysis(const Analysis& analysis, const AnalysisStoreTarget& target,
                                       const AnalysisRun& run);

// Reads every shard of a directory; an unreadable shard is skipped and its error added to
// `skipped`. Fails only when the directory cannot be listed.
Expected<std::vector<RawTrace>> ReadShardDirectory(const std::string& dir,
                                                   std::vector<std::string>& skipped);

// A directory as `zb import DIR` reads it without --format: its *.zbshard files when it has any,
// else its Chrome/Kineto traces (*.json, *.json.gz: torch.profiler's tensorboard_trace_handler,
// the shim's profiling window, `zb trace --format kineto`). A directory with neither fails with
// kNoPipelineOps and what it does hold (empty, or its other files by name).
Expected<std::vector<RawTrace>> ReadTraceDirectory(const std::string& dir,
                                                   std::vector<std::string>& skipped);

}  // namespace zb::profiler

#endif  // ZBKIT_PROFILER_ANALYZE_H_
