// SPDX-License-Identifier: Apache-2.0
// zb tune --costs FILE --microbatches M --mem-limit L [--family NAME|best]
//         [--placement loop|v|any] [--chunks V] [--store DB [--cluster NAME] [--job NAME]]
//         [--out FILE] [--json]
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "text_table.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/tune.h"

namespace zb::cli {
namespace {

using tuner::Candidate;
using tuner::TuneResult;

double MaxOf(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

std::string FormatCap(const std::vector<double>& caps) {
  const double cap = MaxOf(caps);
  if (std::isinf(cap)) return "none";
  const std::string low = FormatFixed(*std::min_element(caps.begin(), caps.end()), 0);
  const std::string high = FormatFixed(cap, 0);
  return low == high ? high : low + ".." + high;
}

void PrintTable(const TuneResult& result, std::ostream& out) {
  TextTable table({"family", "placement", "makespan_ms", "bubble", "paper_bubble", "peak_mem",
                   "peak/1F1B", "cap", "T/LB", "fits"});
  for (int i = 0; i < static_cast<int>(result.candidates.size()); ++i) {
    const Candidate& c = result.candidates[i];
    const std::string name = c.family + (i == result.best ? " *" : "");
    const auto* info = tuner::FindFamily(c.family);
    const std::string placement = info ? PlacementName(info->placement) : "?";
    if (!c.status.ok()) {
      table.AddRow({name, placement, "-", "-", "-", "-", "-", FormatCap(c.caps), "-",
                    "n/a: " + c.status.message()});
      continue;
    }
    const Prediction& p = *c.schedule.predicted;
    table.AddRow({name, placement, FormatMs(p.makespan), FormatFixed(p.bubble_rate, 4),
                  FormatFixed(p.paper_bubble_rate, 4), FormatFixed(MaxOf(p.peak_memory), 0),
                  FormatFixed(MaxOf(c.peak_over_1f1b), 2) + "x", FormatCap(c.caps),
                  FormatFixed(c.t_over_lb, 3), c.fits ? "yes" : "no"});
  }
  table.Render(out);
}

nlohmann::json ReportJson(const TuneResult& result, int ranks, int microbatches,
                          const std::string& memory_limit) {
  nlohmann::json report = {{"format", "zb-tune-report/1"},
                           {"ranks", ranks},
                           {"microbatches", microbatches},
                           {"mem_limit", memory_limit},
                           {"candidates", nlohmann::json::array()}};
  for (const Candidate& c : result.candidates) {
    nlohmann::json entry = {{"family", c.family}, {"ok", c.status.ok()}};
    std::vector<double> caps;
    for (double cap : c.caps)
      caps.push_back(std::isinf(cap) ? -1 : cap);
    entry["cap"] = caps;  // -1 = no cap
    if (!c.status.ok()) {
      entry["error"] = c.status.message();
    } else {
      const Prediction& p = *c.schedule.predicted;
      entry["makespan"] = NsToMs(p.makespan);
      entry["span"] = NsToMs(p.span);
      entry["bubble_rate"] = p.bubble_rate;
      entry["paper_bubble_rate"] = p.paper_bubble_rate;
      entry["peak_memory"] = p.peak_memory;
      entry["peak_over_1f1b"] = c.peak_over_1f1b;
      entry["lower_bound"] = NsToMs(c.bounds.makespan);
      entry["t_over_lb"] = c.t_over_lb;
      entry["fits"] = c.fits;
    }
    report["candidates"].push_back(entry);
  }
  report["best"] = result.best >= 0 ? nlohmann::json(result.candidates[result.best].family)
                                    : nlohmann::json(nullptr);
  return report;
}

// Records the input profile and the chosen schedule (with its predicted timeline).
Expected<int64_t> StoreResult(const std::string& path, const std::string& cluster,
                              const std::string& job, const std::string& costs_name,
                              const CostProfile& costs, const Candidate& best) {
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(path));
  ZB_ASSIGN_OR_RETURN(int64_t cluster_id, store.EnsureCluster({cluster, "", "", "", ""}));
  ZB_ASSIGN_OR_RETURN(int64_t job_id, store.EnsureJob(cluster_id, job));
  ZB_RETURN_IF_ERROR(store.InsertCostProfile(job_id, costs_name, costs).status());
  std::optional<double> cap;
  if (!std::isinf(MaxOf(best.caps))) cap = MaxOf(best.caps);
  return store.InsertSchedule(job_id, best.schedule, cap);
}

}  // namespace

int RunTuneCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "tune";
  po::options_description options("options");
  po::options_description_easy_init add = options.add_options();
  add("costs", po::value<std::string>()->required(), "zb-costs/1 file: one stage per rank");
  add("microbatches,m", po::value<int>()->required(), "microbatches per iteration");
  add("mem-limit", po::value<std::string>()->required(),
      "per-rank activation cap: Nx (N x 1F1B's peak), a size in M_B units (KiB/MiB/GiB), none");
  add("family", po::value<std::string>()->default_value("best"),
      "a family (1f1b, 1f1b-i, zb-h1, zb-h2, zb-auto, zb-v, v-half, v-min) or best");
  add("placement", po::value<std::string>()->default_value("any"),
      "with --family best: consider loop, v or any placement");
  add("chunks", po::value<int>()->default_value(2), "chunks per rank for 1f1b-i");
  add("store", po::value<std::string>(), "record the chosen schedule in this SQLite store");
  add("cluster", po::value<std::string>()->default_value("local"), "cluster name in the store");
  add("job", po::value<std::string>(), "job name in the store (default: the costs file name)");
  add("out,o", po::value<std::string>(), "write the chosen schedule (zb-schedule/1) here");
  add("json", "print the comparison as JSON");
  po::variables_map values;
  int exit_code = 0;
  if (!ParseCommandLine(command, "--costs FILE --microbatches M --mem-limit L [options]", args,
                        options, {}, values, out, err, exit_code)) {
    return exit_code;
  }

