// SPDX-License-Identifier: Apache-2.0
#include "analysis.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "text_table.h"
#include "zbkit/profiler/shard.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/validate.h"

namespace zb::cli {
namespace {

using nlohmann::json;
using profiler::CostReport;
using profiler::MeasuredOp;
using profiler::Spread;
using profiler::StageStats;

constexpr OpKind kComputeKinds[] = {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW};

json SpreadJson(const Spread& spread) {
  return {{"median", NsToMs(spread.median)},
          {"p10", NsToMs(spread.p10)},
          {"p90", NsToMs(spread.p90)},
          {"samples", spread.samples}};
}

json StatsJson(const StageStats& stats) {
  json entry = {{"stage", stats.stage}, {"rank", stats.rank}};
  for (OpKind kind : kComputeKinds) {
    const Spread& spread = stats.Of(kind);
    if (spread.samples > 0) entry[OpKindName(kind)] = SpreadJson(spread);
  }
  entry["M_B"] = stats.m_b;
  entry["M_W"] = stats.m_w;
  return entry;
}

const char* DirectionName(profiler::CommDirection direction) {
  switch (direction) {
    case profiler::CommDirection::kSendForward:
      return "send_forward";
    case profiler::CommDirection::kRecvForward:
      return "recv_forward";
    case profiler::CommDirection::kSendBackward:
      return "send_backward";
    case profiler::CommDirection::kRecvBackward:
      return "recv_backward";
    case profiler::CommDirection::kNone:
      return "";
  }
  return "";
}

struct Stored {
  int64_t run_id = 0;
  int64_t profile_id = 0;
  int64_t timeline_id = 0;
};

Expected<Stored> StoreReport(const AnalysisInput& input, const AnalysisSettings& settings,
                             const CostReport& report, const std::string& name) {
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(*settings.store));
  ZB_ASSIGN_OR_RETURN(int64_t cluster_id, store.EnsureCluster({settings.cluster, "", "", "", ""}));
  ZB_ASSIGN_OR_RETURN(int64_t job_id, store.EnsureJob(cluster_id, name));
  Stored stored;
  ZB_ASSIGN_OR_RETURN(stored.run_id,
                      store.InsertRun(job_id, input.run_kind, input.command, input.exit_code));
  CostProfileDetails details = report.ToDetails();
  details.run_id = stored.run_id;
  ZB_ASSIGN_OR_RETURN(stored.profile_id,
                      store.InsertCostProfile(job_id, name, report.ToCostProfile(), details));
  ZB_ASSIGN_OR_RETURN(stored.timeline_id, store.InsertRunTimeline(stored.run_id, report.timeline));
  return stored;
}

std::string BaseName(const std::string& path) {
  std::string base = path;
  while (base.size() > 1 && base.back() == '/')
    base.pop_back();
  const size_t slash = base.find_last_of('/');
  if (slash != std::string::npos) base = base.substr(slash + 1);
  for (const char* suffix : {".gz", ".json", ".sqlite", ".zbshard"}) {
    const std::string s = suffix;
    if (base.size() > s.size() && base.compare(base.size() - s.size(), s.size(), s) == 0) {
      base.resize(base.size() - s.size());
    }
  }
  return base.empty() ? "job" : base;
}

}  // namespace

void AddAnalysisOptions(po::options_description& options) {
  po::options_description_easy_init add = options.add_options();
  add("store", po::value<std::string>(), "store the run, cost profile and measured timeline here");
  add("cluster", po::value<std::string>()->default_value("local"), "cluster name in the store");
  add("name", po::value<std::string>(), "job (and profile) name (default: from the command/file)");
  add("pp", po::value<int>()->default_value(0), "pipeline ranks P (default: from the traces)");
  add("layout", po::value<std::string>()->default_value("loop"),
      "chunk placement for names that give a local chunk: loop or v");
  add("skip-iters", po::value<int>()->default_value(0), "warm-up iterations to drop");
  add("rules", po::value<std::string>(),
      "JSON file of user rules (regex -> kind/stage/microbatch)");
  add("same-thread", "attribute kernels only to ranges of their launching thread");
  add("hidden", po::value<int64_t>(), "model hidden size h (analytic memory estimate)");
  add("heads", po::value<int64_t>(), "attention heads a");
  add("seq", po::value<int64_t>(), "sequence length s");
  add("micro-batch-size", po::value<int64_t>(), "microbatch size b");
  add("layers", po::value<int64_t>(), "transformer layers of the whole model");
  add("out", po::value<std::string>(), "also write the zb-costs/1 profile to this file");
  add("ops", "list every op, however many");
  add("json", "print JSON (zb-profile-report/1)");
}

