// SPDX-License-Identifier: Apache-2.0
// zb tune --costs FILE --microbatches M --mem-limit L [--family NAME|best|search]
//         [--placement loop|v|any] [--chunks V] [--objective makespan|span]
//         [--time-limit S] [--evaluations N] [--seed K] [--frontier FROM:TO:STEP]
//         [--store DB [--cluster NAME] [--job NAME]] [--comm profile|cluster] [--out FILE]
//         [--json]
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tuner_commands.h"
#include "zbkit/cli/progress_bar.h"
#include "zbkit/cli/text_table.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"
#include "zbkit/tuner/exact.h"
#include "zbkit/tuner/frontier.h"
#include "zbkit/tuner/torch_orders.h"
#include "zbkit/tuner/tune_and_store.h"

namespace zb::cli {
namespace {

using tuner::ComparisonRow;
using tuner::Objective;
using tuner::TuneOutcome;

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

void PrintTable(const TuneOutcome& outcome, std::ostream& out) {
  // Chosen by span, the table shows the span the * row won on; by makespan it stays as it was.
  const bool by_span = outcome.objective == Objective::kSpan;
  std::vector<std::string> header = {"family", "placement", "makespan_ms"};
  if (by_span) header.push_back("span_ms");
  for (const char* column : {"bubble", "paper_bubble", "peak_mem", "peak/1F1B", "cap", "T/LB"})
    header.push_back(column);
  header.push_back("fits");
  TextTable table(header);
  table.SetLastColumnText();  // "yes", "no" or "n/a: why"
  for (int i = 0; i < static_cast<int>(outcome.rows.size()); ++i) {
    const ComparisonRow& row = outcome.rows[i];
    const std::string name =
        row.family + (i == outcome.best ? " *" : "") + (row.other_layout ? " (other layout)" : "");
    const std::string placement = row.placement ? PlacementName(*row.placement) : "?";
    std::vector<std::string> cells = {name, placement};
    if (!row.status.ok()) {
      cells.insert(cells.end(), by_span ? 6 : 5, "-");
      cells.push_back(FormatCap(row.caps));
      cells.push_back("-");
      cells.push_back("n/a: " + row.status.message());
      table.AddRow(cells);
      continue;
    }
    cells.push_back(FormatMs(row.makespan));
    if (by_span) cells.push_back(FormatMs(row.span));
    cells.insert(
        cells.end(),
        {FormatFixed(row.bubble_rate, 4), FormatFixed(row.paper_bubble_rate, 4),
         FormatFixed(MaxOf(row.peak_memory), 0), FormatFixed(MaxOf(row.peak_over_1f1b), 2) + "x",
         FormatCap(row.caps), FormatFixed(row.t_over_lb, 3), row.fits ? "yes" : "no"});
    table.AddRow(cells);
  }
  table.Render(out);
}

nlohmann::json ReportJson(const TuneOutcome& outcome) {
  nlohmann::json report = {{"format", "zb-tune-report/1"},
                           {"ranks", outcome.ranks},
                           {"microbatches", outcome.microbatches},
                           {"mem_limit", outcome.memory_limit},
                           {"objective", tuner::ObjectiveName(outcome.objective)},
                           {"candidates", nlohmann::json::array()}};
  for (const ComparisonRow& row : outcome.rows) {
    nlohmann::json entry = {{"family", row.family},
                            {"ok", row.status.ok()},
                            {"reference", row.reference},
                            {"other_layout", row.other_layout}};
    std::vector<double> caps;
    for (double cap : row.caps)
      caps.push_back(std::isinf(cap) ? -1 : cap);
    entry["cap"] = caps;  // -1 = no cap
    if (!row.status.ok()) {
      entry["error"] = row.status.message();
    } else {
      entry["makespan"] = NsToMs(row.makespan);
      entry["span"] = NsToMs(row.span);
      entry["bubble_rate"] = row.bubble_rate;
      entry["paper_bubble_rate"] = row.paper_bubble_rate;
      entry["peak_memory"] = row.peak_memory;
      entry["peak_over_1f1b"] = row.peak_over_1f1b;
      entry["lower_bound"] = NsToMs(row.lower_bound);
      entry["t_over_lb"] = row.t_over_lb;
      entry["fits"] = row.fits;
      entry["fused_backwards"] = row.fused_backwards;
      if (row.search) {
        entry["search"] = {{"seeded_by", row.search->seeded_by},
                           {"best_seed", row.search->best_seed},
                           {"seed_figure", NsToMs(row.search->seed_figure)},
                           {"evaluations", row.search->evaluations},
                           {"improvements", row.search->improvements},
                           {"seconds", row.search->seconds}};
      }
    }
    report["candidates"].push_back(entry);
  }
  report["best"] = outcome.best >= 0 ? nlohmann::json(outcome.rows[outcome.best].family)
                                     : nlohmann::json(nullptr);
  return report;
}

// With --layout: what each other layout's best candidate would gain over the job's best, by the
// objective, and what to build for it (docs/schedules.md §7).
void PrintLayoutAdvice(const TuneOutcome& outcome, const tuner::TuneRequest& request,
                       std::ostream& out) {
  const JobLayout& layout = *request.options.layout;
  const ComparisonRow& best = outcome.rows[outcome.best];
  out << "layout " << JobLayoutName(layout) << " (" << JobLayoutDescription(layout);
  if (request.layout_from_profile) {
    out << ", the profiled job's"
        << (request.costs.schedule_class.empty() ? "" : ": it ran " + request.costs.schedule_class)
        << "; --layout any lifts it";
  }
  out << "): best " << best.family << ", " << FormatMs(tuner::RowFigure(outcome, best)) << " ms\n";
  for (const tuner::LayoutGain& other : tuner::LayoutGains(outcome)) {
    out << "another layout would gain: " << JobLayoutDescription(other.layout) << ": "
        << FormatFixed(other.gain * 100, 1) << " % faster (" << other.row->family << ", "
        << FormatMs(tuner::RowFigure(outcome, *other.row))
        << " ms): build the model so and replay it in a " << tuner::TorchClassFor(other.layout)
        << " script (zb tune --layout " << JobLayoutName(other.layout) << ")\n";
  }
}

void PrintTextSummary(const TuneOutcome& outcome, const po::variables_map& values,
                      std::ostream& out) {
  const ComparisonRow& best = outcome.rows[outcome.best];
  const bool by_span = outcome.objective == Objective::kSpan;
  for (const ComparisonRow& row : outcome.rows) {
    if (!row.search || !row.status.ok()) continue;
    const TimeNs figure = by_span ? row.span : row.makespan;
    out << "search: " << FormatMs(figure) << " ms by " << tuner::ObjectiveName(outcome.objective)
        << " (the best seed, " << row.search->best_seed << ", " << FormatMs(row.search->seed_figure)
        << " ms), found from " << row.search->seeded_by << " in " << row.search->evaluations
        << " simulations, " << FormatFixed(row.search->seconds, 1) << " s\n";
  }
  out << (by_span ? "best by span: " : "best: ") << best.family;
  if (best.fused_backwards > 0) {
    out << " (" << best.fused_backwards
        << " backwards fused: the measured BW is shorter than B + W)";
  }
  if (by_span) {
    out << ", span " << FormatMs(best.span) << " ms, paper_bubble "
        << FormatFixed(best.paper_bubble_rate, 4) << ", makespan " << FormatMs(best.makespan)
        << " ms, bubble " << FormatFixed(best.bubble_rate, 4);
  } else {
    out << ", makespan " << FormatMs(best.makespan) << " ms, bubble "
        << FormatFixed(best.bubble_rate, 4);
  }
  out << ", T/LB " << FormatFixed(best.t_over_lb, 3) << "\n";
  for (const ComparisonRow& row : outcome.rows) {
    // The order tuned as if the stages reduced nothing (tune.h, dp_oblivious_row).
    if (row.family.rfind("dp-oblivious:", 0) != 0 || !row.status.ok()) continue;
    const TimeNs aware = tuner::RowFigure(outcome, best);
    const TimeNs oblivious = tuner::RowFigure(outcome, row);
    out << "data parallelism: with the stages' reductions and all-gathers, " << FormatMs(aware)
        << " ms against " << FormatMs(oblivious) << " ms for the order tuned without them ("
        << row.family << "): "
        << FormatFixed(oblivious > 0 ? 100.0 * static_cast<double>(oblivious - aware) /
                                           static_cast<double>(oblivious)
                                     : 0.0,
                       1)
        << " % faster (docs/data-parallel.md §5)\n";
  }
  if (outcome.schedule_id) {
    // zb-schedule/1 and the store keep no objective, so the line that names the id says it.
    out << "stored as schedule " << *outcome.schedule_id << " in "
        << values["store"].as<std::string>() << (by_span ? " (chosen by span)" : "") << "\n";
  }
  if (values.count("out")) out << "wrote " << values["out"].as<std::string>() << "\n";
}

// `python -m zbkit_harness.torch_orders` output: DIR/index.json (zb-torch-orders/1) naming one CSV
// per torch schedule class, or why the installed torch refused the class for these ranks and
// microbatches. Each becomes a "torch:<Class>" row.
Expected<std::vector<std::pair<std::string, Expected<Schedule>>>> ReadTorchOrders(
    const std::string& dir, const CostProfile& costs, int microbatches) {
  const std::filesystem::path index = std::filesystem::path(dir) / "index.json";
  std::ifstream in(index);
  if (!in)
    return NotFound(index.string() +
                    ": no index (write it with python -m zbkit_harness.torch_orders)");
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc.value("format", "") != "zb-torch-orders/1" ||
      !doc.contains("schedules") || !doc["schedules"].is_array()) {
    return InvalidInput(index.string() + ": not a zb-torch-orders/1 index with \"schedules\"");
  }
  std::vector<std::pair<std::string, Expected<Schedule>>> orders;
  for (const nlohmann::json& entry : doc["schedules"]) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      return InvalidInput(index.string() + ": schedules[" + std::to_string(orders.size()) +
                          "] has no \"name\"");
    }
    const std::string name = "torch:" + entry["name"].get<std::string>();
    if (entry.contains("error") && entry["error"].is_string()) {
      orders.emplace_back(name, Infeasible("torch refuses: " + entry["error"].get<std::string>()));
      continue;
    }
    if (!entry.contains("csv") || !entry["csv"].is_string()) {
      return InvalidInput(index.string() + ": " + name + " has neither \"csv\" nor \"error\"");
    }
    // A file of DIR itself: a name from the index never reaches outside it ("../x", "/etc/x").
    const std::string csv = entry["csv"].get<std::string>();
    if (csv.empty() || csv == "." || csv == ".." || csv.find('/') != std::string::npos) {
      return InvalidInput(index.string() + ": " + name + ": \"csv\" must name a file in " + dir +
                          ", got \"" + csv + "\"");
    }
    const std::filesystem::path csv_path = std::filesystem::path(dir) / csv;
    std::ifstream csv_in(csv_path);
    if (!csv_in) return NotFound(csv_path.string() + ": cannot read");
    std::ostringstream text;
    text << csv_in.rdbuf();
    orders.emplace_back(
        name, tuner::ScheduleFromTorchCsv(text.str(), csv_path.string(), costs, microbatches));
  }
  return orders;
}

