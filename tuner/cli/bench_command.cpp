// SPDX-License-Identifier: Apache-2.0
// zb bench paper [--json]: the ZB paper's Table 5 recomputed next to the published values.
#include <cmath>
#include <nlohmann/json.hpp>

#include "tuner_commands.h"
#include "zbkit/cli/text_table.h"
#include "zbkit/tuner/paper_bench.h"

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

}  // namespace

int RunBenchCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "bench";
  po::options_description options("options");
  po::options_description_easy_init add = options.add_options();
  add("what", po::value<std::string>()->required(), "which benchmark: paper");
  add("json", "print JSON");
  po::positional_options_description positional;
  positional.add("what", 1);
  po::variables_map values;
  int exit_code = 0;
  if (!ParseCommandLine(command, "paper [--json]", args, options, positional, values, out, err,
                        exit_code)) {
    return exit_code;
  }
  const std::string what = values["what"].as<std::string>();
  if (what == "paper") return RunPaperBench(values.count("json") > 0, out, err);
  return ReportError(err, command, UsageError("unknown benchmark \"" + what + "\" (known: paper)"));
}

}  // namespace zb::cli
