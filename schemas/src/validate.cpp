// SPDX-License-Identifier: Apache-2.0
#include "zbkit/schemas/validate.h"

#include <cmath>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace zb {
namespace {

std::string OpName(OpKind kind, int stage, int microbatch) {
  return std::string(OpKindName(kind)) + " of stage " + std::to_string(stage) + " microbatch " +
         std::to_string(microbatch);
}

}  // namespace

Status CheckOpTime(const std::string& field, double ms, int factor) {
  const double limit_ms = NsToMs(kMaxOpTime) * factor;
  if (ms <= limit_ms) return Status::Ok();
  std::ostringstream message;
  message << field << ": " << ms << " ms is more than " << (factor == 1 ? "an hour" : "two hours")
          << " (" << static_cast<int64_t>(limit_ms)
          << " ms), the most one op or hop may take: a schedule's times are "
          << "sums on a nanosecond clock";
  return InvalidInput(message.str());
}

Status ValidateCostProfile(const CostProfile& costs) {
  if (costs.stages.empty()) return InvalidInput("stages: must hold at least one stage");
  if (costs.comm < 0) return InvalidInput("comm: must be >= 0");
  if (costs.data_parallel < 0 || costs.data_parallel > kMaxCount) {
    return InvalidInput("data_parallel: must be 0 (not known) to " + std::to_string(kMaxCount) +
                        ", got " + std::to_string(costs.data_parallel));
  }
  if (!costs.checkpointing.empty() && !IsCheckpointingMode(costs.checkpointing)) {
    return InvalidInput("checkpointing: must be one of " + std::string(CheckpointingModeList()) +
                        ", got \"" + costs.checkpointing + "\"");
  }
  for (size_t i = 0; i < costs.stages.size(); ++i) {
    const StageCost& stage = costs.stages[i];
    const std::string path = "stages[" + std::to_string(i) + "].";
    if (stage.f <= 0) return InvalidInput(path + "F: must be > 0");
    if (stage.b < 0) return InvalidInput(path + "B: must be >= 0");
    if (stage.w < 0) return InvalidInput(path + "W: must be >= 0");
    if (stage.bw < 0) return InvalidInput(path + "BW: must be >= 0");
    if (stage.reduce < 0) return InvalidInput(path + "reduce: must be >= 0");
    if (stage.unshard < 0) return InvalidInput(path + "unshard: must be >= 0");
    if (!std::isfinite(stage.unsharded) || stage.unsharded < 0 || stage.unsharded > kMaxMemory) {
      return InvalidInput(path + "unsharded: must be a finite number from 0 to 2^50");
    }
    if (!std::isfinite(stage.reduced) || stage.reduced < 0 || stage.reduced > kMaxMemory) {
      return InvalidInput(path + "reduced: must be a finite number from 0 to 2^50");
    }
    if (!std::isfinite(stage.m_b) || stage.m_b < 0) {
      return InvalidInput(path + "M_B: must be a finite number >= 0");
    }
    if (!std::isfinite(stage.m_w) || stage.m_w < 0) {
      return InvalidInput(path + "M_W: must be a finite number >= 0");
    }
    if (stage.m_b > kMaxMemory) {
      std::ostringstream message;
      message << path << "M_B: " << stage.m_b
              << " is more than 2^50 (1 PiB in bytes), the most one microbatch's activations may "
                 "hold: a rank's peak sums them over up to 2^20 ops and must stay a number";
      return InvalidInput(message.str());
    }
    // M_W may exceed M_B: under activation checkpointing B recomputes a block and keeps what W
    // needs of it (docs/activation-checkpointing.md §2); it is bounded like M_B.
    if (stage.m_w > kMaxMemory) {
      std::ostringstream message;
      message << path << "M_W: " << stage.m_w
              << " is more than 2^50 (1 PiB in bytes), the most one microbatch's activations may "
                 "hold";
      return InvalidInput(message.str());
    }
  }
  return Status::Ok();
}

Status ValidateProfileToTune(const CostProfile& costs) {
  ZB_RETURN_IF_ERROR(ValidateCostProfile(costs));
  ZB_RETURN_IF_ERROR(CheckOpTime("comm", NsToMs(costs.comm)));
  for (size_t i = 0; i < costs.stages.size(); ++i) {
    const StageCost& stage = costs.stages[i];
    const std::string path = "stages[" + std::to_string(i) + "].";
    for (const auto& [name, time] : {std::pair{"F", stage.f},
                                     {"B", stage.b},
                                     {"W", stage.w},
                                     {"BW", stage.bw},
                                     {"reduce", stage.reduce},
                                     {"unshard", stage.unshard}}) {
      ZB_RETURN_IF_ERROR(CheckOpTime(path + name, NsToMs(time)));
    }
  }
  return Status::Ok();
}