// The options that parse into a TuneRequest, and that parsing (the costs file is read here).
void AddTuneOptions(po::options_description& options) {
  po::options_description_easy_init add = options.add_options();
  add("costs", po::value<std::string>()->required(), "zb-costs/1 file: one stage per rank");
  add("microbatches,m", po::value<int>()->required(), "microbatches per iteration");
  add("mem-limit", po::value<std::string>(),
      "per-rank activation cap: Nx (N x 1F1B's peak), a size in M_B units (KiB/MiB/GiB), none");
  add("family", po::value<std::string>()->default_value("best"),
      "a family (1f1b, 1f1b-i, zb-h1, zb-h2, zb-auto, zb-v, v-half, v-min), best (of the "
      "families) or search (the families, then a search seeded by them)");
  add("time-limit", po::value<double>()->default_value(3),
      "with --family search: seconds to search (0: only --evaluations bounds it)");
  add("evaluations", po::value<int64_t>()->default_value(0),
      "with --family search: simulations to run at most (0: only --time-limit bounds it); the "
      "result is deterministic for a given --seed and --evaluations");
  add("seed", po::value<uint64_t>()->default_value(1), "with --family search: random seed");
  add("placement", po::value<std::string>()->default_value("any"),
      "with --family best: consider loop, v or any placement");
  add("chunks", po::value<int>()->default_value(2), "chunks per rank for 1f1b-i");
  add("layout", po::value<std::string>()->default_value("profile"),
      "the job's stage layout: profile (the one the costs file records, else any), loop:1 (one "
      "stage per rank), loop:V (V per rank, interleaved), v (V placement) or any; other "
      "layouts are shown, never chosen, with what they would gain");
  add("torch-orders", po::value<std::string>(),
      "a directory written by python -m zbkit_harness.torch_orders: torch's built-in schedules as "
      "rows beside the candidates (simulated under the same costs and cap, never chosen)");
  add("runtime", po::value<std::string>()->default_value("torch"),
      "the runtime that replays the schedule: torch (the shim, zb export --format torch-csv: "
      "orders keep its rule, docs/formats.md 4.1) or zbkit (zbkit's executor: any order)");
  add("objective", po::value<std::string>()->default_value("makespan"),
      "with --family best, pick by makespan (from t = 0: one synchronous iteration) or span "
      "(from each rank's first F: iterations overlap, e.g. with optimizer post-validation)");
  add("frontier", po::value<std::string>(),
      "instead of one cap: FROM:TO:STEP cap factors (e.g. 1x:3x:0.125x), the heuristic and the "
      "search side by side at each (--time-limit per cap); stored with --store");
  add("exact",
      "prove the chosen order optimal for its op set, or report the gap (needs Z3; "
      "small instances: at most 400 ops)");
  add("exact-time-limit", po::value<double>()->default_value(10), "with --exact: seconds");
  add("store", po::value<std::string>(), "record the chosen schedule in this SQLite store");
  add("cluster", po::value<std::string>()->default_value("local"), "cluster name in the store");
  add("comm", po::value<std::string>()->default_value("profile"),
      "per-hop time: profile (the costs file's comm) or cluster (the latest hop times zb "
      "rehearse measured on --cluster, from --store)");
  add("job", po::value<std::string>(), "job name in the store (default: the costs file name)");
  add("out,o", po::value<std::string>(), "write the chosen schedule (zb-schedule/1) here");
  add("json", "print the comparison as JSON");
}

