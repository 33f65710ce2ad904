// SPDX-License-Identifier: Apache-2.0
#include "zbkit/profiler/analyze.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "zbkit/profiler/import.h"
#include "zbkit/profiler/shard.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/validate.h"

namespace zb::profiler {
namespace {

// A torch.distributed.pipelining job profiled with torch.profiler alone: its ranks send and
// receive point to point (c10d::send / c10d::recv_) but no range is one of torch's `PP:<action>`
// labels, which torch 2.13 records only in _PipelineScheduleRuntime, not in the older loop that
// Schedule1F1B and ScheduleGPipe run (docs/range-names.md §2). Empty when the traces are not that.
std::string UnlabelledTorchPipelining(const std::vector<RawTrace>& traces) {
  bool point_to_point = false;
  for (const RawTrace& trace : traces) {
    for (const TraceRange& range : trace.ranges) {
      if (range.name.rfind("PP:", 0) == 0) return "";
      point_to_point = point_to_point || range.name == "c10d::send" || range.name == "c10d::recv_";
    }
  }
  if (!point_to_point) return "";
  return "point-to-point transfers (c10d::send / c10d::recv_) but no PP:<action> range: torch's "
         "Schedule1F1B and ScheduleGPipe run a loop that records none (torch 2.13); profile the "
         "job with `zb profile --torch -- CMD` (which labels every action), or give --rules FILE "
         "to map its own range names to F/B/W/BW";
}

// Why nothing was recognized, in one line: no traces, traces without ranges, or ranges whose
// names the rules do not know; then the most frequent names, which are what a --rules file maps
// (docs/range-names.md).
Status NothingRecognized(const std::vector<RawTrace>& traces, const Analysis& analysis) {
  std::string message = std::string(kNoPipelineOps) + " in " + analysis.source + ": ";
  if (analysis.processes == 0) return InvalidInput(message + "it holds no traces");
  message += std::to_string(analysis.processes) + " process(es), " +
             std::to_string(analysis.ranges) + " ranges";
  if (analysis.ranges == 0) {
    return InvalidInput(message + ", none with a name to map (was the job's profiler on?)");
  }
  // The names a job gave its own ranges (PyTorch's record_function / user annotations) are what
  // rules are written for; operator ranges (aten::*, cpu_op) only when there are no others.
  auto annotation = [](const TraceRange& range) { return range.domain == "user_annotation"; };
  bool annotated = false;
  for (const RawTrace& trace : traces) {
    for (const TraceRange& range : trace.ranges)
      annotated = annotated || annotation(range);
  }
  std::map<std::string, int64_t> count_by_name;
  for (const RawTrace& trace : traces) {
    for (const TraceRange& range : trace.ranges) {
      if (!annotated || annotation(range)) ++count_by_name[range.name];
    }
  }
  if (const std::string torch = UnlabelledTorchPipelining(traces); !torch.empty()) {
    return InvalidInput(message + "; " + torch);
  }
  std::vector<std::pair<int64_t, std::string>> frequent;
  for (const auto& [name, count] : count_by_name)
    frequent.emplace_back(-count, name);
  std::sort(frequent.begin(), frequent.end());
  constexpr size_t kShown = 5;
  message += annotated ? "; most frequent annotations:" : "; most frequent names:";
  for (size_t i = 0; i < std::min(kShown, frequent.size()); ++i) {
    std::string name = frequent[i].second;
    if (name.size() > 60) name = name.substr(0, 57) + "...";
    message += std::string(i == 0 ? " " : ", ") + "\"" + name + "\" x" +
               std::to_string(-frequent[i].first);
  }
  return InvalidInput(message + "; give --rules FILE to map range names to F/B/W/BW");
}

}  // namespace

Expected<Analysis> Analyze(const std::vector<RawTrace>& traces, const std::string& source,
                           const AnalyzeSettings& settings) {
  Analysis analysis;
  analysis.source = source;
  analysis.processes = traces.size();
  for (const RawTrace& trace : traces)
    analysis.ranges += trace.ranges.size();
  ZB_ASSIGN_OR_RETURN(analysis.attribution,
                      Attribute(traces, settings.rules, settings.attribution));
  if (analysis.attribution.ops.empty()) return NothingRecognized(traces, analysis);
  auto built = BuildCostReport(analysis.attribution, settings.costs);
  if (!built.ok()) return built.status().WithContext(source);
  analysis.report = std::move(built).value();
  analysis.costs = analysis.report.ToCostProfile();
  // Records a process could not keep (the injection library's rings or CUPTI's buffers full):
  // the costs stand on what was kept, and the user is told where.
  for (const RawTrace& trace : traces) {
    if (trace.dropped_records <= 0) continue;
    const std::string who = trace.process.rank >= 0 ? "rank " + std::to_string(trace.process.rank)
                                                    : "pid " + std::to_string(trace.process.pid);
    analysis.report.notes.push_back(
        who + " lost " + std::to_string(trace.dropped_records) +
        " records (the profiler's buffers were full): the costs come from what was kept");
  }
  return analysis;
}

namespace {

// Refuses, before anything is written, a profile the store would not keep, saying which stages
// measured no forward (a trace set that holds only some ranks of a pipeline).
Status CheckStorable(const Analysis& analysis) {
  const Status valid = ValidateCostProfile(analysis.costs);
  if (valid.ok()) return valid;
  std::string unmeasured;
  int count = 0;
  for (const StageStats& stats : analysis.report.stages) {
    if (stats.Of(OpKind::kF).samples > 0) continue;
    if (count++ < 8) unmeasured += (unmeasured.empty() ? "" : ", ") + std::to_string(stats.stage);
  }
  std::string why = valid.message();
  if (count > 0) {
    why += " (no forward measured on stage(s) " + unmeasured + (count > 8 ? ", ..." : "") + " of " +
           std::to_string(analysis.report.num_stages) +
           ": give every rank's trace, or --pp/--rules that place the ops)";
  }
  return InvalidInput("nothing stored: the measured costs are not a profile zbkit can use: " + why);
}

}  // namespace

Expected<StoredAnalysis> StoreAnalysis(const Analysis& analysis, const AnalysisStoreTarget& target,
                                       const AnalysisRun& run) {
  ZB_RETURN_IF_ERROR(CheckStorable(analysis));
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(target.path));
  StoredAnalysis stored;
  // One write: a run without its profile or timeline (or a job without either) is never left.
  ZB_RETURN_IF_ERROR(store.WriteAtomically("store analysis", [&](Store& writing) -> Status {
    ZB_ASSIGN_OR_RETURN(int64_t cluster_id,
                        writing.EnsureCluster({target.cluster, "", "", "", ""}));
    ZB_ASSIGN_OR_RETURN(int64_t job_id, writing.EnsureJob(cluster_id, target.name));
    ZB_ASSIGN_OR_RETURN(stored.run_id,
                        writing.InsertRun(job_id, run.kind, run.command, run.exit_code));
    CostProfileDetails details = analysis.report.ToDetails();
    details.run_id = stored.run_id;
    details.layers = analysis.layers;
    ZB_ASSIGN_OR_RETURN(stored.profile_id,
                        writing.InsertCostProfile(job_id, target.name, analysis.costs, details));
    ZB_ASSIGN_OR_RETURN(stored.timeline_id,
                        writing.InsertRunTimeline(stored.run_id, analysis.report.timeline));
    return Status::Ok();
  }));
  return stored;
}