Status ValidateSchedule(const Schedule& schedule) {
  const int p = schedule.ranks;
  const int m = schedule.microbatches;
  const int v = schedule.chunks;
  if (p < 1)
    return InvalidInput("stages: the number of ranks must be >= 1, got " + std::to_string(p));
  if (m < 1) return InvalidInput("microbatches: must be >= 1, got " + std::to_string(m));
  if (v < 1) return InvalidInput("chunks: must be >= 1, got " + std::to_string(v));
  if (schedule.placement == Placement::kV && v != 2) {
    return InvalidInput("chunks: placement \"v\" needs exactly 2 chunks per rank, got " +
                        std::to_string(v));
  }
  const int num_stages = p * v;
  if (schedule.costs.num_stages() != num_stages) {
    return InvalidInput("costs.stages: expected " + std::to_string(num_stages) +
                        " stages (ranks x chunks), got " +
                        std::to_string(schedule.costs.num_stages()));
  }
  ZB_RETURN_IF_ERROR(ValidateCostProfile(schedule.costs).WithContext("costs"));
  if (static_cast<int>(schedule.programs.size()) != p) {
    return InvalidInput("ranks: expected " + std::to_string(p) + " ranks, got " +
                        std::to_string(schedule.programs.size()));
  }

  // seen[(kind, stage, mb)] for F, B, W; a BW marks both B and W, so mixing BW with B or W of
  // the same microbatch shows up as a duplicate.
  const size_t per_kind = static_cast<size_t>(num_stages) * m;
  std::vector<uint8_t> seen(3 * per_kind, 0);
  for (int rank = 0; rank < p; ++rank) {
    const RankProgram& program = schedule.programs[rank];
    const std::string rank_path = "ranks[" + std::to_string(rank) + "]";
    if (static_cast<int>(program.stages.size()) != v) {
      return InvalidInput(rank_path + ".stages: expected " + std::to_string(v) +
                          " stage ids, got " + std::to_string(program.stages.size()));
    }
    for (int chunk = 0; chunk < v; ++chunk) {
      const int expected = StageOfChunk(schedule.placement, p, rank, chunk);
      if (program.stages[chunk] != expected) {
        return InvalidInput(rank_path + ".stages[" + std::to_string(chunk) + "]: placement \"" +
                            PlacementName(schedule.placement) + "\" puts stage " +
                            std::to_string(expected) + " here, got " +
                            std::to_string(program.stages[chunk]));
      }
    }
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      const std::string path = rank_path + ".ops[" + std::to_string(i) + "]";
      if (op.chunk < 0 || op.chunk >= v) {
        return InvalidInput(path + ".chunk: must be in [0, " + std::to_string(v) + "), got " +
                            std::to_string(op.chunk));
      }
      if (op.microbatch < 0 || op.microbatch >= m) {
        return InvalidInput(path + ".mb: must be in [0, " + std::to_string(m) + "), got " +
                            std::to_string(op.microbatch));
      }
      if (op.end < op.start) return InvalidInput(path + ": end is before start");
      if (op.kind == OpKind::kComm) {
        return InvalidInput(path + ".type: COMM ops belong in measured timelines, not schedules");
      }
      const int stage = program.stages[op.chunk];
      const size_t slot = static_cast<size_t>(stage) * m + op.microbatch;
      auto mark = [&](OpKind kind) -> Status {
        uint8_t& flag = seen[static_cast<size_t>(kind) * per_kind + slot];
        if (flag) return InvalidInput(path + ": duplicate " + OpName(kind, stage, op.microbatch));
        flag = 1;
        return Status::Ok();
      };
      if (op.kind == OpKind::kBW) {
        ZB_RETURN_IF_ERROR(mark(OpKind::kB));
        ZB_RETURN_IF_ERROR(mark(OpKind::kW));
      } else {
        ZB_RETURN_IF_ERROR(mark(op.kind));
      }
    }
  }
  for (int kind = 0; kind < 3; ++kind) {
    for (int stage = 0; stage < num_stages; ++stage) {
      for (int mb = 0; mb < m; ++mb) {
        if (!seen[kind * per_kind + static_cast<size_t>(stage) * m + mb]) {
          return InvalidInput("ranks[" + std::to_string(RankOfStage(schedule.placement, p, stage)) +
                              "].ops: missing " + OpName(static_cast<OpKind>(kind), stage, mb));
        }
      }
    }
  }
  return Status::Ok();
}

Status ValidateHopMeasurement(const HopMeasurement& measurement) {
  if (measurement.message_bytes < 1) {
    return InvalidInput("message_bytes must be >= 1, got " +
                        std::to_string(measurement.message_bytes));
  }
  if (measurement.source.empty()) return InvalidInput("source is empty");
  if (measurement.hops.empty()) return InvalidInput("hops is empty");
  std::set<std::pair<int32_t, int32_t>> seen;
  for (size_t i = 0; i < measurement.hops.size(); ++i) {
    const MeasuredHop& hop = measurement.hops[i];
    const std::string where = "hops[" + std::to_string(i) + "]";
    if (hop.from_rank < 0 || hop.to_rank < 0 || hop.from_rank == hop.to_rank) {
      return InvalidInput(where + ": ranks must be >= 0 and differ, got " +
                          std::to_string(hop.from_rank) + " -> " + std::to_string(hop.to_rank));
    }
    if (hop.time < 0) return InvalidInput(where + ".time must be >= 0");
    if (!seen.insert({hop.from_rank, hop.to_rank}).second) {
      return InvalidInput(where + ": the pair " + std::to_string(hop.from_rank) + " -> " +
                          std::to_string(hop.to_rank) + " appears twice");
    }
  }
  return Status::Ok();
}

}  // namespace zb
