// SPDX-License-Identifier: Apache-2.0
// zb partition --layers FILE --ranks P -m M [--layout L|all] [--mem-limit SIZE] [--json]
//              [--for torchtitan] [--split-out FILE] [--out FILE] [--orders-dir DIR]
// The layer split chosen with the schedule (docs/partition.md): the even split, torchtitan's
// heuristic at its best setting, the min-max split and the co-tuned split, each with its best
// order, side by side; then how to run the fastest.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "tuner_commands.h"
#include "zbkit/cli/output.h"
#include "zbkit/cli/text_table.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/partition.h"
#include "zbkit/tuner/torchtitan_export.h"
#include "zbkit/tuner/tune.h"

namespace zb::cli {
namespace {

using tuner::LayerSplit;
using tuner::SplitEvaluation;

struct LayoutRows {
  JobLayout layout;
  tuner::PartitionResult result;
};

std::string CountsText(const LayerSplit& split) {
  std::string text;
  for (int count : split)
    text += (text.empty() ? "" : " ") + std::to_string(count);
  return text;
}

// "tok_embeddings layers.0-2": a stage's blocks with runs of consecutive repeated ones folded.
std::string StageText(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size();) {
    const auto first = tuner::ParseRepeatedBlockName(names[i]);
    size_t end = i + 1;
    for (; first && end < names.size(); ++end) {
      const auto next = tuner::ParseRepeatedBlockName(names[end]);
      if (!next || next->prefix != first->prefix ||
          next->index != first->index + static_cast<int>(end - i)) {
        break;
      }
    }
    text += (text.empty() ? "" : " ") + names[i];
    if (end - i > 1) text += "-" + std::to_string(first->index + static_cast<int>(end - i) - 1);
    i = end;
  }
  return text;
}

// "full 12, none 7": how many blocks of a row run in each checkpointing mode.
std::string PlanText(const CheckpointingPlan& plan) {
  std::map<std::string, int> counts;
  for (const std::string& mode : plan)
    ++counts[mode];
  std::string text;
  for (const auto& [mode, count] : counts)
    text += (text.empty() ? "" : ", ") + mode + " " + std::to_string(count);
  return text.empty() ? "-" : text;
}

double Largest(const std::vector<double>& values) {
  double largest = 0;
  for (double value : values)
    largest = std::max(largest, value);
  return largest;
}

nlohmann::json RowJson(const LayerProfile& profile, const JobLayout& layout,
                       const SplitEvaluation& row, const std::string& order_file) {
  nlohmann::json value = {{"layout", JobLayoutName(layout)},
                          {"split", row.name},
                          {"detail", row.detail},
                          {"blocks_per_stage", row.split},
                          {"ok", row.status.ok()}};
  if (!row.split.empty()) value["stages"] = tuner::StageModuleNames(profile, row.split);
  if (!row.checkpointing.empty()) value["checkpointing"] = row.checkpointing;
  if (!row.status.ok()) {
    value["reason"] = row.status.message();
    return value;
  }
  value["family"] = row.schedule.family;
  value["iteration_ms"] = NsToMs(row.iteration);
  // Each stage's blocks summed, and the rank that holds it: what zbview's split view draws.
  const int ranks = static_cast<int>(row.state.size());
  nlohmann::json stage_costs = nlohmann::json::array();
  auto planned = WithCheckpointing(profile, row.checkpointing);
  const CostProfile stages = tuner::StageCostsOf(planned.ok() ? *planned : profile, row.split);
  for (int s = 0; s < stages.num_stages(); ++s) {
    const StageCost& cost = stages.stages[s];
    stage_costs.push_back({{"rank", RankOfStage(layout.placement, ranks, s)},
                           {"F", NsToMs(cost.f)},
                           {"B", NsToMs(cost.b)},
                           {"W", NsToMs(cost.w)},
                           {"M_B", cost.m_b},
                           {"M_W", cost.m_w}});
  }
  value["stage_costs"] = stage_costs;
  value["state"] = row.state;
  value["peak_memory"] = row.peak;
  if (!order_file.empty()) value["order_file"] = order_file;
  return value;
}

// Each compared split's order (--orders-dir), named <split>-<layout>.json ("co-tuned-loop-2"):
// a zb-schedule/1 whose costs are that split's stages, what `zb rehearse --layers` runs.
using OrderFiles = std::map<const SplitEvaluation*, std::string>;
Expected<OrderFiles> WriteOrders(const std::string& dir, const std::vector<LayoutRows>& rows) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return IoError("--orders-dir " + dir + ": " + error.message());
  OrderFiles files;
  for (const LayoutRows& layout_rows : rows) {
    std::string layout = JobLayoutName(layout_rows.layout);
    std::replace(layout.begin(), layout.end(), ':', '-');
    for (const SplitEvaluation& row : layout_rows.result.splits) {
      if (!row.status.ok()) continue;
      const std::string path = dir + "/" + row.name + "-" + layout + ".json";
      ZB_RETURN_IF_ERROR(WriteFileAtomically(path, ScheduleToJson(row.schedule)));
      files[&row] = path;
    }
  }
  return files;
}

