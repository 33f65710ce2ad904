// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/json_io.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "zbkit/schemas/validate.h"

namespace zb {
namespace {

using nlohmann::json;

// Reads typed fields out of a JSON object, producing errors that carry the JSON path.
class Reader {
 public:
  Reader(const json& value, std::string path) : value_(value), path_(std::move(path)) {}

  std::string FieldPath(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  Status ExpectObject(std::initializer_list<std::string_view> allowed) const {
    if (!value_.is_object()) return InvalidInput(Where() + "must be a JSON object");
    for (const auto& item : value_.items()) {
      bool known = false;
      for (std::string_view key : allowed)
        known = known || item.key() == key;
      if (!known) return InvalidInput(FieldPath(item.key()) + ": unknown field");
    }
    return Status::Ok();
  }

  bool Has(std::string_view key) const { return value_.contains(key); }

  Expected<double> Number(std::string_view key, double min, bool min_exclusive = false) const {
    if (!value_.contains(key)) return InvalidInput(FieldPath(key) + ": missing field");
    const json& field = value_.at(std::string(key));
    if (!field.is_number()) return InvalidInput(FieldPath(key) + ": must be a number");
    const double number = field.get<double>();
    const bool below = min_exclusive ? number <= min : number < min;
    if (!std::isfinite(number) || below) {
      std::ostringstream message;
      message << FieldPath(key) << ": must be a finite number " << (min_exclusive ? "> " : ">= ")
              << min << ", got " << field.dump();
      return InvalidInput(message.str());
    }
    return number;
  }

  Expected<int64_t> Integer(std::string_view key, int64_t min, int64_t max) const {
    if (!value_.contains(key)) return InvalidInput(FieldPath(key) + ": missing field");
    const json& field = value_.at(std::string(key));
    if (!field.is_number_integer()) return InvalidInput(FieldPath(key) + ": must be an integer");
    const int64_t number = field.get<int64_t>();
    if (number < min || number > max) {
      return InvalidInput(FieldPath(key) + ": must be in [" + std::to_string(min) + ", " +
                          std::to_string(max) + "], got " + std::to_string(number));
    }
    return number;
  }

  Expected<std::string> String(std::string_view key) const {
    if (!value_.contains(key)) return InvalidInput(FieldPath(key) + ": missing field");
    const json& field = value_.at(std::string(key));
    if (!field.is_string()) return InvalidInput(FieldPath(key) + ": must be a string");
    return field.get<std::string>();
  }

  Expected<const json*> Array(std::string_view key) const {
    if (!value_.contains(key)) return InvalidInput(FieldPath(key) + ": missing field");
    const json& field = value_.at(std::string(key));
    if (!field.is_array()) return InvalidInput(FieldPath(key) + ": must be an array");
    return &field;
  }

 private:
  std::string Where() const { return path_.empty() ? std::string() : path_ + ": "; }

  const json& value_;
  std::string path_;
};

constexpr int64_t kMaxCount = 1 << 20;  // far beyond any pipeline; stops absurd allocations
constexpr double kMaxHopMs = 3.6e6;     // an hour: a hop time beyond it is a unit mistake

Status CheckFormat(const Reader& reader, const char* expected) {
  ZB_ASSIGN_OR_RETURN(std::string format, reader.String("format"));
  if (format != expected) {
    return InvalidInput("format: expected \"" + std::string(expected) + "\", got \"" + format +
                        "\"");
  }
  return Status::Ok();
}

// zb-costs/1 "layout": what the profiled job was built with (docs/formats.md §1).
Status ParseLayout(const json& value, const std::string& path, CostProfile& costs) {
  Reader reader(value, path);
  ZB_RETURN_IF_ERROR(reader.ExpectObject({"placement", "stages_per_rank", "schedule"}));
  ZB_ASSIGN_OR_RETURN(std::string placement_name, reader.String("placement"));
  const std::optional<Placement> placement = ParsePlacement(placement_name);
  if (!placement) {
    return InvalidInput(reader.FieldPath("placement") + ": must be \"loop\" or \"v\", got \"" +
                        placement_name + "\"");
  }
  ZB_ASSIGN_OR_RETURN(int64_t chunks, reader.Integer("stages_per_rank", 1, kMaxCount));
  if (*placement == Placement::kV && chunks != 2) {
    return InvalidInput(reader.FieldPath("stages_per_rank") +
                        ": must be 2 in the V placement, got " + std::to_string(chunks));
  }
  costs.layout = JobLayout{*placement, static_cast<int>(chunks)};
  if (reader.Has("schedule")) {
    ZB_ASSIGN_OR_RETURN(costs.schedule_class, reader.String("schedule"));
    if (costs.schedule_class.empty()) {
      return InvalidInput(reader.FieldPath("schedule") + ": must not be empty (leave it out)");
    }
  }
  return Status::Ok();
}

// The body shared by zb-costs/1 and the "costs" object of zb-schedule/1 (which has no layout:
// a schedule's costs are per stage as scheduled, not a profiled job's).
Expected<CostProfile> ParseCostsObject(const json& value, const std::string& path,
                                       bool with_format) {
  Reader reader(value, path);
  if (with_format) {
    ZB_RETURN_IF_ERROR(reader.ExpectObject({"format", "comm", "count", "name", "stages", "layout",
                                            "checkpointing", "data_parallel", "reduce_wait"}));
    ZB_RETURN_IF_ERROR(CheckFormat(reader, kCostsFormat));
  } else {
    ZB_RETURN_IF_ERROR(
        reader.ExpectObject({"comm", "count", "name", "stages", "checkpointing", "reduce_wait"}));
  }
  CostProfile costs;
  if (reader.Has("reduce_wait")) {
    ZB_ASSIGN_OR_RETURN(const std::string wait, reader.String("reduce_wait"));
    const std::optional<ReduceWait> parsed = ParseReduceWait(wait);
    if (!parsed) {
      return InvalidInput(reader.FieldPath("reduce_wait") +
                          ": must be in_place or step_end, got \"" + wait + "\"");
    }
    costs.reduce_wait = *parsed;
  }
  if (reader.Has("checkpointing")) {
    ZB_ASSIGN_OR_RETURN(costs.checkpointing, reader.String("checkpointing"));
    if (!IsCheckpointingMode(costs.checkpointing)) {
      return InvalidInput(reader.FieldPath("checkpointing") + ": must be one of " +
                          CheckpointingModeList() + ", got \"" + costs.checkpointing + "\"");
    }
  }
  if (reader.Has("comm")) {
    ZB_ASSIGN_OR_RETURN(double comm_ms, reader.Number("comm", 0));
    ZB_RETURN_IF_ERROR(CheckOpTime(reader.FieldPath("comm"), comm_ms, with_format ? 1 : 2));
    costs.comm = MsToNs(comm_ms);
  }
  ZB_ASSIGN_OR_RETURN(const json* stages, reader.Array("stages"));
  if (stages->empty()) return InvalidInput(reader.FieldPath("stages") + ": must not be empty");
  if (stages->size() > static_cast<size_t>(kMaxCount)) {
    return InvalidInput(reader.FieldPath("stages") + ": too many stages");
  }
  for (size_t i = 0; i < stages->size(); ++i) {
    Reader stage_reader((*stages)[i], reader.FieldPath("stages") + "[" + std::to_string(i) + "]");
    ZB_RETURN_IF_ERROR(stage_reader.ExpectObject(
        {"F", "B", "W", "BW", "M_B", "M_W", "reduce", "unshard", "unsharded", "reduced"}));
    ZB_ASSIGN_OR_RETURN(double f, stage_reader.Number("F", 0, /*min_exclusive=*/true));
    ZB_ASSIGN_OR_RETURN(double b, stage_reader.Number("B", 0));
    ZB_ASSIGN_OR_RETURN(double w, stage_reader.Number("W", 0));
    ZB_ASSIGN_OR_RETURN(double m_b, stage_reader.Number("M_B", 0));
    ZB_ASSIGN_OR_RETURN(double m_w, stage_reader.Number("M_W", 0));
    // Optional, absent = 0: BW not measured; no data-parallel work (docs/data-parallel.md §5).
    double bw = 0, reduce = 0, unshard = 0, unsharded = 0, reduced = 0;
    for (const auto& [name, field] : {std::pair<const char*, double*>{"BW", &bw},
                                      {"reduce", &reduce},
                                      {"unshard", &unshard},
                                      {"unsharded", &unsharded},
                                      {"reduced", &reduced}}) {
      if (stage_reader.Has(name)) {
        ZB_ASSIGN_OR_RETURN(*field, stage_reader.Number(name, 0));
      }
    }
    // Before the conversion: the message gives the value as written, and no value can overflow
    // the clock (a schedule's costs may hold up to twice it: torch's stage 0, validate.h).
    for (const auto& [name, ms] : {std::pair{"F", f},
                                   {"B", b},
                                   {"W", w},
                                   {"BW", bw},
                                   {"reduce", reduce},
                                   {"unshard", unshard}}) {
      ZB_RETURN_IF_ERROR(CheckOpTime(stage_reader.FieldPath(name), ms, with_format ? 1 : 2));
    }
    StageCost cost{MsToNs(f), MsToNs(b), MsToNs(w), m_b, m_w, MsToNs(bw)};
    cost.reduce = MsToNs(reduce);
    cost.unshard = MsToNs(unshard);
    cost.unsharded = unsharded;
    cost.reduced = reduced;
    costs.stages.push_back(cost);
    if (costs.stages.back().f <= 0) {
      return InvalidInput(stage_reader.FieldPath("F") + ": must be at least 1 ns");
    }
  }
  if (reader.Has("count")) {
    ZB_ASSIGN_OR_RETURN(int64_t count, reader.Integer("count", 1, kMaxCount));
    if (costs.stages.size() != 1) {
      return InvalidInput(reader.FieldPath("count") +
                          ": only allowed with exactly one entry in stages, got " +
                          std::to_string(costs.stages.size()));
    }
    costs.stages.assign(static_cast<size_t>(count), costs.stages.front());
  }
  if (with_format && reader.Has("layout")) {
    ZB_RETURN_IF_ERROR(ParseLayout(value.at("layout"), reader.FieldPath("layout"), costs));
  }
  if (with_format && reader.Has("data_parallel")) {
    ZB_ASSIGN_OR_RETURN(int64_t replicas, reader.Integer("data_parallel", 1, kMaxCount));
    costs.data_parallel = static_cast<int>(replicas);
  }
  return costs;
}

json LayoutJson(const CostProfile& costs) {
  json layout{{"placement", PlacementName(costs.layout->placement)},
              {"stages_per_rank", costs.layout->chunks}};
  if (!costs.schedule_class.empty()) layout["schedule"] = costs.schedule_class;
  return layout;
}

json CostsBody(const CostProfile& costs) {
  json body = json::object();
  body["comm"] = NsToMs(costs.comm);
  if (!costs.checkpointing.empty()) body["checkpointing"] = costs.checkpointing;
  if (costs.reduce_wait != ReduceWait::kInPlace) {
    body["reduce_wait"] = ReduceWaitName(costs.reduce_wait);
  }
  auto stage_json = [](const StageCost& stage) {
    json entry{{"F", NsToMs(stage.f)},
               {"B", NsToMs(stage.b)},
               {"W", NsToMs(stage.w)},
               {"M_B", stage.m_b},
               {"M_W", stage.m_w}};
    if (stage.bw > 0) entry["BW"] = NsToMs(stage.bw);
    if (stage.reduce > 0) entry["reduce"] = NsToMs(stage.reduce);
    if (stage.unshard > 0) entry["unshard"] = NsToMs(stage.unshard);
    if (stage.unsharded > 0) entry["unsharded"] = stage.unsharded;
    if (stage.reduced > 0) entry["reduced"] = stage.reduced;
    return entry;
  };
  if (costs.num_stages() > 1 && costs.IsUniform()) {
    body["count"] = costs.num_stages();
    body["stages"] = json::array({stage_json(costs.stages.front())});
  } else {
    body["stages"] = json::array();
    for (const StageCost& stage : costs.stages)
      body["stages"].push_back(stage_json(stage));
  }
  return body;
}

Expected<json> ParseJsonText(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::exception& error) {
    // parse_error for malformed text; out_of_range (406) for a number no double holds
    // ("1e999"), found by tests/fuzz/fuzz_costs.
    const std::string message = JsonErrorText(error);
    std::string hint;
    if (text.find("NaN") != std::string::npos || text.find("Infinity") != std::string::npos) {
      hint = " (NaN and Infinity are not valid JSON numbers)";
    }
    return InvalidInput(source + ": not valid JSON: " + message + hint);
  }
}

Expected<Schedule> ParseScheduleValue(const json& value) {
  Reader reader(value, "");
  ZB_RETURN_IF_ERROR(reader.ExpectObject({"format", "stages", "microbatches", "chunks", "placement",
                                          "family", "costs", "ranks", "predicted"}));
  ZB_RETURN_IF_ERROR(CheckFormat(reader, kScheduleFormat));
  Schedule schedule;
  // "stages" is the rank count p (the paper's word), not p*v model stages; version 1 keeps the
  // name because "ranks" is the program array (docs/formats.md §2).
  ZB_ASSIGN_OR_RETURN(int64_t ranks, reader.Integer("stages", 1, kMaxCount));
  ZB_ASSIGN_OR_RETURN(int64_t microbatches, reader.Integer("microbatches", 1, kMaxCount));
  ZB_ASSIGN_OR_RETURN(int64_t chunks, reader.Integer("chunks", 1, 1024));
  schedule.ranks = static_cast<int>(ranks);
  schedule.microbatches = static_cast<int>(microbatches);
  schedule.chunks = static_cast<int>(chunks);
  ZB_ASSIGN_OR_RETURN(std::string placement, reader.String("placement"));
  auto parsed_placement = ParsePlacement(placement);
  if (!parsed_placement) {
    return InvalidInput("placement: must be \"loop\" or \"v\", got \"" + placement + "\"");
  }
  schedule.placement = *parsed_placement;
  if (reader.Has("family")) {
    ZB_ASSIGN_OR_RETURN(schedule.family, reader.String("family"));
  }
  if (!reader.Has("costs")) return InvalidInput("costs: missing field");
  ZB_ASSIGN_OR_RETURN(schedule.costs, ParseCostsObject(value.at("costs"), "costs", false));

  ZB_ASSIGN_OR_RETURN(const json* ranks_json, reader.Array("ranks"));
  for (size_t r = 0; r < ranks_json->size(); ++r) {
    const std::string path = "ranks[" + std::to_string(r) + "]";
    Reader rank_reader((*ranks_json)[r], path);
    ZB_RETURN_IF_ERROR(rank_reader.ExpectObject({"rank", "stages", "ops"}));
    ZB_ASSIGN_OR_RETURN(int64_t rank, rank_reader.Integer("rank", 0, kMaxCount));
    if (rank != static_cast<int64_t>(r)) {
      return InvalidInput(rank_reader.FieldPath("rank") + ": ranks must be listed in order 0.." +
                          std::to_string(ranks_json->size() - 1) + ", got " + std::to_string(rank));
    }
    RankProgram program;
    ZB_ASSIGN_OR_RETURN(const json* stages, rank_reader.Array("stages"));
    for (size_t c = 0; c < stages->size(); ++c) {
      if (!(*stages)[c].is_number_integer()) {
        return InvalidInput(rank_reader.FieldPath("stages") + "[" + std::to_string(c) +
                            "]: must be an integer");
      }
      program.stages.push_back((*stages)[c].get<int32_t>());
    }
    ZB_ASSIGN_OR_RETURN(const json* ops, rank_reader.Array("ops"));
    program.ops.reserve(ops->size());
    for (size_t i = 0; i < ops->size(); ++i) {
      Reader op_reader((*ops)[i], rank_reader.FieldPath("ops") + "[" + std::to_string(i) + "]");
      ZB_RETURN_IF_ERROR(op_reader.ExpectObject({"type", "mb", "chunk", "start", "end"}));
      ZB_ASSIGN_OR_RETURN(std::string type, op_reader.String("type"));
      auto kind = ParseOpKind(type);
      if (!kind) {
        return InvalidInput(op_reader.FieldPath("type") + ": must be F, B, W or BW, got \"" + type +
                            "\"");
      }
      Op op;
      op.kind = *kind;
      ZB_ASSIGN_OR_RETURN(int64_t mb, op_reader.Integer("mb", 0, kMaxCount));
      op.microbatch = static_cast<int32_t>(mb);
      if (op_reader.Has("chunk")) {
        ZB_ASSIGN_OR_RETURN(int64_t chunk, op_reader.Integer("chunk", 0, 1024));
        op.chunk = static_cast<int32_t>(chunk);
      }
      if (op_reader.Has("start") || op_reader.Has("end")) {
        ZB_ASSIGN_OR_RETURN(double start, op_reader.Number("start", 0));
        ZB_ASSIGN_OR_RETURN(double end, op_reader.Number("end", 0));
        op.start = MsToNs(start);
        op.end = MsToNs(end);
      }
      program.ops.push_back(op);
    }
    schedule.programs.push_back(std::move(program));
  }

  if (reader.Has("predicted")) {
    Reader predicted_reader(value.at("predicted"), "predicted");
    ZB_RETURN_IF_ERROR(predicted_reader.ExpectObject(
        {"makespan", "span", "bubble_rate", "paper_bubble_rate", "peak_memory"}));
    Prediction predicted;
    ZB_ASSIGN_OR_RETURN(double makespan, predicted_reader.Number("makespan", 0));
    predicted.makespan = MsToNs(makespan);
    if (predicted_reader.Has("span")) {
      ZB_ASSIGN_OR_RETURN(double span, predicted_reader.Number("span", 0));
      predicted.span = MsToNs(span);
    }
    ZB_ASSIGN_OR_RETURN(predicted.bubble_rate, predicted_reader.Number("bubble_rate", 0));
    ZB_ASSIGN_OR_RETURN(predicted.paper_bubble_rate,
                        predicted_reader.Number("paper_bubble_rate", 0));
    ZB_ASSIGN_OR_RETURN(const json* peaks, predicted_reader.Array("peak_memory"));
    for (size_t i = 0; i < peaks->size(); ++i) {
      if (!(*peaks)[i].is_number()) {
        return InvalidInput("predicted.peak_memory[" + std::to_string(i) + "]: must be a number");
      }
      predicted.peak_memory.push_back((*peaks)[i].get<double>());
    }
    schedule.predicted = std::move(predicted);
  }
  ZB_RETURN_IF_ERROR(ValidateSchedule(schedule));
  return schedule;
}

// A block's "options" (docs/formats.md §6): its costs under other checkpointing modes, each
// mode once and none the block's own.
Expected<std::vector<CheckpointingOption>> ParseCheckpointingOptions(Reader& layer,
                                                                     const LayerCost& cost) {
  ZB_ASSIGN_OR_RETURN(const json* entries, layer.Array("options"));
  std::vector<CheckpointingOption> options;
  std::unordered_set<std::string> modes{cost.own_mode()};
  for (size_t k = 0; k < entries->size(); ++k) {
    Reader entry((*entries)[k], layer.FieldPath("options[" + std::to_string(k) + "]"));
    ZB_RETURN_IF_ERROR(
        entry.ExpectObject({"checkpointing", "F", "B", "W", "M_B", "M_W", "source"}));
    CheckpointingOption option;
    ZB_ASSIGN_OR_RETURN(option.mode, entry.String("checkpointing"));
    if (!IsPlannableCheckpointingMode(option.mode)) {
      return InvalidInput(entry.FieldPath("checkpointing") +
                          ": must be one of none, full, op, got \"" + option.mode + "\"");
    }
    if (!modes.insert(option.mode).second) {
      return InvalidInput(entry.FieldPath("checkpointing") + ": \"" + option.mode +
                          "\" is the block's own mode or appears twice");
    }
    for (auto [field, target] : {std::pair{"F", &option.f}, {"B", &option.b}, {"W", &option.w}}) {
      ZB_ASSIGN_OR_RETURN(const double ms, entry.Number(field, 0));
      ZB_RETURN_IF_ERROR(CheckOpTime(entry.FieldPath(field), ms, 1));
      *target = MsToNs(ms);
    }
    ZB_ASSIGN_OR_RETURN(option.m_b, entry.Number("M_B", 0));
    ZB_ASSIGN_OR_RETURN(option.m_w, entry.Number("M_W", 0));
    if (entry.Has("source")) {
      ZB_ASSIGN_OR_RETURN(const std::string source, entry.String("source"));
      if (source != "measured" && source != "derived") {
        return InvalidInput(entry.FieldPath("source") +
                            ": must be \"measured\" or \"derived\", got \"" + source + "\"");
      }
      option.measured = source == "measured";
    }
    options.push_back(std::move(option));
  }
  return options;
}

// zb-layers/1 (docs/formats.md §6): the blocks of a model in order, each with its costs.
Expected<LayerProfile> ParseLayersValue(const json& value) {
  Reader reader(value, "");
  if (value.is_object()) ZB_RETURN_IF_ERROR(CheckFormat(reader, kLayersFormat));
  ZB_RETURN_IF_ERROR(reader.ExpectObject({"format", "comm", "source", "layers"}));
  LayerProfile profile;
  if (reader.Has("comm")) {
    ZB_ASSIGN_OR_RETURN(double comm_ms, reader.Number("comm", 0));
    ZB_RETURN_IF_ERROR(CheckOpTime("comm", comm_ms, 1));
    profile.comm = MsToNs(comm_ms);
  }
  if (reader.Has("source")) {
    ZB_ASSIGN_OR_RETURN(std::string source, reader.String("source"));
    if (source == LayerSourceName(LayerSource::kEvenShareOfStages)) {
      profile.source = LayerSource::kEvenShareOfStages;
    } else if (source != LayerSourceName(LayerSource::kMeasured)) {
      return InvalidInput("source: must be \"measured\" or \"even share of stages\", got \"" +
                          source + "\"");
    }
  }
  ZB_ASSIGN_OR_RETURN(const json* layers, reader.Array("layers"));
  if (layers->empty()) return InvalidInput("layers: must not be empty");
  if (layers->size() > static_cast<size_t>(kMaxCount)) return InvalidInput("layers: too many");
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < layers->size(); ++i) {
    Reader layer((*layers)[i], "layers[" + std::to_string(i) + "]");
    ZB_RETURN_IF_ERROR(layer.ExpectObject(
        {"name", "F", "B", "W", "M_B", "M_W", "state", "send", "checkpointing", "options"}));
    LayerCost cost;
    ZB_ASSIGN_OR_RETURN(cost.name, layer.String("name"));
    if (cost.name.empty()) return InvalidInput(layer.FieldPath("name") + ": must not be empty");
    if (!names.insert(cost.name).second) {
      return InvalidInput(layer.FieldPath("name") + ": \"" + cost.name + "\" appears twice");
    }
    double times[3] = {};
    const char* kTimeFields[3] = {"F", "B", "W"};
    for (int k = 0; k < 3; ++k) {
      ZB_ASSIGN_OR_RETURN(times[k], layer.Number(kTimeFields[k], 0));
      ZB_RETURN_IF_ERROR(CheckOpTime(layer.FieldPath(kTimeFields[k]), times[k], 1));
    }
    cost.f = MsToNs(times[0]);
    cost.b = MsToNs(times[1]);
    cost.w = MsToNs(times[2]);
    ZB_ASSIGN_OR_RETURN(cost.m_b, layer.Number("M_B", 0));
    ZB_ASSIGN_OR_RETURN(cost.m_w, layer.Number("M_W", 0));
    for (const auto& [field, target] : {std::pair{"state", &cost.state}, {"send", &cost.send}}) {
      if (!layer.Has(field)) continue;
      ZB_ASSIGN_OR_RETURN(*target, layer.Number(field, 0));
    }
    if (layer.Has("checkpointing")) {
      ZB_ASSIGN_OR_RETURN(cost.checkpointing, layer.String("checkpointing"));
      if (!IsBlockCheckpointingMode(cost.checkpointing)) {
        return InvalidInput(layer.FieldPath("checkpointing") +
                            ": must be one of none, full, op, reentrant, got \"" +
                            cost.checkpointing + "\"");
      }
    }
    if (layer.Has("options")) {
      ZB_ASSIGN_OR_RETURN(cost.options, ParseCheckpointingOptions(layer, cost));
    }
    profile.layers.push_back(std::move(cost));
  }
  TimeNs total_f = 0;
  for (const LayerCost& layer : profile.layers)
    total_f += layer.f;
  if (total_f <= 0) return InvalidInput("layers: the forwards add up to 0 ms");
  return profile;
}

}  // namespace