Expected<AnalysisSettings> ReadAnalysisSettings(const po::variables_map& values) {
  AnalysisSettings settings;
  const int pp = values["pp"].as<int>();
  if (pp < 0) return UsageError("--pp must be >= 1, got " + std::to_string(pp));
  settings.attribution.pp = pp;
  const std::string layout = values["layout"].as<std::string>();
  auto placement = ParsePlacement(layout);
  if (!placement) return UsageError("--layout must be loop or v, got \"" + layout + "\"");
  settings.attribution.placement = *placement;
  settings.attribution.cross_thread = values.count("same-thread") == 0;
  settings.costs.skip_iters = values["skip-iters"].as<int>();
  if (settings.costs.skip_iters < 0) {
    return UsageError("--skip-iters must be >= 0, got " +
                      std::to_string(settings.costs.skip_iters));
  }
  profiler::ModelDims dims;
  bool any_dim = false;
  for (auto [key, field] :
       {std::pair{"hidden", &dims.hidden}, std::pair{"heads", &dims.heads},
        std::pair{"seq", &dims.seq}, std::pair{"micro-batch-size", &dims.micro_batch_size},
        std::pair{"layers", &dims.layers}}) {
    if (!values.count(key)) continue;
    *field = values[key].as<int64_t>();
    if (*field <= 0) return UsageError(std::string("--") + key + " must be >= 1");
    any_dim = true;
  }
  if (any_dim && !dims.complete()) {
    return UsageError(
        "the memory estimate needs all of --hidden, --heads, --seq, --micro-batch-size, --layers");
  }
  if (any_dim) settings.costs.dims = dims;
  if (values.count("rules")) {
    ZB_ASSIGN_OR_RETURN(settings.rules,
                        profiler::RuleSet::LoadFile(values["rules"].as<std::string>()));
  }
  if (values.count("store")) settings.store = values["store"].as<std::string>();
  settings.cluster = values["cluster"].as<std::string>();
  if (values.count("name")) settings.name = values["name"].as<std::string>();
  if (values.count("out")) settings.costs_out = values["out"].as<std::string>();
  settings.json = values.count("json") > 0;
  settings.list_ops = values.count("ops") > 0;
  return settings;
}