void PrintTable(const std::vector<LayoutRows>& layouts, std::ostream& out) {
  TextTable table({"layout", "split", "blocks per stage", "checkpointing", "order", "iteration_ms",
                   "vs even", "max peak", "how"});
  table.SetLastColumnText();
  for (const LayoutRows& rows : layouts) {
    const SplitEvaluation& even = rows.result.splits.front();
    for (const SplitEvaluation& row : rows.result.splits) {
      if (!row.status.ok()) {
        table.AddRow({JobLayoutName(rows.layout), row.name, CountsText(row.split),
                      PlanText(row.checkpointing), "-", "-", "-", "-",
                      "n/a: " + row.status.message()});
        continue;
      }
      std::string gain = "-";
      if (even.status.ok()) {
        gain = FormatFixed(100.0 * (1.0 - static_cast<double>(row.iteration) /
                                              static_cast<double>(even.iteration)),
                           1) +
               " %";
      }
      table.AddRow({JobLayoutName(rows.layout), row.name, CountsText(row.split),
                    PlanText(row.checkpointing), row.schedule.family, FormatMs(row.iteration), gain,
                    FormatFixed(Largest(row.peak), 0), row.detail});
    }
  }
  table.Render(out);
}

// torchtitan's [parallelism] settings of `row` (docs/partition.md §3), as --json reports them.
nlohmann::json TorchtitanJson(const tuner::TorchtitanSettings& settings) {
  return {{"pipeline_parallel_degree", settings.pipeline_parallel_degree},
          {"pipeline_parallel_schedule", settings.pipeline_parallel_schedule},
          {"module_fqns_per_model_part", settings.module_fqns_per_model_part}};
}

// "5,4,4,6" of --<option>: one count per stage.
Expected<std::vector<int>> Counts(const po::variables_map& values, const std::string& option) {
  std::vector<int> counts;
  std::stringstream list(values[option].as<std::string>());
  for (std::string item; std::getline(list, item, ',');) {
    int count = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), count);
    if (error != std::errc() || end != item.data() + item.size()) {
      return UsageError("--" + option + ": \"" + item + "\" is not a count");
    }
    counts.push_back(count);
  }
  return counts;
}

Expected<LayerProfile> LoadProfile(const po::variables_map& values) {
  if (values.count("layers") > 0) {
    if (values.count("costs") > 0) return UsageError("give --layers or --costs, not both");
    return ReadLayersFile(values["layers"].as<std::string>());
  }
  if (values.count("costs") == 0) return UsageError("--layers FILE (or --costs with --blocks)");
  if (values.count("blocks") == 0) {
    return UsageError(
        "--costs holds stage totals only: --blocks N,N,... says how many blocks each "
        "stage has (they get an even share of it)");
  }
  ZB_ASSIGN_OR_RETURN(CostProfile costs, ReadCostsFile(values["costs"].as<std::string>()));
  ZB_ASSIGN_OR_RETURN(std::vector<int> blocks, Counts(values, "blocks"));
  return EvenShareOfStages(costs, blocks);
}

Expected<std::vector<JobLayout>> Layouts(const std::string& text) {
  if (text == "all")
    return std::vector<JobLayout>{{Placement::kLoop, 1}, {Placement::kLoop, 2}, {Placement::kV, 2}};
  const std::optional<JobLayout> layout = ParseJobLayout(text);
  if (!layout) return UsageError("--layout must be loop:1, loop:V, v or all, got \"" + text + "\"");
  return std::vector<JobLayout>{*layout};
}