Expected<CostProfile> ParseCostsJson(const std::string& text, const std::string& source) {
  ZB_ASSIGN_OR_RETURN(json value, ParseJsonText(text, source));
  auto costs = ParseCostsObject(value, "", true);
  if (!costs.ok()) return costs.status().WithContext(source);
  // What the reader's per-field checks cannot see (memory against its bound; the times were
  // checked against the clock's limit as they were read).
  ZB_RETURN_IF_ERROR(ValidateCostProfile(*costs).WithContext(source));
  return costs;
}

Expected<CostProfile> ReadCostsFile(const std::string& path) {
  ZB_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseCostsJson(text, path);
}

std::string CostsToJson(const CostProfile& costs) {
  json value = {{"format", kCostsFormat}};
  value.update(CostsBody(costs));
  if (costs.layout) value["layout"] = LayoutJson(costs);
  if (costs.data_parallel > 0) value["data_parallel"] = costs.data_parallel;
  return value.dump(2) + "\n";
}

Expected<HopMeasurement> ParseHopsJson(const std::string& text, const std::string& source) {
  ZB_ASSIGN_OR_RETURN(json value, ParseJsonText(text, source));
  auto parse = [&value]() -> Expected<HopMeasurement> {
    Reader reader(value, "");
    // The format first: another zbkit file is named as such, not by its first unknown field.
    if (value.is_object()) ZB_RETURN_IF_ERROR(CheckFormat(reader, kHopsFormat));
    ZB_RETURN_IF_ERROR(reader.ExpectObject({"format", "message_bytes", "source", "hops"}));
    HopMeasurement measurement;
    ZB_ASSIGN_OR_RETURN(measurement.message_bytes,
                        reader.Integer("message_bytes", 1, int64_t{1} << 40));
    ZB_ASSIGN_OR_RETURN(measurement.source, reader.String("source"));
    if (measurement.source.empty()) return InvalidInput("source: must not be empty");
    ZB_ASSIGN_OR_RETURN(const json* hops, reader.Array("hops"));
    if (hops->empty()) return InvalidInput("hops: must not be empty");
    if (hops->size() > static_cast<size_t>(kMaxCount)) return InvalidInput("hops: too many hops");
    for (size_t i = 0; i < hops->size(); ++i) {
      Reader hop((*hops)[i], "hops[" + std::to_string(i) + "]");
      ZB_RETURN_IF_ERROR(hop.ExpectObject({"from", "to", "ms"}));
      ZB_ASSIGN_OR_RETURN(int64_t from, hop.Integer("from", 0, kMaxCount));
      ZB_ASSIGN_OR_RETURN(int64_t to, hop.Integer("to", 0, kMaxCount));
      ZB_ASSIGN_OR_RETURN(double ms, hop.Number("ms", 0));
      if (ms > kMaxHopMs) {
        return InvalidInput(hop.FieldPath("ms") + ": must be at most " +
                            std::to_string(static_cast<int>(kMaxHopMs)) + " ms");
      }
      measurement.hops.push_back(
          {static_cast<int32_t>(from), static_cast<int32_t>(to), MsToNs(ms)});
    }
    // The pairs (ranks that differ, none twice): checked here too, so that a bad file is refused
    // before a store is opened or created for it.
    ZB_RETURN_IF_ERROR(ValidateHopMeasurement(measurement));
    return measurement;
  };
  auto measurement = parse();
  if (!measurement.ok()) return measurement.status().WithContext(source);
  return measurement;
}