Status AnalyzeAndReport(const AnalysisInput& input, const AnalysisSettings& settings,
                        std::ostream& out) {
  ZB_ASSIGN_OR_RETURN(profiler::Attribution attribution,
                      profiler::Attribute(input.traces, settings.rules, settings.attribution));
  if (attribution.ops.empty()) {
    size_t ranges = 0;
    for (const profiler::RawTrace& trace : input.traces)
      ranges += trace.ranges.size();
    return InvalidInput(std::string(kNoPipelineOps) + " in " + input.source + " (" +
                        std::to_string(input.traces.size()) + " process(es), " +
                        std::to_string(ranges) +
                        " ranges; give --rules FILE to map range names to F/B/W/BW)");
  }
  auto built = profiler::BuildCostReport(attribution, settings.costs);
  if (!built.ok()) return built.status().WithContext(input.source);
  const CostReport& report = *built;
  const std::string name = settings.name ? *settings.name : input.default_name;

  const CostProfile costs = report.ToCostProfile();
  if (settings.costs_out) {
    Status valid = ValidateCostProfile(costs);
    if (!valid.ok()) return valid.WithContext("--out " + *settings.costs_out);
    ZB_RETURN_IF_ERROR(WriteFileAtomically(*settings.costs_out, CostsToJson(costs)));
  }
  std::optional<Stored> stored;
  if (settings.store) {
    ZB_ASSIGN_OR_RETURN(stored, StoreReport(input, settings, report, name));
  }

  if (settings.json) {
    json doc = {{"format", "zb-profile-report/1"},
                {"source", input.source},
                {"name", name},
                {"processes", input.traces.size()},
                {"ranks", report.ranks},
                {"chunks", report.chunks},
                {"num_stages", report.num_stages},
                {"layout", PlacementName(report.placement)},
                {"split", report.split},
                {"iterations",
                 {{"seen", report.iterations_seen},
                  {"used", report.iterations_used},
                  {"skipped", settings.costs.skip_iters}}},
                {"memory_source", profiler::MemorySourceName(report.memory)},
                {"kernels",
                 {{"total", attribution.kernels_total},
                  {"attributed", attribution.kernels_attributed},
                  {"cross_thread", attribution.kernels_cross_thread}}},
                {"ops_by_family", attribution.ops_by_family},
                {"comm", SpreadJson(report.comm)},
                {"notes", report.notes}};
    doc["stages"] = json::array();
    for (const StageStats& stats : report.stages)
      doc["stages"].push_back(StatsJson(stats));
    doc["per_rank"] = json::array();
    for (const StageStats& stats : report.per_rank)
      doc["per_rank"].push_back(StatsJson(stats));
    doc["hops"] = json::array();
    for (const profiler::HopStats& hop : report.hops) {
      json entry = SpreadJson(hop.time);
      entry["from"] = hop.from_stage;
      entry["to"] = hop.to_stage;
      doc["hops"].push_back(entry);
    }
    doc["costs"] = json::parse(CostsToJson(costs));
    // Every op, unless there are so many that the report would be mostly ops (--ops lists them
    // all anyway).
    constexpr size_t kMaxJsonOps = 10000;
    const bool list_ops = settings.list_ops || attribution.ops.size() <= kMaxJsonOps;
    doc["num_ops"] = attribution.ops.size();
    doc["ops"] = json::array();
    for (const MeasuredOp& op : attribution.ops) {
      if (!list_ops) break;
      json entry = {{"rank", op.rank},
                    {"stage", op.stage},
                    {"kind", OpKindName(op.kind)},
                    {"mb", op.microbatch},
                    {"iteration", op.iteration},
                    {"name", op.name},
                    {"family", op.family},
                    {"kernels", op.kernels},
                    {"gpu", op.busy / 1e6},
                    {"busy_ns", op.busy},
                    {"cpu_start_ns", op.cpu_start},
                    {"cpu_end_ns", op.cpu_end},
                    {"gpu_start_ns", op.gpu_start},
                    {"gpu_end_ns", op.gpu_end}};
      if (op.replica != 0) entry["replica"] = op.replica;
      if (op.kind == OpKind::kComm && op.peer_stage >= 0) {
        entry["peer_stage"] = op.peer_stage;
        entry["direction"] = DirectionName(op.direction);
      }
      if (op.has_memory) entry["memory_net"] = op.memory_net;
      doc["ops"].push_back(entry);
    }
    if (stored) {
      doc["store"] = {{"path", *settings.store},
                      {"run", stored->run_id},
                      {"cost_profile", stored->profile_id},
                      {"timeline", stored->timeline_id}};
    }
    out << doc.dump(2) << "\n";
    return Status::Ok();
  }

  // ---- Text. ----
  size_t recognized = 0;
  for (const auto& [family, count] : attribution.ops_by_family) {
    if (family != "nccl") recognized += static_cast<size_t>(count);
  }
  std::string families;
  for (const auto& [family, count] : attribution.ops_by_family) {
    families += (families.empty() ? "" : ", ") + family + " " + std::to_string(count);
  }
  out << input.source << ": " << input.traces.size() << " process(es), " << report.ranks
      << " rank(s), " << report.num_stages << " stage(s); " << recognized << " ops (" << families
      << "); iterations " << report.iterations_seen << ", used " << report.iterations_used
      << "; kernels " << attribution.kernels_attributed << " of " << attribution.kernels_total
      << " attributed";
  if (attribution.kernels_cross_thread > 0) {
    out << " (" << attribution.kernels_cross_thread << " from other threads)";
  }
  out << "\n";

  std::vector<OpKind> kinds;
  for (OpKind kind : kComputeKinds) {
    for (const StageStats& stats : report.stages) {
      if (stats.Of(kind).samples > 0) {
        kinds.push_back(kind);
        break;
      }
    }
  }
  std::vector<std::string> header = {"stage", "rank"};
  for (OpKind kind : kinds) {
    const std::string k = OpKindName(kind);
    header.insert(header.end(), {k + "_ms", "p10", "p90", "n"});
  }
  header.insert(header.end(), {"M_B", "M_W"});
  TextTable table(header);
  for (const StageStats& stats : report.stages) {
    std::vector<std::string> row = {std::to_string(stats.stage), std::to_string(stats.rank)};
    for (OpKind kind : kinds) {
      const Spread& spread = stats.Of(kind);
      if (spread.samples == 0) {
        row.insert(row.end(), {"-", "-", "-", "0"});
      } else {
        row.insert(row.end(), {FormatMs(spread.median), FormatMs(spread.p10), FormatMs(spread.p90),
                               std::to_string(spread.samples)});
      }
    }
    row.push_back(FormatFixed(stats.m_b, 0));
    row.push_back(FormatFixed(stats.m_w, 0));
    table.AddRow(row);
  }
  table.Render(out);
  if (!report.hops.empty()) {
    TextTable hops({"hop", "comm_ms", "p10", "p90", "n"});
    for (const profiler::HopStats& hop : report.hops) {
      hops.AddRow({std::to_string(hop.from_stage) + "->" + std::to_string(hop.to_stage),
                   FormatMs(hop.time.median), FormatMs(hop.time.p10), FormatMs(hop.time.p90),
                   std::to_string(hop.time.samples)});
    }
    hops.Render(out);
    out << "comm per hop: " << FormatMs(report.comm.median) << " ms (median of "
        << report.comm.samples << ")\n";
  } else {
    out << "comm per hop: none measured (no send/recv ranges)\n";
  }
  out << "memory: " << profiler::MemorySourceName(report.memory) << "\n";
  for (const std::string& note : report.notes)
    out << "note: " << note << "\n";

  constexpr size_t kMaxListedOps = 64;
  if (settings.list_ops || attribution.ops.size() <= kMaxListedOps) {
    TextTable ops(
        {"rank", "stage", "kind", "mb", "iter", "gpu_ms", "span_ms", "cpu_ms", "kernels", "name"});
    for (const MeasuredOp& op : attribution.ops) {
      ops.AddRow({std::to_string(op.rank), std::to_string(op.stage), OpKindName(op.kind),
                  std::to_string(op.microbatch), std::to_string(op.iteration), FormatMs(op.busy),
                  FormatMs(op.gpu_end - op.gpu_start), FormatMs(op.cpu_end - op.cpu_start),
                  std::to_string(op.kernels), op.name.substr(0, 48)});
    }
    ops.Render(out);
  } else {
    out << attribution.ops.size() << " ops (--ops lists them)\n";
  }
  if (stored) {
    out << "stored in " << *settings.store << ": run " << stored->run_id << ", cost profile "
        << stored->profile_id << ", timeline " << stored->timeline_id << "\n";
  }
  if (settings.costs_out) out << "wrote " << *settings.costs_out << "\n";
  return Status::Ok();
}

std::string DefaultNameFor(const std::string& path) {
  return BaseName(path);
}

Expected<std::vector<profiler::RawTrace>> ReadShardDirectory(const std::string& dir,
                                                             std::vector<std::string>& skipped) {
  ZB_ASSIGN_OR_RETURN(std::vector<std::string> paths, profiler::ListShards(dir));
  std::vector<profiler::RawTrace> traces;
  for (const std::string& path : paths) {
    auto trace = profiler::ReadShard(path);
    if (!trace.ok()) {
      skipped.push_back(trace.status().message());
      continue;
    }
    traces.push_back(std::move(*trace));
  }
  return traces;
}

}  // namespace zb::cli
