// SPDX-License-Identifier: Apache-2.0
#include "analysis.h"

#include <nlohmann/json.hpp>

#include "zbkit/cli/text_table.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/validate.h"

namespace zb::cli {
namespace {

using nlohmann::json;
using profiler::Analysis;
using profiler::CostReport;
using profiler::MeasuredOp;
using profiler::Spread;
using profiler::StageStats;
using profiler::StoredAnalysis;

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

json OpJson(const MeasuredOp& op) {
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
  return entry;
}

// zb-profile-report/1.
json ReportJson(const Analysis& analysis, const AnalysisSettings& settings, const std::string& name,
                const std::optional<StoredAnalysis>& stored) {
  const CostReport& report = analysis.report;
  const profiler::Attribution& attribution = analysis.attribution;
  json doc = {{"format", "zb-profile-report/1"},
              {"source", analysis.source},
              {"name", name},
              {"processes", analysis.processes},
              {"ranks", report.ranks},
              {"chunks", report.chunks},
              {"num_stages", report.num_stages},
              {"layout", PlacementName(report.placement)},
              {"layout_known", report.layout_known},
              {"schedule_class", report.schedule_class},
              {"checkpointing", report.checkpointing},
              {"data_parallel", report.data_parallel},
              {"split", report.split},
              {"iterations",
               {{"seen", report.iterations_seen},
                {"used", report.iterations_used},
                {"skipped", settings.analyze.costs.skip_iters}}},
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
  doc["costs"] = json::parse(CostsToJson(analysis.costs));
  doc["layers"] = analysis.layers ? json::parse(LayersToJson(*analysis.layers)) : json();
  // Every op, unless there are so many that the report would be mostly ops (--ops lists them
  // all anyway).
  constexpr size_t kMaxJsonOps = 10000;
  const bool list_ops = settings.list_ops || attribution.ops.size() <= kMaxJsonOps;
  doc["num_ops"] = attribution.ops.size();
  doc["ops"] = json::array();
  for (const MeasuredOp& op : attribution.ops) {
    if (!list_ops) break;
    doc["ops"].push_back(OpJson(op));
  }
  if (stored) {
    doc["store"] = {{"path", *settings.store},
                    {"run", stored->run_id},
                    {"cost_profile", stored->profile_id},
                    {"timeline", stored->timeline_id}};
  }
  return doc;
}

// The first line: what was read and how much of it was recognized.
void PrintHeadline(const Analysis& analysis, std::ostream& out) {
  const profiler::Attribution& attribution = analysis.attribution;
  const CostReport& report = analysis.report;
  size_t recognized = 0;
  for (const auto& [family, count] : attribution.ops_by_family) {
    if (family != "nccl") recognized += static_cast<size_t>(count);
  }
  std::string families;
  for (const auto& [family, count] : attribution.ops_by_family) {
    families += (families.empty() ? "" : ", ") + family + " " + std::to_string(count);
  }
  out << analysis.source << ": " << analysis.processes << " process(es), " << report.ranks
      << " rank(s), " << report.num_stages << " stage(s); " << recognized << " ops (" << families
      << "); iterations " << report.iterations_seen << ", used " << report.iterations_used
      << "; kernels " << attribution.kernels_attributed << " of " << attribution.kernels_total
      << " attributed";
  if (attribution.kernels_cross_thread > 0) {
    out << " (" << attribution.kernels_cross_thread << " from other threads)";
  }
  out << "\n";
}

// Per stage: median, p10, p90 and samples of every kind measured, and the memory deltas.
void PrintStageTable(const CostReport& report, std::ostream& out) {
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
}

// Per block (zb-layers/1 in model order): what each costs per microbatch.
void PrintLayerTable(const LayerProfile& layers, std::ostream& out) {
  TextTable table({"block", "F_ms", "B_ms", "W_ms", "M_B", "M_W", "state", "send"});
  for (const LayerCost& layer : layers.layers) {
    table.AddRow({layer.name, FormatMs(layer.f), FormatMs(layer.b), FormatMs(layer.w),
                  FormatFixed(layer.m_b, 0), FormatFixed(layer.m_w, 0), FormatFixed(layer.state, 0),
                  FormatFixed(layer.send, 0)});
  }
  table.Render(out);
}

void PrintComm(const CostReport& report, std::ostream& out) {
  if (report.hops.empty()) {
    out << "comm per hop: none measured (no send/recv ranges)\n";
    return;
  }
  TextTable hops({"hop", "comm_ms", "p10", "p90", "n"});
  for (const profiler::HopStats& hop : report.hops) {
    hops.AddRow({std::to_string(hop.from_stage) + "->" + std::to_string(hop.to_stage),
                 FormatMs(hop.time.median), FormatMs(hop.time.p10), FormatMs(hop.time.p90),
                 std::to_string(hop.time.samples)});
  }
  hops.Render(out);
  out << "comm per hop: " << FormatMs(report.comm.median) << " ms (median of "
      << report.comm.samples << ")\n";
}

void PrintOps(const std::vector<MeasuredOp>& ops, bool list_all, std::ostream& out) {
  constexpr size_t kMaxListedOps = 64;
  if (!list_all && ops.size() > kMaxListedOps) {
    out << ops.size() << " ops (--ops lists them)\n";
    return;
  }
  TextTable table(
      {"rank", "stage", "kind", "mb", "iter", "gpu_ms", "span_ms", "cpu_ms", "kernels", "name"});
  for (const MeasuredOp& op : ops) {
    table.AddRow({std::to_string(op.rank), std::to_string(op.stage), OpKindName(op.kind),
                  std::to_string(op.microbatch), std::to_string(op.iteration), FormatMs(op.busy),
                  FormatMs(op.gpu_end - op.gpu_start), FormatMs(op.cpu_end - op.cpu_start),
                  std::to_string(op.kernels), op.name.substr(0, 48)});
  }
  table.Render(out);
}

// How the job checkpointed its activations, where the traces said
// (docs/activation-checkpointing.md).
void PrintCheckpointing(const CostProfile& costs, std::ostream& out) {
  if (costs.checkpointing.empty()) return;
  out << "activation checkpointing: " << costs.checkpointing;
  if (costs.checkpointing != "none") {
    out << " (B includes one recomputation of each checkpointed block; M_W holds what W reads "
           "of it, and may exceed M_B)";
  }
  out << "\n";
}

// How many data-parallel replicas of each pipeline rank were folded, where there were several,
// and each stage's collectives per step where the traces timed them.
void PrintDataParallel(const CostProfile& costs, std::ostream& out) {
  if (costs.data_parallel > 1) {
    out << "data parallelism: " << costs.data_parallel
        << " replicas of each pipeline rank, folded into these costs (docs/data-parallel.md)\n";
  }
  if (!costs.HasDataParallelWork()) return;
  out << "data-parallel collectives per step (gradient reductions: DDP's all-reduce, FSDP's "
         "reduce-scatter; FSDP's all-gathers; zb tune times them, docs/data-parallel.md §5):";
  for (size_t s = 0; s < costs.stages.size(); ++s) {
    out << (s ? ";" : "") << " stage " << s << " reduce " << FormatMs(costs.stages[s].reduce)
        << " ms";
    if (costs.stages[s].reduced > 0) {
      out << " (" << static_cast<int64_t>(costs.stages[s].reduced) << " bytes of gradients)";
    }
    if (costs.stages[s].unshard > 0 || costs.stages[s].unsharded > 0) {
      out << ", unshard " << FormatMs(costs.stages[s].unshard) << " ms";
    }
    if (costs.stages[s].unsharded > 0) {
      out << " (" << static_cast<int64_t>(costs.stages[s].unsharded) << " bytes gathered)";
    }
  }
  out << "\n";
}

// The job's layout as the profile records it: what zb tune keeps to by default.
void PrintLayout(const CostProfile& costs, std::ostream& out) {
  if (!costs.layout) {
    out << "layout: unknown (give it to zb tune with --layout)\n";
    return;
  }
  out << "layout: " << JobLayoutName(*costs.layout) << " (" << JobLayoutDescription(*costs.layout)
      << (costs.schedule_class.empty() ? "" : ", ran " + costs.schedule_class)
      << "): zb tune proposes orders of this layout unless --layout any\n";
}

void PrintText(const Analysis& analysis, const AnalysisSettings& settings,
               const std::optional<StoredAnalysis>& stored, bool layers_written,
               std::ostream& out) {
  PrintHeadline(analysis, out);
  PrintStageTable(analysis.report, out);
  if (analysis.layers) PrintLayerTable(*analysis.layers, out);
  PrintComm(analysis.report, out);
  out << "memory: " << profiler::MemorySourceName(analysis.report.memory) << "\n";
  PrintLayout(analysis.costs, out);
  PrintCheckpointing(analysis.costs, out);
  PrintDataParallel(analysis.costs, out);
  for (const std::string& note : analysis.report.notes)
    out << "note: " << note << "\n";
  PrintOps(analysis.attribution.ops, settings.list_ops, out);
  if (stored) {
    out << "stored in " << *settings.store << ": run " << stored->run_id << ", cost profile "
        << stored->profile_id << ", timeline " << stored->timeline_id << "\n";
  }
  if (settings.costs_out) out << "wrote " << *settings.costs_out << "\n";
  if (settings.layers_out && layers_written) out << "wrote " << *settings.layers_out << "\n";
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
  add("layers-out", po::value<std::string>(),
      "also write the per-block costs (zb-layers/1, measured by zb profile --torch) here");
  add("ops", "list every op, however many");
  add("json",
      "print JSON (zb-profile-report/1) on stdout (zb profile sends the job's own stdout to "
      "stderr)");
}

Expected<AnalysisSettings> ReadAnalysisSettings(const po::variables_map& values) {
  AnalysisSettings settings;
  const int pp = values["pp"].as<int>();
  if (pp < 0) return UsageError("--pp must be >= 1, got " + std::to_string(pp));
  settings.analyze.attribution.pp = pp;
  const std::string layout = values["layout"].as<std::string>();
  auto placement = ParsePlacement(layout);
  if (!placement) return UsageError("--layout must be loop or v, got \"" + layout + "\"");
  settings.analyze.attribution.placement = *placement;
  settings.analyze.attribution.cross_thread = values.count("same-thread") == 0;
  settings.analyze.costs.skip_iters = values["skip-iters"].as<int>();
  if (settings.analyze.costs.skip_iters < 0) {
    return UsageError("--skip-iters must be >= 0, got " +
                      std::to_string(settings.analyze.costs.skip_iters));
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
  if (any_dim) settings.analyze.costs.dims = dims;
  if (values.count("rules")) {
    ZB_ASSIGN_OR_RETURN(settings.analyze.rules,
                        profiler::RuleSet::LoadFile(values["rules"].as<std::string>()));
  }
  if (values.count("store")) settings.store = values["store"].as<std::string>();
  settings.cluster = values["cluster"].as<std::string>();
  if (values.count("name")) settings.name = values["name"].as<std::string>();
  if (values.count("out")) settings.costs_out = values["out"].as<std::string>();
  if (values.count("layers-out")) settings.layers_out = values["layers-out"].as<std::string>();
  settings.json = values.count("json") > 0;
  settings.list_ops = values.count("ops") > 0;
  return settings;
}

Status AnalyzeAndReport(const AnalysisInput& input, const AnalysisSettings& settings,
                        std::ostream& out, bool* reported) {
  if (reported != nullptr) *reported = false;
  ZB_ASSIGN_OR_RETURN(Analysis analysis,
                      profiler::Analyze(input.traces, input.source, settings.analyze));
  if (!input.block_costs_dirs.empty()) {
    profiler::BlockCosts blocks =
        profiler::ReadBlockCosts(input.block_costs_dirs, analysis.report, analysis.costs.comm);
    analysis.layers = std::move(blocks.layers);
    analysis.report.notes.insert(analysis.report.notes.end(), blocks.notes.begin(),
                                 blocks.notes.end());
  }
  const std::string name = settings.name ? *settings.name : input.default_name;
  if (settings.costs_out) {
    Status valid = ValidateCostProfile(analysis.costs);
    if (!valid.ok()) return valid.WithContext("--out " + *settings.costs_out);
    ZB_RETURN_IF_ERROR(WriteFileAtomically(*settings.costs_out, CostsToJson(analysis.costs)));
  }
  std::optional<StoredAnalysis> stored;
  if (settings.store) {
    ZB_ASSIGN_OR_RETURN(stored,
                        profiler::StoreAnalysis(analysis, {*settings.store, settings.cluster, name},
                                                {input.run_kind, input.command, input.exit_code}));
  }
  // Last, so that a profile without per-block costs still reports and stores what it measured.
  Status layers_written = Status::Ok();
  if (settings.layers_out) {
    layers_written =
        analysis.layers
            ? WriteFileAtomically(*settings.layers_out, LayersToJson(*analysis.layers))
            : InvalidInput("--layers-out " + *settings.layers_out +
                           ": no per-block costs were measured (zb profile --torch measures "
                           "them; zb partition --costs FILE --blocks N,... shares stage totals "
                           "out evenly)");
  }
  if (settings.json) {
    out << ReportJson(analysis, settings, name, stored).dump(2) << "\n";
  } else {
    PrintText(analysis, settings, stored, layers_written.ok(), out);
  }
  if (reported != nullptr) *reported = true;
  return layers_written;
}

void ReportNothingMeasured(const AnalysisInput& input, const AnalysisSettings& settings,
                           const std::string& why, bool already_warned, std::ostream& out,
                           std::ostream& err) {
  const char* prefix = input.run_kind == RunKind::kImport ? "zb import" : "zb profile";
  if (!already_warned) {
    err << prefix << ": warning: " << why << "\n";
  } else if (!settings.json) {
    out << prefix << ": " << why << "\n";
  }
  if (!settings.json) return;
  json doc = {{"format", "zb-profile-report/1"},
              {"source", input.source},
              {"name", settings.name ? *settings.name : input.default_name},
              {"nothing", why},
              {"processes", input.traces.size()},
              {"ranks", 0},
              {"num_stages", 0},
              {"stages", json::array()},
              {"per_rank", json::array()},
              {"hops", json::array()},
              {"ops", json::array()},
              {"notes", json::array()}};
  if (input.exit_code) doc["exit_code"] = *input.exit_code;
  out << doc.dump(2) << "\n";
}

std::string DefaultNameFor(const std::string& path) {
  return BaseName(path);
}

}  // namespace zb::cli