// --comm cluster: the median of the cluster's latest hop measurement in the store (`zb rehearse
// --store` records them; docs/rehearse.md) in place of the profile's comm. Why not by default: a
// rehearsal measures with its own message size, a profile with the job's real messages, so only
// the user knows which of the two stands for the job; the note says what was used.
Status UseClusterHops(const po::variables_map& values, tuner::TuneRequest& request,
                      std::string& note) {
  if (!values.count("store")) return UsageError("--comm cluster needs --store DB");
  const std::string store_path = values["store"].as<std::string>();
  const std::string cluster = values["cluster"].as<std::string>();
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(store_path, Store::Mode::kReadOnly));
  ZB_ASSIGN_OR_RETURN(std::optional<HopMeasurement> latest, store.LatestHops(cluster));
  if (!latest) {
    return NotFound(store_path + ": no hop times measured on cluster " + cluster +
                    " (zb rehearse --store " + store_path + " measures them)");
  }
  note = "comm " + FormatMs(latest->MedianTime()) + " ms: the median of " +
         std::to_string(latest->hops.size()) + " hops measured on cluster " + cluster + " (" +
         std::to_string(latest->message_bytes) + " B messages, " + latest->source + ", " +
         latest->measured_at + ") in place of the profile's " + FormatMs(request.costs.comm) +
         " ms";
  request.costs.comm = latest->MedianTime();
  return Status::Ok();
}

