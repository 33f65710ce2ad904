// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/torch_orders.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "zbkit/schemas/op_text.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/torch_export.h"

namespace zb::tuner {
namespace {

struct Cell {
  int stage = 0;
  OpKind kind = OpKind::kF;
  int microbatch = 0;
};

// "3I7" -> stage 3, input gradient, microbatch 7; nullopt for anything but a compute cell.
std::optional<Cell> ParseCell(const std::string& text) {
  size_t i = 0;
  auto digits = [&](int& value) {
    const size_t first = i;
    value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - first < 9)
      value = value * 10 + (text[i++] - '0');
    return i > first;
  };
  Cell cell;
  if (!digits(cell.stage) || i >= text.size()) return std::nullopt;
  // The exporter's table (torch_export.h), read backwards: every modern token is one letter.
  const char letter = text[i++];
  bool known = false;
  for (OpKind kind : {OpKind::kF, OpKind::kB, OpKind::kW, OpKind::kBW}) {
    if (TorchToken(kind, TorchDialect::kModern) == std::string(1, letter)) {
      cell.kind = kind;
      known = true;
    }
  }
  if (!known || !digits(cell.microbatch) || i != text.size()) return std::nullopt;
  return cell;
}

bool IsCommunication(const std::string& text) {
  for (const ActionKind action : {ActionKind::kSendF, ActionKind::kRecvF, ActionKind::kSendB,
                                  ActionKind::kRecvB, ActionKind::kReduceGrad}) {
    if (text.find(zb::TorchToken(action)) != std::string::npos) return true;
  }
  return false;
}

std::string Trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

Expected<Schedule> ScheduleFromTorchCsv(const std::string& csv, const std::string& where,
                                        const CostProfile& rank_costs, int microbatches) {
  std::vector<std::vector<Cell>> rows;
  std::map<int, int> rank_of;  // stage -> rank
  std::istringstream lines(csv);
  std::string line;
  while (std::getline(lines, line)) {
    const int rank = static_cast<int>(rows.size());
    rows.emplace_back();
    std::istringstream cells(line);
    std::string text;
    while (std::getline(cells, text, ',')) {
      text = Trim(text);
      if (text.empty() || IsCommunication(text)) continue;
      const std::optional<Cell> cell = ParseCell(text);
      if (!cell) {
        return InvalidInput(where + ": row " + std::to_string(rank) + ": \"" + text +
                            "\" is not a compute action <stage><F|I|W|B><microbatch>");
      }
      const auto [it, added] = rank_of.emplace(cell->stage, rank);
      if (!added && it->second != rank) {
        return InvalidInput(where + ": row " + std::to_string(rank) + ": stage " +
                            std::to_string(cell->stage) + " is also on rank " +
                            std::to_string(it->second));
      }
      rows.back().push_back(*cell);
    }
  }
  while (!rows.empty() && rows.back().empty())
    rows.pop_back();
  const int p = static_cast<int>(rows.size());
  if (p != rank_costs.num_stages()) {
    return InvalidInput(where + ": " + std::to_string(p) + " ranks, the profile has " +
                        std::to_string(rank_costs.num_stages()));
  }
  const int num_stages = rank_of.empty() ? 0 : rank_of.rbegin()->first + 1;
  if (num_stages % p != 0 || num_stages == 0) {
    return InvalidInput(where + ": " + std::to_string(num_stages) + " stages over " +
                        std::to_string(p) + " ranks (not a whole number per rank)");
  }
  // Every stage up to the highest named has actions: a gap is no schedule, and without this
  // check one cell naming stage 10^7 made the costs split ten million ways (found by
  // tests/fuzz/fuzz_torch_csv).
  if (static_cast<int>(rank_of.size()) != num_stages) {
    int missing = 0;
    while (rank_of.count(missing))
      ++missing;
    return InvalidInput(where + ": stage " + std::to_string(missing) + " has no action (the CSV " +
                        "names stages up to " + std::to_string(num_stages - 1) + ")");
  }
  Schedule schedule;
  schedule.ranks = p;
  schedule.microbatches = microbatches;
  schedule.chunks = num_stages / p;
  // Loop unless the stages lie in V placement (which needs 2 chunks).
  schedule.placement = Placement::kLoop;
  if (schedule.chunks == 2) {
    bool v = true;
    for (const auto& [stage, rank] : rank_of)
      v = v && RankOfStage(Placement::kV, p, stage) == rank;
    if (v) schedule.placement = Placement::kV;
  }
  for (const auto& [stage, rank] : rank_of) {
    if (RankOfStage(schedule.placement, p, stage) != rank) {
      return InvalidInput(where + ": stage " + std::to_string(stage) + " on rank " +
                          std::to_string(rank) + " is neither loop nor V placement");
    }
  }
  schedule.family = "torch";
  schedule.costs = rank_costs.SplitStages(schedule.chunks);
  schedule.programs.resize(p);
  for (int r = 0; r < p; ++r) {
    RankProgram& program = schedule.programs[r];
    for (int c = 0; c < schedule.chunks; ++c)
      program.stages.push_back(StageOfChunk(schedule.placement, p, r, c));
    for (const Cell& cell : rows[r]) {
      Op op;
      op.kind = cell.kind;
      op.chunk =
          static_cast<int32_t>(std::find(program.stages.begin(), program.stages.end(), cell.stage) -
                               program.stages.begin());
      op.microbatch = cell.microbatch;
      program.ops.push_back(op);
    }
  }
  ZB_RETURN_IF_ERROR(ValidateSchedule(schedule).WithContext(where));
  return schedule;
}

}  // namespace zb::tuner