Expected<HopMeasurement> ReadHopsFile(const std::string& path) {
  ZB_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseHopsJson(text, path);
}

Expected<Schedule> ParseScheduleJson(const std::string& text, const std::string& source) {
  ZB_ASSIGN_OR_RETURN(json value, ParseJsonText(text, source));
  auto schedule = ParseScheduleValue(value);
  if (!schedule.ok()) return schedule.status().WithContext(source);
  return schedule;
}

Expected<Schedule> ReadScheduleFile(const std::string& path) {
  ZB_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseScheduleJson(text, path);
}

std::string ScheduleToJson(const Schedule& schedule) {
  // Written by hand rather than through one json::dump so that each op stays on one line: a
  // 24-microbatch schedule is readable and diffable, and large schedules stay compact.
  std::ostringstream out;
  out << "{\"format\": " << json(kScheduleFormat).dump() << ",\n"
      << " \"stages\": " << schedule.ranks << ",\n"
      << " \"microbatches\": " << schedule.microbatches << ",\n"
      << " \"chunks\": " << schedule.chunks << ",\n"
      << " \"placement\": " << json(PlacementName(schedule.placement)).dump() << ",\n";
  if (!schedule.family.empty()) out << " \"family\": " << json(schedule.family).dump() << ",\n";
  out << " \"costs\": " << CostsBody(schedule.costs).dump() << ",\n";
  out << " \"ranks\": [";
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    const RankProgram& program = schedule.programs[r];
    out << (r == 0 ? "\n" : ",\n") << "  {\"rank\": " << r
        << ", \"stages\": " << json(program.stages).dump() << ", \"ops\": [";
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      json op_json = {{"type", OpKindName(op.kind)},
                      {"mb", op.microbatch},
                      {"chunk", op.chunk},
                      {"start", NsToMs(op.start)},
                      {"end", NsToMs(op.end)}};
      out << (i == 0 ? "\n" : ",\n") << "    " << op_json.dump();
    }
    out << "]}";
  }
  out << "]";
  if (schedule.predicted) {
    const Prediction& predicted = *schedule.predicted;
    json predicted_json = {{"makespan", NsToMs(predicted.makespan)},
                           {"span", NsToMs(predicted.span)},
                           {"bubble_rate", predicted.bubble_rate},
                           {"paper_bubble_rate", predicted.paper_bubble_rate},
                           {"peak_memory", predicted.peak_memory}};
    out << ",\n \"predicted\": " << predicted_json.dump();
  }
  out << "}\n";
  return out.str();
}