Expected<tuner::TuneRequest> ReadTuneRequest(const po::variables_map& values, std::string& note) {
  tuner::TuneRequest request;
  tuner::TuneOptions& options = request.options;
  options.family = values["family"].as<std::string>();
  const std::string placement = values["placement"].as<std::string>();
  if (placement != "any") {
    auto parsed = ParsePlacement(placement);
    if (!parsed) {
      return UsageError("--placement must be loop, v or any, got \"" + placement + "\"");
    }
    options.placement = *parsed;
  }
  const std::string layout = values["layout"].as<std::string>();
  if (layout != "any" && layout != "profile") {
    options.layout = ParseJobLayout(layout);
    if (!options.layout) {
      return UsageError(
          "--layout must be profile, loop:1, loop:V (V stages per rank), v or any, got \"" +
          layout + "\"");
    }
  }
  const std::string runtime = values["runtime"].as<std::string>();
  auto parsed_runtime = tuner::ParseReplayRuntime(runtime);
  if (!parsed_runtime) {
    return UsageError("--runtime must be torch or zbkit, got \"" + runtime + "\"");
  }
  options.runtime = *parsed_runtime;
  const std::string objective = values["objective"].as<std::string>();
  auto parsed_objective = tuner::ParseObjective(objective);
  if (!parsed_objective) {
    return UsageError("--objective must be makespan or span, got \"" + objective + "\"");
  }
  options.objective = *parsed_objective;
  options.search.time_limit_s = values["time-limit"].as<double>();
  options.search.max_evaluations = values["evaluations"].as<int64_t>();
  options.search.seed = values["seed"].as<uint64_t>();
  if (!(options.search.time_limit_s >= 0) || options.search.max_evaluations < 0) {
    return UsageError("--time-limit and --evaluations must be >= 0");
  }
  if (options.search.time_limit_s == 0 && options.search.max_evaluations == 0) {
    return UsageError("--time-limit 0 needs --evaluations N > 0 (the search needs a bound)");
  }
  options.interleave_chunks = values["chunks"].as<int>();
  if (options.interleave_chunks < 1) return UsageError("--chunks must be >= 1");
  if (values.count("frontier") > 0) {
    if (values.count("mem-limit") > 0) {
      return UsageError("--frontier gives the caps: drop --mem-limit");
    }
  } else if (values.count("mem-limit") == 0) {
    return UsageError("--mem-limit is required (or --frontier FROM:TO:STEP)");
  } else {
    ZB_ASSIGN_OR_RETURN(options.memory_limit,
                        tuner::ParseMemoryLimit(values["mem-limit"].as<std::string>()));
  }
  request.costs_name = values["costs"].as<std::string>();
  ZB_ASSIGN_OR_RETURN(request.costs, ReadCostsFile(request.costs_name));
  // By default the job's own layout, as its profile recorded it: what it replays unedited.
  if (layout == "profile" && request.costs.layout) {
    options.layout = request.costs.layout;
    request.layout_from_profile = true;
  }
  if (options.layout && options.layout->placement == Placement::kLoop &&
      options.layout->chunks > 1) {
    options.interleave_chunks = options.layout->chunks;  // the 1f1b-i candidate the job can run
  }
  const std::string comm = values["comm"].as<std::string>();
  if (comm == "cluster") {
    ZB_RETURN_IF_ERROR(UseClusterHops(values, request, note));
  } else if (comm != "profile") {
    return UsageError("--comm must be profile or cluster, got \"" + comm + "\"");
  }
  request.microbatches = values["microbatches"].as<int>();
  if (values.count("torch-orders")) {
    ZB_ASSIGN_OR_RETURN(options.reference_orders,
                        ReadTorchOrders(values["torch-orders"].as<std::string>(), request.costs,
                                        request.microbatches));
  }
  if (values.count("store")) {
    request.store = tuner::StoreTarget{
        values["store"].as<std::string>(), values["cluster"].as<std::string>(),
        values.count("job") ? values["job"].as<std::string>()
                            : std::filesystem::path(request.costs_name).stem().string()};
  }
  if (values.count("exact")) {
    request.exact = tuner::ExactOptions{};
    request.exact->time_limit_s = values["exact-time-limit"].as<double>();
  }
  return request;
}

