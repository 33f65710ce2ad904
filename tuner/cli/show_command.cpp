// SPDX-License-Identifier: Apache-2.0
// zb show (FILE | --store DB --schedule ID) [--width N] [--json]: a per-rank text timeline of a
// schedule and its summary figures.
#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "tuner_commands.h"
#include "zbkit/cli/schedule_source.h"
#include "zbkit/cli/text_table.h"
#include "zbkit/schemas/store.h"
#include "zbkit/tuner/lower_bound.h"
#include "zbkit/tuner/simulator.h"

namespace zb::cli {
namespace {

// One line per rank: each op drawn as its kind letter, its microbatch number where it fits and
// '-' for the rest of its length; '.' is idle. Chunk 1 and above are drawn in lower case, so the
// two halves of a V schedule can be told apart. An op shorter than one column still gets one.
std::vector<std::string> RenderLanes(const Schedule& schedule, int width) {
  const TimeNs makespan = std::max<TimeNs>(schedule.predicted->makespan, 1);
  std::vector<std::string> lanes;
  for (const RankProgram& program : schedule.programs) {
    std::string lane(static_cast<size_t>(width), '.');
    for (const Op& op : program.ops) {
      int first = static_cast<int>(static_cast<double>(op.start) * width / makespan);
      int last = static_cast<int>(static_cast<double>(op.end) * width / makespan) - 1;
      first = std::clamp(first, 0, width - 1);
      last = std::clamp(std::max(last, first), first, width - 1);
      std::string label = OpKindName(op.kind) == std::string("BW") ? "X" : OpKindName(op.kind);
      if (op.chunk > 0) label[0] = static_cast<char>(std::tolower(label[0]));
      label += std::to_string(op.microbatch);
      for (int c = first; c <= last; ++c) {
        const int offset = c - first;
        const bool label_fits = static_cast<int>(label.size()) <= last - first + 1;
        lane[c] = offset == 0                                               ? label[0]
                  : (label_fits && offset < static_cast<int>(label.size())) ? label[offset]
                                                                            : '-';
      }
    }
    lanes.push_back(lane);
  }
  return lanes;
}

}  // namespace

int RunShowCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "show";
  po::options_description options("options");
  po::positional_options_description positional;
  AddScheduleSourceOptions(options, positional);
  po::options_description_easy_init add = options.add_options();
  add("width", po::value<int>()->default_value(120), "columns of the text timeline");
  add("json", "print the summary as JSON instead");
  po::variables_map values;
  int exit_code = 0;
  const std::string example =
      "example:\n  zb show --store zb.db --schedule 3 --width 120\n      each rank's ops as text, "
      "with the schedule's summary\n";
  if (!ParseCommandLine(command, "(FILE | --store DB --schedule ID) [options]", args, options,
                        positional, values, out, err, exit_code, example)) {
    return exit_code;
  }
  const int width = values["width"].as<int>();
  if (width < 10 || width > 100000) {
    return ReportError(err, command, UsageError("--width must be in [10, 100000]"));
  }
  auto loaded = LoadScheduleFromArguments(values);
  if (!loaded.ok()) return ReportError(err, command, loaded.status());
  Schedule& schedule = *loaded;
  // Re-simulate: a file may carry no times, and the per-rank figures come from the simulator.
  tuner::Simulator simulator;
  Status simulated = simulator.Run(schedule);
  if (!simulated.ok()) {
    return ReportError(err, command, simulated.WithContext(ScheduleSourceName(values)));
  }
  const Prediction& predicted = *schedule.predicted;
  // T/LB divides by the bound under the cap the schedule was tuned for (docs/bubbles.md §4), as
  // zb tune and zbview do: the store keeps it; a zb-schedule/1 file does not, and then the bound
  // has no cap (and the line says so).
  std::optional<double> cap;
  if (values.count("store")) {
    auto store = Store::Open(values["store"].as<std::string>(), Store::Mode::kReadOnly);
    auto info = store.ok() ? store->LoadScheduleInfo(values["schedule"].as<int64_t>())
                           : Expected<ScheduleInfo>(store.status());
    if (!info.ok()) return ReportError(err, command, info.status());
    cap = info->cap;
  }
  const std::vector<double> caps(cap ? schedule.ranks : 0, cap.value_or(0));
  const tuner::LowerBounds bounds = tuner::ComputeLowerBounds(
      schedule.costs, schedule.ranks, schedule.microbatches, schedule.placement, caps);
  const double t_over_lb =
      bounds.makespan > 0 ? static_cast<double>(predicted.makespan) / bounds.makespan : 0;