std::string JsonErrorText(const std::exception& error) {
  std::string text = error.what();
  if (const size_t end = text.find("] ");
      text.rfind("[json.exception", 0) == 0 && end != std::string::npos) {
    text = text.substr(end + 2);
  }
  return text;
}

Expected<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed: " + std::strerror(errno));
  return content.str();
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (file == nullptr) return IoError(path + ": cannot write: " + std::strerror(errno));
  const bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  const bool flushed = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  const bool closed = std::fclose(file) == 0;
  if (!written || !flushed || !closed) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    return IoError(path + ": write failed: " + reason);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    return IoError(path + ": cannot replace: " + reason);
  }
  return Status::Ok();
}

}  // namespace zb

namespace zb {

Expected<LayerProfile> ParseLayersJson(const std::string& text, const std::string& source) {
  ZB_ASSIGN_OR_RETURN(nlohmann::json value, ParseJsonText(text, source));
  auto profile = ParseLayersValue(value);
  if (!profile.ok()) return profile.status().WithContext(source);
  return profile;
}

Expected<LayerProfile> ReadLayersFile(const std::string& path) {
  ZB_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseLayersJson(text, path);
}

std::string LayersToJson(const LayerProfile& profile) {
  // One block per line: a 40-block model stays readable and diffable.
  std::ostringstream out;
  out << "{\"format\": \"" << kLayersFormat
      << "\", \"comm\": " << nlohmann::json(NsToMs(profile.comm)) << ", \"source\": \""
      << LayerSourceName(profile.source) << "\",\n \"layers\": [";
  for (size_t i = 0; i < profile.layers.size(); ++i) {
    const LayerCost& layer = profile.layers[i];
    nlohmann::json entry = {{"name", layer.name},   {"F", NsToMs(layer.f)}, {"B", NsToMs(layer.b)},
                            {"W", NsToMs(layer.w)}, {"M_B", layer.m_b},     {"M_W", layer.m_w},
                            {"state", layer.state}, {"send", layer.send}};
    if (!layer.checkpointing.empty()) entry["checkpointing"] = layer.checkpointing;
    for (const CheckpointingOption& option : layer.options) {
      entry["options"].push_back({{"checkpointing", option.mode},
                                  {"F", NsToMs(option.f)},
                                  {"B", NsToMs(option.b)},
                                  {"W", NsToMs(option.w)},
                                  {"M_B", option.m_b},
                                  {"M_W", option.m_w},
                                  {"source", option.measured ? "measured" : "derived"}});
    }
    out << (i == 0 ? "\n  " : ",\n  ") << entry.dump();
  }
  out << "]}\n";
  return out.str();
}

}  // namespace zb