Expected<std::vector<RawTrace>> ReadTraceDirectory(const std::string& dir,
                                                   std::vector<std::string>& skipped) {
  std::error_code error;
  std::vector<std::string> other;
  size_t shards = 0;
  size_t chrome = 0;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 8 && name.ends_with(".zbshard")) {
      ++shards;
    } else if (it->is_regular_file() && IsChromeTraceFileName(name)) {
      ++chrome;
    } else {
      other.push_back(name + (it->is_directory() ? "/" : ""));
    }
  }
  if (error) return NotFound(dir + ": cannot list the directory: " + error.message());
  if (shards > 0) return ReadShardDirectory(dir, skipped);
  if (chrome > 0) return ImportChromeTraceDirectory(dir, skipped);
  std::string held = "it is empty";
  if (!other.empty()) {
    std::sort(other.begin(), other.end());
    constexpr size_t kShown = 5;
    held = std::to_string(other.size()) + " other entr" + (other.size() == 1 ? "y" : "ies") + ":";
    for (size_t i = 0; i < std::min(kShown, other.size()); ++i)
      held += std::string(i == 0 ? " " : ", ") + other[i];
    if (other.size() > kShown) held += ", ...";
  }
  return InvalidInput(std::string(kNoPipelineOps) + " in " + dir +
                      ": it holds no traces (no *.zbshard, *.json or *.json.gz; " + held + ")");
}

Expected<std::vector<RawTrace>> ReadShardDirectory(const std::string& dir,
                                                   std::vector<std::string>& skipped) {
  ZB_ASSIGN_OR_RETURN(std::vector<std::string> paths, ListShards(dir));
  std::vector<RawTrace> traces;
  for (const std::string& path : paths) {
    auto trace = ReadShard(path);
    if (!trace.ok()) {
      skipped.push_back(trace.status().message());
      continue;
    }
    traces.push_back(std::move(*trace));
  }
  return traces;
}

}  // namespace zb::profiler