int RunFrontier(const tuner::TuneRequest& request, const po::variables_map& values, bool json,
                ProgressBar& progress, std::ostream& out, std::ostream& err) {
  const std::string command = "tune";
  auto factors = tuner::ParseFrontierGrid(values["frontier"].as<std::string>());
  if (!factors.ok()) return ReportError(err, command, factors.status());
  tuner::TuneRequest per_cap = request;
  int done = 0;
  if (!json && progress.active()) {
    per_cap.options.search.progress = [&](double share, TimeNs best) {
      progress.Show((done + share) / static_cast<double>(factors->size()),
                    "cap " + std::to_string(done + 1) + "/" + std::to_string(factors->size()) +
                        " best " + FormatMs(best) + " ms");
      if (share >= 1) ++done;
    };
  }
  auto outcome = tuner::ComputeFrontier(per_cap, *factors);
  progress.Finish();
  if (!outcome.ok()) return ReportError(err, command, outcome.status());
  std::optional<int64_t> frontier_id;
  if (request.store) {
    int64_t id = 0;
    Status stored = tuner::StoreFrontier(request, *request.store, *outcome, id);
    if (!stored.ok()) return ReportError(err, command, stored);
    frontier_id = id;
  }
  const std::vector<FrontierPoint>& points = outcome->frontier.points;
  bool heuristic_complete = false, search_complete = false;
  const double heuristic_area = tuner::FrontierArea(points, "heuristic", heuristic_complete);
  const double search_area = tuner::FrontierArea(points, "search", search_complete);
  if (json) {
    nlohmann::json report = {
        {"format", "zb-frontier-report/1"},         {"ranks", request.costs.num_stages()},
        {"microbatches", request.microbatches},     {"objective", outcome->frontier.objective},
        {"placement", outcome->frontier.placement}, {"points", nlohmann::json::array()}};
    for (const FrontierPoint& point : points) {
      nlohmann::json entry = {{"method", point.method},
                              {"cap_factor", point.cap_factor},
                              {"cap", point.cap},
                              {"fits", point.fits}};
      if (point.fits) {
        entry["makespan"] = NsToMs(point.makespan);
        entry["span"] = NsToMs(point.span);
        entry["bubble_rate"] = point.bubble_rate;
        entry["paper_bubble_rate"] = point.paper_bubble_rate;
      }
      if (point.schedule_id) entry["schedule_id"] = *point.schedule_id;
      report["points"].push_back(entry);
    }
    if (heuristic_complete) report["area_heuristic"] = heuristic_area;
    if (search_complete) report["area_search"] = search_area;
    if (frontier_id) report["frontier_id"] = *frontier_id;
    out << report.dump(2) << "\n";
    return 0;
  }
  out << "frontier p=" << request.costs.num_stages() << " m=" << request.microbatches << " by "
      << outcome->frontier.objective << ", search placement " << outcome->frontier.placement << " ("
      << request.costs_name
      << "): bubble = idle share of p x span (uniform stages: the paper's rate)\n";
  TextTable table(
      {"cap", "cap_abs", "zb-auto", "zb-auto_span_ms", "search", "search_span_ms", "placement"});
  for (size_t i = 0; i + 1 < points.size(); i += 2) {
    const FrontierPoint& heuristic = points[i];
    const FrontierPoint& search = points[i + 1];
    const Schedule* found = outcome->schedules[i + 1] ? &*outcome->schedules[i + 1] : nullptr;
    table.AddRow({FormatFixed(heuristic.cap_factor, 3) + "x", FormatFixed(heuristic.cap, 0),
                  heuristic.fits ? FormatFixed(heuristic.paper_bubble_rate, 4) : "-",
                  heuristic.fits ? FormatMs(heuristic.span) : "does not fit",
                  search.fits ? FormatFixed(search.paper_bubble_rate, 4) : "-",
                  search.fits ? FormatMs(search.span) : "does not fit",
                  found ? PlacementName(found->placement) : "-"});
  }
  table.Render(out);
  if (heuristic_complete && search_complete && heuristic_area > 0) {
    out << "area under the curve: zb-auto " << FormatFixed(heuristic_area, 4) << ", search "
        << FormatFixed(search_area, 4) << " ("
        << FormatFixed(100 * (1 - search_area / heuristic_area), 1) << "% below)\n";
  }
  if (frontier_id) {
    out << "stored as frontier " << *frontier_id << " in " << request.store->path
        << " (zbview --frontier " << *frontier_id << " --store " << request.store->path << ")\n";
  }
  return 0;
}