  if (values.count("json")) {
    nlohmann::json summary = {{"format", "zb-show/1"},
                              {"family", schedule.family},
                              {"stages", schedule.ranks},
                              {"microbatches", schedule.microbatches},
                              {"chunks", schedule.chunks},
                              {"placement", PlacementName(schedule.placement)},
                              {"makespan", NsToMs(predicted.makespan)},
                              {"span", NsToMs(predicted.span)},
                              {"bubble_rate", predicted.bubble_rate},
                              {"paper_bubble_rate", predicted.paper_bubble_rate},
                              {"lower_bound", NsToMs(bounds.makespan)},
                              {"t_over_lb", t_over_lb},
                              {"cap", cap ? nlohmann::json(*cap) : nlohmann::json(nullptr)},
                              {"ranks", nlohmann::json::array()}};
    for (int r = 0; r < schedule.ranks; ++r) {
      const tuner::RankFigures& figures = simulator.ranks()[r];
      summary["ranks"].push_back({{"rank", r},
                                  {"busy", NsToMs(figures.busy)},
                                  {"end", NsToMs(figures.end)},
                                  {"first_f_start", NsToMs(figures.first_f_start)},
                                  {"peak_memory", figures.peak_memory}});
    }
    out << summary.dump(2) << "\n";
    return 0;
  }

  out << (schedule.family.empty() ? "schedule" : schedule.family) << ": p=" << schedule.ranks
      << " m=" << schedule.microbatches << " chunks=" << schedule.chunks
      << " placement=" << PlacementName(schedule.placement) << "\n";
  out << "time 0 .. " << FormatMs(predicted.makespan) << " ms, "
      << FormatFixed(static_cast<double>(predicted.makespan) / 1e6 / width, 3)
      << " ms per column; F/B/W forward/input-grad/weight-grad, X fused BW, lower case = chunk "
         ">= 1, . idle\n";
  const std::vector<std::string> lanes = RenderLanes(schedule, width);
  for (int r = 0; r < schedule.ranks; ++r) {
    out << "rank " << r << (r < 10 ? "  " : " ") << "|" << lanes[r] << "|\n";
  }
  out << "\n";
  TextTable table({"rank", "busy_ms", "idle_ms", "end_ms", "peak_mem"});
  for (int r = 0; r < schedule.ranks; ++r) {
    const tuner::RankFigures& figures = simulator.ranks()[r];
    table.AddRow({std::to_string(r), FormatMs(figures.busy),
                  FormatMs(predicted.makespan - figures.busy), FormatMs(figures.end),
                  FormatFixed(figures.peak_memory, 0)});
  }
  table.Render(out);
  out << "makespan " << FormatMs(predicted.makespan) << " ms, span " << FormatMs(predicted.span)
      << " ms, bubble " << FormatFixed(predicted.bubble_rate, 4) << " (from t=0), "
      << FormatFixed(predicted.paper_bubble_rate, 4) << " (paper, from each rank's first F), "
      << "T/LB " << FormatFixed(t_over_lb, 3)
      << (cap ? " (bound under the cap " + (std::ostringstream() << *cap).str() + ")"
              : " (bound without memory cap: the file records none)")
      << "\n";
  return 0;
}

}  // namespace zb::cli
