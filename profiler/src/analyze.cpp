// SPDX-License-Identifier: Apache-2.0
#include "zbkit/profiler/analyze.h"

#include "zbkit/profiler/shard.h"
#include "zbkit/schemas/store.h"

namespace zb::profiler {

Expected<Analysis> Analyze(const std::vector<RawTrace>& traces, const std::string& source,
                           const AnalyzeSettings& settings) {
  Analysis analysis;
  analysis.source = source;
  analysis.processes = traces.size();
  for (const RawTrace& trace : traces)
    analysis.ranges += trace.ranges.size();
  ZB_ASSIGN_OR_RETURN(analysis.attribution,
                      Attribute(traces, settings.rules, settings.attribution));
  if (analysis.attribution.ops.empty()) {
    return InvalidInput(std::string(kNoPipelineOps) + " in " + source + " (" +
                        std::to_string(analysis.processes) + " process(es), " +
                        std::to_string(analysis.ranges) +
                        " ranges; give --rules FILE to map range names to F/B/W/BW)");
  }
  auto built = BuildCostReport(analysis.attribution, settings.costs);
  if (!built.ok()) return built.status().WithContext(source);
  analysis.report = std::move(built).value();
  analysis.costs = analysis.report.ToCostProfile();
  return analysis;
}

Expected<StoredAnalysis> StoreAnalysis(const Analysis& analysis, const AnalysisStoreTarget& target,
                                       const AnalysisRun& run) {
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(target.path));
  ZB_ASSIGN_OR_RETURN(int64_t cluster_id, store.EnsureCluster({target.cluster, "", "", "", ""}));
  ZB_ASSIGN_OR_RETURN(int64_t job_id, store.EnsureJob(cluster_id, target.name));
  StoredAnalysis stored;
  ZB_ASSIGN_OR_RETURN(stored.run_id, store.InsertRun(job_id, run.kind, run.command, run.exit_code));
  CostProfileDetails details = analysis.report.ToDetails();
  details.run_id = stored.run_id;
  ZB_ASSIGN_OR_RETURN(stored.profile_id,
                      store.InsertCostProfile(job_id, target.name, analysis.costs, details));
  ZB_ASSIGN_OR_RETURN(stored.timeline_id,
                      store.InsertRunTimeline(stored.run_id, analysis.report.timeline));
  return stored;
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