// Why nothing was chosen, in one line: a cap below what any order needs; or the job's layout,
// when a family of another layout fits the cap (memory is then not the cause: say which family,
// what it needs and how to get it); else the cap, pointing at the table's peak/1F1B column.
Status NothingFits(const tuner::TuneOutcome& outcome, const tuner::TuneRequest& request,
                   const std::string& limit) {
  const std::string below = tuner::CapBelowOneMicrobatch(
      request.costs, outcome.rows.empty() ? std::vector<double>{} : outcome.rows[0].caps,
      tuner::MostChunks(request.options));
  if (!below.empty()) return Infeasible("no schedule fits --mem-limit " + limit + ": " + below);
  if (!request.options.layout) {
    return Infeasible("no schedule fits --mem-limit " + limit +
                      "; the peak/1F1B column shows what each family needs");
  }
  const std::string layout = JobLayoutName(*request.options.layout);
  for (const tuner::ComparisonRow& row : outcome.rows) {
    if (!row.status.ok() || !row.fits || !row.other_layout || row.reference) continue;
    const JobLayout other{row.placement.value_or(Placement::kLoop), row.chunks};
    const double needs = row.peak_over_1f1b.empty() ? 0
                                                    : *std::max_element(row.peak_over_1f1b.begin(),
                                                                        row.peak_over_1f1b.end());
    return Infeasible("no schedule of layout " + layout +
                      (request.layout_from_profile ? " (the profile's)" : "") +
                      " fits --mem-limit " + limit + "; " + row.family + " fits it (needs " +
                      FormatFixed(needs, 2) + "x) in layout " + JobLayoutName(other) +
                      ": tune with --layout " + JobLayoutName(other) +
                      " (or any) and run the job with " + JobLayoutDescription(other));
  }
  return Infeasible(
      "no schedule fits --mem-limit " + limit + " in layout " + layout +
      (request.layout_from_profile ? " (the profile's: --layout any lifts it);" : ";") +
      " the peak/1F1B column shows what each family needs");
}

