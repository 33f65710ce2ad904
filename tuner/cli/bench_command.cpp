// SPDX-License-Identifier: Apache-2.0
// zb bench paper [--json]: the ZB paper's Table 5 recomputed next to the published values.
// zb bench search [--time-limit S] [--random N] [--exact N] [--seed K] [--json]: the search
// against the paper's heuristic (search_bench.h).
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "tuner_commands.h"
#include "zbkit/cli/progress_bar.h"
#include "zbkit/cli/text_table.h"
#include "zbkit/tuner/paper_bench.h"
#include "zbkit/tuner/search_bench.h"

namespace zb::cli {
namespace {

int RunPaperBench(bool json, std::ostream& out, std::ostream& err) {
  auto rows = tuner::ComputePaperTable5();
  if (!rows.ok()) return ReportError(err, "bench paper", rows.status());
  int mismatches = 0;
  auto matches = [](double computed, double published) {
    return std::fabs(std::round(computed * 1e4) / 1e4 - published) < 1e-9;
  };
  for (const auto& row : *rows) {
    for (int k = 0; k < tuner::kNumPaperSchedules; ++k) {
      mismatches += matches(row.computed[k], row.published[k]) ? 0 : 1;
    }
  }
  if (json) {
    nlohmann::json report = {{"format", "zb-bench-paper/1"},
                             {"table", "ICLR 2024 Table 5, bubble rates"},
                             {"rows", nlohmann::json::array()},
                             {"mismatches", mismatches}};
    for (const auto& row : *rows) {
      nlohmann::json entry = {{"model", row.model}, {"p", row.p}, {"m", row.m}};
      for (int k = 0; k < tuner::kNumPaperSchedules; ++k) {
        entry[tuner::kPaperSchedules[k]] = {{"published", row.published[k]},
                                            {"computed", row.computed[k]}};
      }
      entry["1F1B-I strict"] = row.interleaved_strict;
      report["rows"].push_back(entry);
    }
    out << report.dump(2) << "\n";
  } else {
    out << "ICLR 2024 Table 5 bubble rates from Table 6 costs: published / computed by zbkit\n";
    std::vector<std::string> header = {"model"};
    for (const char* name : tuner::kPaperSchedules)
      header.push_back(name);
    header.push_back("1F1B-I strict");
    TextTable table(header);
    for (const auto& row : *rows) {
      std::vector<std::string> cells = {row.model + " p" + std::to_string(row.p) + " m" +
                                        std::to_string(row.m)};
      for (int k = 0; k < tuner::kNumPaperSchedules; ++k) {
        cells.push_back(FormatFixed(row.published[k], 4) + " / " + FormatFixed(row.computed[k], 4) +
                        (matches(row.computed[k], row.published[k]) ? "" : " !"));
      }
      cells.push_back(FormatFixed(row.interleaved_strict, 4));
      table.AddRow(cells);
    }
    table.Render(out);
    out << "1F1B-I: the published column enforces the wrap-around dependency only for the first "
           "microbatch of each group of p (the authors' script); \"strict\" enforces it always.\n";
    out << (mismatches == 0 ? "all " + std::to_string(rows->size() * tuner::kNumPaperSchedules) +
                                  " values match the published table to 4 decimals\n"
                            : std::to_string(mismatches) + " values differ (marked !)\n");
  }
  if (mismatches > 0) {
    return ReportError(err, "bench paper",
                       InternalError(std::to_string(mismatches) +
                                     " recomputed values differ from the published table"));
  }
  return 0;
}

std::string Rate(const std::optional<double>& rate) {
  return rate ? FormatFixed(*rate, 4) : "-";
}

std::string Percent(double fraction) {
  return FormatFixed(100 * fraction, 1) + "%";
}

nlohmann::json OptionalJson(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json SettingJson(const tuner::SearchBenchSetting& setting) {
  nlohmann::json entry = {{"name", setting.name},
                          {"p", setting.p},
                          {"m", setting.m},
                          {"area_heuristic", OptionalJson(setting.area_heuristic)},
                          {"area_search_loop", OptionalJson(setting.area_loop)},
                          {"area_search_any", OptionalJson(setting.area_any)},
                          {"points", nlohmann::json::array()}};
  for (const tuner::SearchBenchPoint& point : setting.points) {
    entry["points"].push_back({{"cap", point.cap_factor},
                               {"heuristic", OptionalJson(point.heuristic)},
                               {"search_loop", OptionalJson(point.search_loop)},
                               {"search_any", OptionalJson(point.search_any)},
                               {"search_any_placement", point.any_placement},
                               {"heuristic_span_ms", NsToMs(point.heuristic_span)},
                               {"search_loop_span_ms", NsToMs(point.loop_span)},
                               {"search_any_span_ms", NsToMs(point.any_span)},
                               {"t_over_lb", point.t_over_lb},
                               {"seconds", point.seconds}});
  }
  return entry;
}

// The table of one group of instances: one row per (instance, cap). Uniform stages (the paper
// settings) compare by bubble rate; uneven ones by span, since an interleaved or V layout moves
// work between ranks and so changes what a rate is relative to.
void RenderSettings(const std::vector<tuner::SearchBenchSetting>& settings, bool by_span,
                    std::ostream& out) {
  const std::string unit = by_span ? " span_ms" : "";
  TextTable table({"instance", "cap", "zb-auto" + unit, "search loop" + unit, "search any" + unit,
                   "placement", "T/LB", "seconds"});
  auto span = [](TimeNs value) { return value > 0 ? FormatMs(value) : "-"; };
  for (const auto& setting : settings) {
    for (const auto& point : setting.points) {
      std::vector<std::string> cells = {setting.name, FormatFixed(point.cap_factor, 3) + "x"};
      if (by_span) {
        cells.insert(cells.end(),
                     {span(point.heuristic_span), span(point.loop_span), span(point.any_span)});
      } else {
        cells.insert(cells.end(),
                     {Rate(point.heuristic), Rate(point.search_loop), Rate(point.search_any)});
      }
      cells.insert(cells.end(), {point.any_placement.empty() ? "-" : point.any_placement,
                                 FormatFixed(point.t_over_lb, 3), FormatFixed(point.seconds, 1)});
      table.AddRow(cells);
    }
  }
  table.Render(out);
}

// The search's targets (docs/search.md: never worse than the heuristic, its bubble at any
// placement and 1x), measured over the report.
struct SearchTargets {
  int worse_than_heuristic = 0;  // points where a search is above zb-auto
  int worse_at_larger_cap = 0;   // a search's rate above its rate at a smaller cap
  double area_heuristic = 0;     // summed over the paper settings
  double area_loop = 0;
  double area_any = 0;
  double worst_any_at_1x = 0;      // the largest search-any bubble at the first cap
  double mean_span_drop_loop = 0;  // random instances, vs zb-auto, where zb-auto fits
  double mean_span_drop_any = 0;
  int random_longer = 0;  // random points where a search's span exceeds zb-auto's
  int random_compared = 0;
  int exact_solved = 0;
  double worst_t_over_opt = 0;
};

SearchTargets Measure(const tuner::SearchBenchReport& report) {
  SearchTargets targets;
  // By span, the objective (0 = nothing of that method fits).
  auto check = [&](const tuner::SearchBenchSetting& setting) {
    TimeNs last_loop = 0, last_any = 0;
    for (const auto& point : setting.points) {
      for (TimeNs span : {point.loop_span, point.any_span}) {
        if (point.heuristic_span > 0 && (span == 0 || span > point.heuristic_span)) {
          ++targets.worse_than_heuristic;
        }
      }
      if (last_loop > 0 && (point.loop_span == 0 || point.loop_span > last_loop)) {
        ++targets.worse_at_larger_cap;
      }
      if (last_any > 0 && (point.any_span == 0 || point.any_span > last_any)) {
        ++targets.worse_at_larger_cap;
      }
      last_loop = point.loop_span;
      last_any = point.any_span;
    }
  };
  for (const auto& setting : report.paper) {
    check(setting);
    targets.area_heuristic += setting.area_heuristic.value_or(0);
    targets.area_loop += setting.area_loop.value_or(0);
    targets.area_any += setting.area_any.value_or(0);
    if (!setting.points.empty() && setting.points.front().search_any) {
      targets.worst_any_at_1x =
          std::max(targets.worst_any_at_1x, *setting.points.front().search_any);
    }
  }
  double drop_loop = 0, drop_any = 0;
  for (const auto& setting : report.random) {
    check(setting);
    for (const auto& point : setting.points) {
      if (point.heuristic_span == 0) continue;
      ++targets.random_compared;
      const double h = static_cast<double>(point.heuristic_span);
      drop_loop += 1 - static_cast<double>(point.loop_span) / h;
      drop_any += 1 - static_cast<double>(point.any_span) / h;
      if (point.loop_span > point.heuristic_span || point.any_span > point.heuristic_span) {
        ++targets.random_longer;
      }
    }
  }
  if (targets.random_compared > 0) {
    targets.mean_span_drop_loop = drop_loop / targets.random_compared;
    targets.mean_span_drop_any = drop_any / targets.random_compared;
  }
  for (const auto& exact : report.exact) {
    if (!exact.optimal) continue;
    ++targets.exact_solved;
    targets.worst_t_over_opt =
        std::max(targets.worst_t_over_opt,
                 static_cast<double>(exact.search) / static_cast<double>(exact.upper));
  }
  return targets;
}

int RunSearchBench(const po::variables_map& values, std::ostream& out, std::ostream& err) {
  tuner::SearchBenchOptions options;
  options.time_limit_s = values["time-limit"].as<double>();
  options.random_instances = values["random"].as<int>();
  options.exact_instances = values["exact"].as<int>();
  options.seed = values["seed"].as<uint64_t>();
  if (!(options.time_limit_s > 0) || options.random_instances < 0 || options.exact_instances < 0) {
    return ReportError(err, "bench search",
                       UsageError("--time-limit must be > 0, --random and --exact >= 0"));
  }
  ProgressBar progress(err, "bench search");
  const double total =
      12.0 * options.cap_factors.size() + 2.0 * options.random_instances + options.exact_instances;
  int done = 0;
  options.progress = [&](const std::string& what) { progress.Show(++done / total, what); };
  auto report = tuner::RunSearchBench(options);
  progress.Finish();
  if (!report.ok()) return ReportError(err, "bench search", report.status());
  const SearchTargets targets = Measure(*report);
  const double loop_gain =
      targets.area_heuristic > 0 ? 1 - targets.area_loop / targets.area_heuristic : 0;
  const double any_gain =
      targets.area_heuristic > 0 ? 1 - targets.area_any / targets.area_heuristic : 0;
  if (values.count("json")) {
    nlohmann::json json = {{"format", "zb-bench-search/1"},
                           {"time_limit_s", options.time_limit_s},
                           {"seed", options.seed},
                           {"paper", nlohmann::json::array()},
                           {"random", nlohmann::json::array()},
                           {"exact", nlohmann::json::array()},
                           {"exact_available", report->exact_available}};
    for (const auto& setting : report->paper)
      json["paper"].push_back(SettingJson(setting));
    for (const auto& setting : report->random)
      json["random"].push_back(SettingJson(setting));
    for (const auto& exact : report->exact) {
      json["exact"].push_back({{"name", exact.name},
                               {"search_ms", NsToMs(exact.search)},
                               {"lower_ms", NsToMs(exact.lower)},
                               {"upper_ms", NsToMs(exact.upper)},
                               {"optimal", exact.optimal},
                               {"seconds", exact.seconds}});
    }
    json["targets"] = {{"worse_than_heuristic", targets.worse_than_heuristic},
                       {"worse_at_larger_cap", targets.worse_at_larger_cap},
                       {"area_drop_loop", loop_gain},
                       {"area_drop_any", any_gain},
                       {"worst_any_bubble_at_1x", targets.worst_any_at_1x},
                       {"random_mean_span_drop_loop", targets.mean_span_drop_loop},
                       {"random_mean_span_drop_any", targets.mean_span_drop_any},
                       {"random_longer", targets.random_longer},
                       {"exact_solved", targets.exact_solved},
                       {"worst_t_over_opt", targets.worst_t_over_opt}};
    out << json.dump(2) << "\n";
    return 0;
  }
  out << "paper bubble rates (span from each rank's first F), the paper's 12 settings (Table 6 "
         "costs), search "
      << FormatFixed(options.time_limit_s, 1) << " s per cap and placement, seed " << options.seed
      << "\n";
  RenderSettings(report->paper, false, out);
  out << "\nrandom uneven instances (first and last stage 40% heavier), seed " << options.seed
      << "\n";
  RenderSettings(report->random, true, out);
  if (!report->exact_available) {
    out << "\nexact: zbkit was built without Z3 (install libz3-dev and rebuild)\n";
  } else if (!report->exact.empty()) {
    out << "\nsmall random instances, loop placement, span: search vs the exact solver\n";
    TextTable table(
        {"instance", "search_ms", "lower_ms", "upper_ms", "T/OPT", "proved", "seconds"});
    for (const auto& exact : report->exact) {
      table.AddRow(
          {exact.name, FormatMs(exact.search), FormatMs(exact.lower), FormatMs(exact.upper),
           exact.optimal
               ? FormatFixed(static_cast<double>(exact.search) / static_cast<double>(exact.upper),
                             4)
               : "-",
           exact.optimal ? "optimal" : "gap", FormatFixed(exact.seconds, 1)});
    }
    table.Render(out);
  }
  out << "\ntargets:\n"
      << "  never worse than zb-auto (by span): "
      << (targets.worse_than_heuristic == 0 ? "yes" : "NO") << " (" << targets.worse_than_heuristic
      << " points worse)\n"
      << "  never worse at a larger cap: " << (targets.worse_at_larger_cap == 0 ? "yes" : "NO")
      << "\n"
      << "  area under the bubble curve " << FormatFixed(options.cap_factors.front(), 2) << "x.."
      << FormatFixed(options.cap_factors.back(), 2) << "x, paper settings: zb-auto "
      << FormatFixed(targets.area_heuristic, 4) << ", search loop "
      << FormatFixed(targets.area_loop, 4) << " (" << Percent(loop_gain) << " below), search any "
      << FormatFixed(targets.area_any, 4) << " (" << Percent(any_gain) << " below)\n"
      << "  search any at " << FormatFixed(options.cap_factors.front(), 2) << "x: worst bubble "
      << Percent(targets.worst_any_at_1x) << "\n"
      << "  random instances at 1x and 1.5x (" << targets.random_compared
      << " where zb-auto fits): mean span " << Percent(targets.mean_span_drop_loop)
      << " below zb-auto (loop), " << Percent(targets.mean_span_drop_any)
      << " (any); longer: " << targets.random_longer << "\n";
  if (report->exact_available) {
    out << "  exact: " << targets.exact_solved << " of " << report->exact.size()
        << " proved optimal; worst T/OPT " << FormatFixed(targets.worst_t_over_opt, 4) << "\n";
  }
  return 0;
}

}  // namespace

int RunBenchCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "bench";
  po::options_description options("options");
  po::options_description_easy_init add = options.add_options();
  add("what", po::value<std::string>()->required(), "which benchmark: paper or search");
  add("json", "print JSON");
  add("time-limit", po::value<double>()->default_value(1), "search: seconds per search");
  add("random", po::value<int>()->default_value(12), "search: random uneven instances");
  add("exact", po::value<int>()->default_value(6),
      "search: small random instances to solve exactly (needs Z3)");
  add("seed", po::value<uint64_t>()->default_value(1), "search: random seed");
  po::positional_options_description positional;
  positional.add("what", 1);
  po::variables_map values;
  int exit_code = 0;
  const std::string example =
      "examples:\n  zb bench paper\n      the paper's Table 5 recomputed next to the published "
      "values\n  zb bench search --random 4 --exact 0 --time-limit 0.5\n      the search against "
      "the "
      "paper's heuristic on a few random instances\n";
  if (!ParseCommandLine(command, "paper|search [options] [--json]", args, options, positional,
                        values, out, err, exit_code, example)) {
    return exit_code;
  }
  const std::string what = values["what"].as<std::string>();
  if (what == "paper") return RunPaperBench(values.count("json") > 0, out, err);
  if (what == "search") return RunSearchBench(values, out, err);
  return ReportError(err, command,
                     UsageError("unknown benchmark \"" + what + "\" (known: paper, search)"));
}

}  // namespace zb::cli