  tuner::TuneOptions tune_options;
  tune_options.family = values["family"].as<std::string>();
  const std::string placement = values["placement"].as<std::string>();
  if (placement != "any") {
    auto parsed = ParsePlacement(placement);
    if (!parsed) {
      return ReportError(
          err, command,
          UsageError("--placement must be loop, v or any, got \"" + placement + "\""));
    }
    tune_options.placement = *parsed;
  }
  tune_options.interleave_chunks = values["chunks"].as<int>();
  if (tune_options.interleave_chunks < 1) {
    return ReportError(err, command, UsageError("--chunks must be >= 1"));
  }
  auto memory_limit = tuner::ParseMemoryLimit(values["mem-limit"].as<std::string>());
  if (!memory_limit.ok()) return ReportError(err, command, memory_limit.status());
  tune_options.memory_limit = *memory_limit;

  const std::string costs_path = values["costs"].as<std::string>();
  auto costs = ReadCostsFile(costs_path);
  if (!costs.ok()) return ReportError(err, command, costs.status());
  const int microbatches = values["microbatches"].as<int>();

  auto result = tuner::Tune(*costs, microbatches, tune_options);
  if (!result.ok()) return ReportError(err, command, result.status());

  const bool json = values.count("json") > 0;
  nlohmann::json report =
      ReportJson(*result, costs->num_stages(), microbatches, tune_options.memory_limit.ToString());
  if (!json) {
    out << "p=" << costs->num_stages() << " m=" << microbatches << " comm=" << FormatMs(costs->comm)
        << "ms mem-limit=" << tune_options.memory_limit.ToString() << " (" << costs_path << ")\n";
    PrintTable(*result, out);
  }
  if (result->best < 0) {
    if (json) out << report.dump(2) << "\n";
    return ReportError(
        err, command,
        Infeasible("no schedule fits --mem-limit " + values["mem-limit"].as<std::string>() +
                   " (the peak/1F1B column shows what each family needs)"));
  }
  const Candidate& best = result->candidates[result->best];

  std::optional<int64_t> schedule_id;
  if (values.count("store")) {
    auto stored =
        StoreResult(values["store"].as<std::string>(), values["cluster"].as<std::string>(),
                    values.count("job") ? values["job"].as<std::string>()
                                        : std::filesystem::path(costs_path).stem().string(),
                    costs_path, *costs, best);
    if (!stored.ok()) return ReportError(err, command, stored.status());
    schedule_id = *stored;
  }
  if (values.count("out")) {
    Status written =
        WriteFileAtomically(values["out"].as<std::string>(), ScheduleToJson(best.schedule));
    if (!written.ok()) return ReportError(err, command, written);
  }

  if (json) {
    if (schedule_id) report["schedule_id"] = *schedule_id;
    if (values.count("out")) report["out"] = values["out"].as<std::string>();
    out << report.dump(2) << "\n";
    return 0;
  }
  out << "best: " << best.family << ", makespan " << FormatMs(best.schedule.predicted->makespan)
      << " ms, bubble " << FormatFixed(best.schedule.predicted->bubble_rate, 4) << ", T/LB "
      << FormatFixed(best.t_over_lb, 3) << "\n";
  if (schedule_id) {
    out << "stored as schedule " << *schedule_id << " in " << values["store"].as<std::string>()
        << "\n";
  }
  if (values.count("out")) out << "wrote " << values["out"].as<std::string>() << "\n";
  return 0;
}

}  // namespace zb::cli