constexpr char kTuneExamples[] =
    "examples:\n"
    "  zb tune --costs costs.json -m 8 --mem-limit 2x --store zb.db --out tuned.json\n"
    "      every family under twice 1F1B's activation memory; the fastest that fits is kept\n"
    "  zb tune --costs costs.json -m 8 --mem-limit 1x --family search --layout any\n"
    "      the search, at 1F1B's memory, in any layout (not only the profile's)\n";

}  // namespace

int RunTuneCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "tune";
  po::options_description options("options");
  AddTuneOptions(options);
  po::variables_map values;
  int exit_code = 0;
  if (!ParseCommandLine(command,
                        "--costs FILE --microbatches M (--mem-limit L | --frontier FROM:TO:STEP) "
                        "[options]",
                        args, options, {}, values, out, err, exit_code, kTuneExamples)) {
    return exit_code;
  }
  std::string note;
  auto request = ReadTuneRequest(values, note);
  if (!request.ok()) return ReportError(err, command, request.status());
  if (!note.empty()) err << "zb tune: " << note << "\n";
  const bool json = values.count("json") > 0;
  ProgressBar progress(err, "search");
  if (values.count("frontier") > 0) {
    if (values.count("out") > 0) {
      return ReportError(err, command, UsageError("--out takes one schedule: not with --frontier"));
    }
    return RunFrontier(*request, values, json, progress, out, err);
  }
  if (!json && progress.active()) {
    request->options.search.progress = [&progress](double done, TimeNs best) {
      progress.Show(done, "best " + FormatMs(best) + " ms");
    };
  }
  // Compare first and store after printing, so the table shows even when the store fails.
  auto outcome = tuner::TuneAndCompare(*request);
  progress.Finish();
  if (!outcome.ok()) return ReportError(err, command, outcome.status());

  if (!json) {
    out << "p=" << outcome->ranks << " m=" << outcome->microbatches
        << " comm=" << FormatMs(request->costs.comm) << "ms mem-limit=" << outcome->memory_limit
        << (outcome->objective == Objective::kSpan ? " objective=span" : "") << " ("
        << request->costs_name << ")\n";
    PrintTable(*outcome, out);
  }
  nlohmann::json report = ReportJson(*outcome);
  // The layout the chosen row keeps to (null: any) and whether the profile gave it.
  report["layout"] = request->options.layout
                         ? nlohmann::json(JobLayoutName(*request->options.layout))
                         : nlohmann::json(nullptr);
  report["layout_from_profile"] = request->layout_from_profile;
  if (outcome->best < 0) {
    if (json) out << report.dump(2) << "\n";
    return ReportError(err, command,
                       NothingFits(*outcome, *request, values["mem-limit"].as<std::string>()));
  }
  Status finished = tuner::CertifyAndStore(*request, *outcome);
  if (!finished.ok()) return ReportError(err, command, finished);
  const std::optional<tuner::ExactResult>& exact = outcome->exact;
  if (exact) {
    report["exact"] = {{"optimal", exact->optimal},
                       {"lower", NsToMs(exact->lower)},
                       {"upper", NsToMs(exact->upper)},
                       {"seconds", exact->seconds},
                       {"probes", exact->probes}};
  }
  if (values.count("out")) {
    Status written =
        WriteFileAtomically(values["out"].as<std::string>(), ScheduleToJson(*outcome->chosen));
    if (!written.ok()) return ReportError(err, command, written);
  }
  if (json) {
    if (outcome->schedule_id) report["schedule_id"] = *outcome->schedule_id;
    if (values.count("out")) report["out"] = values["out"].as<std::string>();
    out << report.dump(2) << "\n";
    return 0;
  }
  PrintTextSummary(*outcome, values, out);
  if (request->options.layout) PrintLayoutAdvice(*outcome, *request, out);
  if (exact) {
    out << "exact (" << tuner::ObjectiveName(outcome->objective) << "): "
        << (exact->optimal
                ? "optimal, " + FormatMs(exact->upper) + " ms"
                : "best " + FormatMs(exact->upper) + " ms, proved >= " + FormatMs(exact->lower) +
                      " ms (gap " +
                      FormatFixed(100.0 * static_cast<double>(exact->upper - exact->lower) /
                                      static_cast<double>(exact->upper),
                                  2) +
                      "%)")
        << " in " << FormatFixed(exact->seconds, 1) << " s, " << exact->probes
        << " solver calls (each op type in microbatch order per stage)\n";
  }
  return 0;
}

}  // namespace zb::cli