// The modes --checkpointing lets the memory plan choose: none for as-run, the modes any block
// has figures for with plan, or the list given (each must be a plannable mode that some block
// has figures for).
Expected<std::vector<std::string>> PlanModes(const std::string& text, const LayerProfile& profile) {
  if (text == "as-run") return std::vector<std::string>{};
  std::vector<std::string> asked;
  if (text != "plan") {
    std::stringstream list(text);
    for (std::string item; std::getline(list, item, ',');) {
      if (!IsPlannableCheckpointingMode(item)) {
        return UsageError("--checkpointing: \"" + item +
                          "\" is not as-run, plan or a list of none, full, op");
      }
      asked.push_back(item);
    }
  }
  std::vector<std::string> modes;
  for (const std::string& mode : {std::string("none"), std::string("full"), std::string("op")}) {
    const bool wanted = asked.empty() || std::find(asked.begin(), asked.end(), mode) != asked.end();
    const bool measured = std::any_of(profile.layers.begin(), profile.layers.end(),
                                      [&](const LayerCost& layer) { return layer.has_mode(mode); });
    if (wanted && measured) modes.push_back(mode);
    if (wanted && !measured && !asked.empty()) {
      return Infeasible("--checkpointing " + mode +
                        ": no block of the profile has costs measured under it (profile it, or "
                        "--derive-full for full)");
    }
  }
  return modes;
}

po::options_description PartitionOptionsDescription() {
  po::options_description options("options");
  po::options_description_easy_init add = options.add_options();
  add("layers", po::value<std::string>(), "zb-layers/1 file: each block's measured costs");
  add("costs", po::value<std::string>(), "zb-costs/1 file of stage totals (with --blocks)");
  add("blocks", po::value<std::string>(), "with --costs: blocks per stage, e.g. 5,4,4,6");
  add("ranks,p", po::value<int>(), "pipeline ranks");
  add("microbatches,m", po::value<int>(), "microbatches per iteration");
  add("layout", po::value<std::string>()->default_value("all"),
      "loop:1, loop:V (V stages per rank), v, or all (the three of loop:1, loop:2, v)");
  add("mem-limit", po::value<std::string>()->default_value("none"),
      "per rank, everything it holds (weights, gradients, optimizer state, activations): a size "
      "in the profile's unit (KiB/MiB/GiB), or none");
  add("runtime", po::value<std::string>()->default_value("torch"), "torch or zbkit");
  add("splits", po::value<int64_t>()->default_value(300), "splits the co-tuning judges at most");
  add("evaluations", po::value<int64_t>()->default_value(2000),
      "order-search simulations per compared split (0: the families only)");
  add("checkpointing", po::value<std::string>()->default_value("as-run"),
      "as-run: every block keeps the mode it was profiled in; plan: choose each block's "
      "activation checkpointing among the modes measured for it (none, full, op) with the split "
      "and the order (docs/memory-plan.md); or a list of the modes the plan may use, e.g. "
      "none,full");
  add("derive-full",
      "give blocks measured without checkpointing a derived full-checkpointing "
      "option (docs/memory-plan.md §2) where none was measured");
  add("split", po::value<std::string>(),
      "keep this split, blocks per stage (e.g. 5,4,4,6; one layout): choose only the "
      "checkpointing plan and the order");
  add("for", po::value<std::string>(), "torchtitan: print the settings that run the fastest split");
  add("split-out", po::value<std::string>(), "write the fastest split as zb-split/1");
  add("out", po::value<std::string>(), "write the fastest split's order as zb-schedule/1");
  add("orders-dir", po::value<std::string>(),
      "write every compared split's order here, <split>-<layout>.json (for zb rehearse)");
  add("json", "print the comparison as JSON (zb-partition/1)");
  return options;
}

// The comparison as zb-partition/1; `best` the row of the fastest split, if any.
nlohmann::json PartitionJson(const LayerProfile& profile, const tuner::PartitionOptions& options,
                             const tuner::MemoryLimit& limit, const std::vector<LayoutRows>& rows,
                             const SplitEvaluation* best, const OrderFiles& orders) {
  nlohmann::json report = {{"format", "zb-partition/1"},
                           {"ranks", options.ranks},
                           {"microbatches", options.microbatches},
                           {"mem_limit", limit.ToString()},
                           {"source", LayerSourceName(profile.source)},
                           {"blocks", profile.num_layers()},
                           {"rows", nlohmann::json::array()},
                           {"best", nullptr}};
  for (const LayoutRows& layout_rows : rows) {
    for (const SplitEvaluation& row : layout_rows.result.splits) {
      if (&row == best) report["best"] = report["rows"].size();
      const auto order = orders.find(&row);
      report["rows"].push_back(
          RowJson(profile, layout_rows.layout, row, order == orders.end() ? "" : order->second));
    }
  }
  return report;
}

// What the user asked for beside the table: the stages of the fastest split, torchtitan's
// settings, the split file, the order.
Status WriteChosen(const po::variables_map& values, const LayerProfile& profile, int ranks,
                   const JobLayout& layout, const SplitEvaluation& chosen, bool planned,
                   std::ostream& out) {
  const bool json = values.count("json") > 0;
  if (!json) {
    out << "best: co-tuned split in layout " << JobLayoutName(layout) << ", "
        << FormatMs(chosen.iteration) << " ms, order " << chosen.schedule.family << "\n";
    const auto names = tuner::StageModuleNames(profile, chosen.split);
    for (size_t stage = 0; stage < names.size(); ++stage) {
      out << "  stage " << stage << " (rank "
          << RankOfStage(layout.placement, ranks, static_cast<int>(stage))
          << "): " << StageText(names[stage]) << "\n";
    }
    if (planned) {
      std::map<std::string, std::vector<std::string>> by_mode;
      for (size_t i = 0; i < chosen.checkpointing.size(); ++i)
        by_mode[chosen.checkpointing[i]].push_back(profile.layers[i].name);
      for (const auto& [mode, blocks] : by_mode)
        out << "  checkpointing " << mode << ": " << StageText(blocks) << "\n";
    }
  }
  if (values.count("for") > 0 && !json)
    out << tuner::TorchtitanToml(tuner::TorchtitanSettingsFor(profile, layout, ranks, chosen.split),
                                 chosen.schedule.family);
  if (values.count("split-out") > 0) {
    nlohmann::json split = {{"format", "zb-split/1"},
                            {"ranks", ranks},
                            {"layout", JobLayoutName(layout)},
                            {"schedule", tuner::TorchClassFor(layout)},
                            {"stages", tuner::StageModuleNames(profile, chosen.split)}};
    if (planned) {
      split["checkpointing"] = nlohmann::json::object();
      for (size_t i = 0; i < chosen.checkpointing.size(); ++i)
        split["checkpointing"][profile.layers[i].name] = chosen.checkpointing[i];
    }
    ZB_RETURN_IF_ERROR(
        WriteFileAtomically(values["split-out"].as<std::string>(), split.dump(1) + "\n"));
  }
  if (values.count("out") > 0) {
    ZB_RETURN_IF_ERROR(
        WriteFileAtomically(values["out"].as<std::string>(), ScheduleToJson(chosen.schedule)));
  }
  return Status::Ok();
}

}  // namespace

int RunPartitionCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "partition";
  const po::options_description options = PartitionOptionsDescription();
  po::variables_map values;
  int exit_code = 0;
  const std::string example =
      "example:\n  zb partition --layers layers.json -p 4 -m 8 --mem-limit 24GiB --for "
      "torchtitan\n";
  if (!ParseCommandLine(command, "--layers FILE -p P -m M [options]", args, options, {}, values,
                        out, err, exit_code, example)) {
    return exit_code;
  }
  auto run = [&]() -> Status {
    if (values.count("ranks") == 0) return UsageError("--ranks (-p) is required");
    if (values.count("microbatches") == 0) return UsageError("--microbatches (-m) is required");
    if (values.count("for") > 0 && values["for"].as<std::string>() != "torchtitan") {
      return UsageError("--for must be torchtitan, got \"" + values["for"].as<std::string>() +
                        "\"");
    }
    ZB_ASSIGN_OR_RETURN(std::vector<JobLayout> layouts,
                        Layouts(values["layout"].as<std::string>()));
    ZB_ASSIGN_OR_RETURN(tuner::MemoryLimit limit,
                        tuner::ParseMemoryLimit(values["mem-limit"].as<std::string>()));
    if (limit.kind == tuner::MemoryLimit::Kind::kRelative) {
      return UsageError(
          "--mem-limit: a split's cap counts weights and optimizer state, which "
          "1F1B's peak does not: give a size (e.g. 24GiB) or none");
    }
    const std::string runtime_name = values["runtime"].as<std::string>();
    const auto runtime = tuner::ParseReplayRuntime(runtime_name);
    if (!runtime)
      return UsageError("--runtime must be torch or zbkit, got \"" + runtime_name + "\"");
    ZB_ASSIGN_OR_RETURN(LayerProfile profile, LoadProfile(values));
    if (values.count("for") > 0) ZB_RETURN_IF_ERROR(tuner::CheckTorchtitanRealisable(profile));
    if (profile.source == LayerSource::kEvenShareOfStages) {
      err << "zb partition: note: only stage totals were measured; each block gets an even share "
             "of its stage, so the splits differ only in how many blocks a stage holds\n";
    }

    tuner::PartitionOptions partition;
    partition.ranks = values["ranks"].as<int>();
    partition.microbatches = values["microbatches"].as<int>();
    if (limit.kind == tuner::MemoryLimit::Kind::kAbsolute) partition.cap = limit.value;
    partition.runtime = *runtime;
    if (values.count("derive-full") > 0) {
      const int derived = DeriveFullCheckpointing(profile);
      err << "zb partition: note: " << derived
          << " blocks got a derived full-checkpointing option (B + F, M_B = the block's "
             "input; docs/memory-plan.md §2)\n";
    }
    ZB_ASSIGN_OR_RETURN(partition.plan_modes,
                        PlanModes(values["checkpointing"].as<std::string>(), profile));
    if (values.count("split") > 0) {
      if (layouts.size() != 1) return UsageError("--split needs one --layout (loop:1, loop:V, v)");
      ZB_ASSIGN_OR_RETURN(partition.fixed_split, Counts(values, "split"));
    }
    partition.split_evaluations = values["splits"].as<int64_t>();
    partition.order_evaluations = values["evaluations"].as<int64_t>();
    if (partition.split_evaluations < 1 || partition.order_evaluations < 0) {
      return UsageError("--splits must be >= 1 and --evaluations >= 0");
    }
    std::vector<LayoutRows> rows;
    for (const JobLayout& layout : layouts) {
      partition.layout = layout;
      ZB_ASSIGN_OR_RETURN(tuner::PartitionResult result, tuner::Partition(profile, partition));
      rows.push_back({layout, std::move(result)});
    }
    const LayoutRows* best = nullptr;
    for (const LayoutRows& layout_rows : rows) {
      if (layout_rows.result.best < 0) continue;
      const SplitEvaluation& row = layout_rows.result.splits[layout_rows.result.best];
      if (best == nullptr || row.iteration < best->result.splits[best->result.best].iteration) {
        best = &layout_rows;
      }
    }
    const SplitEvaluation* chosen =
        best == nullptr ? nullptr : &best->result.splits[best->result.best];
    OrderFiles orders;
    if (values.count("orders-dir") > 0) {
      ZB_ASSIGN_OR_RETURN(orders, WriteOrders(values["orders-dir"].as<std::string>(), rows));
    }
    if (values.count("json") > 0) {
      nlohmann::json report = PartitionJson(profile, partition, limit, rows, chosen, orders);
      if (values.count("for") > 0 && chosen != nullptr) {
        report["torchtitan"] = TorchtitanJson(
            tuner::TorchtitanSettingsFor(profile, best->layout, partition.ranks, chosen->split));
      }
      out << report.dump(2) << "\n";
    } else {
      out << "p=" << partition.ranks << " m=" << partition.microbatches << " blocks "
          << profile.num_layers() << " (" << LayerSourceName(profile.source)
          << ") mem-limit=" << limit.ToString() << "\n";
      PrintTable(rows, out);
    }
    if (chosen == nullptr) {
      return Infeasible("no split of any layout asked for fits --mem-limit " + limit.ToString());
    }
    return WriteChosen(values, profile, partition.ranks, best->layout, *chosen,
                       !partition.plan_modes.empty(), out);
  };
  const Status status = run();
  return status.ok() ? 0 : ReportError(err, command, status);
}

}  // namespace zb::cli
