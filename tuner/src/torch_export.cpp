// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/torch_export.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "zbkit/schemas/op_text.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/data_parallel.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {
namespace {

// Every W must follow its B on the rank. PyTorch's loader checks this too, but only when the
// file is loaded on the job's ranks; and zbkit's simulator would report it as a deadlock, which
// hides the reason.
Status CheckWeightAfterInput(const Schedule& schedule) {
  const int m = schedule.microbatches;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const RankProgram& program = schedule.programs[rank];
    std::vector<uint8_t> input_done(static_cast<size_t>(schedule.chunks) * m, 0);
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      const size_t slot = static_cast<size_t>(op.chunk) * m + op.microbatch;
      if (op.kind == OpKind::kB) input_done[slot] = 1;
      if (op.kind == OpKind::kW && !input_done[slot]) {
        return Infeasible("ranks[" + std::to_string(rank) + "].ops[" + std::to_string(i) +
                          "]: " + FormatOp(OpKind::kW, program.stages[op.chunk], op.microbatch) +
                          " runs before its input gradient " +
                          FormatOp(OpKind::kB, program.stages[op.chunk], op.microbatch) +
                          "; PyTorch cannot run a weight gradient first");
      }
    }
  }
  return Status::Ok();
}

// PyTorch <= 2.5 reads B as the input gradient or the whole backward for the whole schedule (the
// schedule's use_full_backward flag), so a schedule mixing fused and split backwards has no
// legacy spelling.
Status CheckLegacyExpressible(const Schedule& schedule) {
  bool fused = false;
  bool split = false;
  for (const RankProgram& program : schedule.programs) {
    for (const Op& op : program.ops) {
      fused = fused || op.kind == OpKind::kBW;
      split = split || op.kind == OpKind::kB;
    }
  }
  if (fused && split) {
    return Infeasible(
        "torch-csv-legacy cannot express this schedule: it mixes fused (BW) and split (B then W) "
        "backwards, and PyTorch <= 2.5 chooses one meaning of B for the whole schedule "
        "(use_full_backward); export it as torch-csv for PyTorch >= 2.6");
  }
  return Status::Ok();
}

// One cell of a compute+comms row.
struct Action {
  int stage;
  std::string token;
  int microbatch;  // -1: none (REDUCE_GRAD, UNSHARD, RESHARD)
};

// FSDP's parameter windows, placed as torch's own lowering places them (`_add_unshard_reshard`,
// torch 2.13; docs/data-parallel.md §4; the rule in data_parallel.h): before each compute op of a
// rank, the stages of its window not yet unsharded are unsharded, in the order they come, and the
// unsharded ones outside it resharded first; every stage still unsharded is resharded after the
// rank's last op. torch's runtime does nothing for them on a stage that is not FSDP, so every
// comms file has them. (torch reshards in its set's order, this in the stages' order: a RESHARD
// moves no data, so the order does not matter.)
void AddUnshardReshard(const UnshardWindow& coming, std::vector<int32_t>& active,
                       std::vector<Action>& row) {
  UnshardStep step;
  EnterUnshardWindow(coming, active, step);
  for (int32_t stage : step.resharded)
    row.push_back({stage, zb::TorchToken(ActionKind::kReshard), -1});
  for (int32_t stage : step.unsharded)
    row.push_back({stage, zb::TorchToken(ActionKind::kUnshard), -1});
}

// Lowers the compute order to compute + communication, the way PyTorch's runtime executes it:
// a SEND is posted (non-blocking) right after the op that produced the data, and the matching
// RECV is appended to the receiving rank's row at that same moment, so each pair of ranks posts
// its sends and receives in the same order (PyTorch's P2P ops carry no tag: they match in order).
// An op is placed only once its input has been received or computed locally, visiting the ranks
// round-robin; an order with a cycle makes no progress and is refused.
Expected<std::vector<std::vector<Action>>> LowerWithComms(const Schedule& schedule) {
  const int p = schedule.ranks;
  const int m = schedule.microbatches;
  const int num_stages = schedule.num_stages();
  const size_t slots = static_cast<size_t>(num_stages) * m;
  auto slot = [m](int stage, int mb) { return static_cast<size_t>(stage) * m + mb; };
  auto rank_of = [&](int stage) { return RankOfStage(schedule.placement, p, stage); };
  std::vector<uint8_t> forward_done(slots, 0), input_grad_done(slots, 0);
  std::vector<uint8_t> forward_received(slots, 0), grad_received(slots, 0);
  std::vector<std::vector<Action>> rows(p);
  std::vector<std::vector<int32_t>> unsharded(p);  // per rank, the stages FSDP holds gathered
  std::vector<std::vector<UnshardWindow>> windows;
  std::vector<std::vector<int32_t>> reductions;
  for (const RankProgram& program : schedule.programs) {
    windows.push_back(UnshardWindows(program));
    reductions.push_back(ReductionsAfter(program, m));
  }
  std::vector<size_t> next(p, 0);
  size_t remaining = 0;
  for (const RankProgram& program : schedule.programs)
    remaining += program.ops.size();

  while (remaining > 0) {
    bool progress = false;
    for (int rank = 0; rank < p; ++rank) {
      const RankProgram& program = schedule.programs[rank];
      if (next[rank] == program.ops.size()) continue;
      const Op& op = program.ops[next[rank]];
      const int stage = program.stages[op.chunk];
      const int mb = op.microbatch;
      const bool is_backward = op.kind == OpKind::kB || op.kind == OpKind::kBW;
      bool ready = true;
      if (op.kind == OpKind::kF && stage > 0) {
        ready = rank_of(stage - 1) == rank ? forward_done[slot(stage - 1, mb)] != 0
                                           : forward_received[slot(stage, mb)] != 0;
      } else if (is_backward && stage < num_stages - 1) {
        ready = rank_of(stage + 1) == rank ? input_grad_done[slot(stage + 1, mb)] != 0
                                           : grad_received[slot(stage, mb)] != 0;
      }
      if (!ready) continue;
      AddUnshardReshard(windows[rank][next[rank]], unsharded[rank], rows[rank]);
      rows[rank].push_back({stage, TorchToken(op.kind, TorchDialect::kModern), mb});
      if (op.kind == OpKind::kF) {
        forward_done[slot(stage, mb)] = 1;
        if (stage < num_stages - 1 && rank_of(stage + 1) != rank) {
          rows[rank].push_back({stage, zb::TorchToken(ActionKind::kSendF), mb});
          rows[rank_of(stage + 1)].push_back({stage + 1, zb::TorchToken(ActionKind::kRecvF), mb});
          forward_received[slot(stage + 1, mb)] = 1;
        }
      }
      if (is_backward) {
        input_grad_done[slot(stage, mb)] = 1;
        if (stage > 0 && rank_of(stage - 1) != rank) {
          rows[rank].push_back({stage, zb::TorchToken(ActionKind::kSendB), mb});
          rows[rank_of(stage - 1)].push_back({stage - 1, zb::TorchToken(ActionKind::kRecvB), mb});
          grad_received[slot(stage - 1, mb)] = 1;
        }
      }
      // PyTorch's runtime reduces (and scales) a stage's gradients at REDUCE_GRAD, which its own
      // lowering adds after the m-th full backward or weight gradient; a verbatim file must say it.
      if (const int32_t reduced = reductions[rank][next[rank]]; reduced >= 0) {
        rows[rank].push_back({reduced, zb::TorchToken(ActionKind::kReduceGrad), -1});
      }
      if (++next[rank] == program.ops.size()) {
        // After the rank's last op its window is empty: every stage left is resharded.
        AddUnshardReshard(UnshardWindow{-1, -1, -1}, unsharded[rank], rows[rank]);
      }
      --remaining;
      progress = true;
    }
    if (!progress) {
      std::string stuck;
      for (int rank = 0; rank < p; ++rank) {
        const RankProgram& program = schedule.programs[rank];
        if (next[rank] == program.ops.size()) continue;
        const Op& op = program.ops[next[rank]];
        stuck += (stuck.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) +
                 " at " + FormatOp(op.kind, program.stages[op.chunk], op.microbatch);
      }
      return Infeasible("the order deadlocks: no rank can run its next op (" + stuck + ")");
    }
  }
  return rows;
}

}  // namespace

const char* TorchToken(OpKind kind, TorchDialect dialect) {
  if (kind == OpKind::kComm) return "?";  // never in a valid schedule
  // The modern dialect is the vocabulary's (zbkit/schemas/op_text.h: I is B, B is BW); the legacy
  // one (torch <= 2.5) wrote zbkit's own names.
  return dialect == TorchDialect::kModern ? zb::TorchToken(ActionOf(kind)) : OpKindName(kind);
}

const char* ReplayRuntimeName(ReplayRuntime runtime) {
  return runtime == ReplayRuntime::kTorch ? "torch" : "zbkit";
}

std::optional<ReplayRuntime> ParseReplayRuntime(std::string_view name) {
  if (name == "torch") return ReplayRuntime::kTorch;
  if (name == "zbkit") return ReplayRuntime::kZbkit;
  return std::nullopt;
}

bool TorchRuntimeOrders(int num_stages, OpKind later_kind, int later_stage, int later_mb,
                        OpKind earlier_kind, int earlier_stage, int earlier_mb) {
  const int last = num_stages - 1;
  return later_kind == OpKind::kF && earlier_kind == OpKind::kF && later_stage == last &&
         earlier_stage == last && earlier_mb < later_mb;
}

Status CheckTorchRuntimeRules(const Schedule& schedule) {
  const int last = schedule.num_stages() - 1;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const RankProgram& program = schedule.programs[rank];
    int expected = 0;  // the microbatch the next forward of the last stage must be
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind != OpKind::kF || program.stages[op.chunk] != last) continue;
      if (op.microbatch != expected) {
        return Infeasible(
            "PyTorch runtime rule \"last stage's forwards in microbatch order\" "
            "(docs/formats.md §4.1): rank " +
            std::to_string(rank) + ", stage " + std::to_string(last) + " runs F" +
            std::to_string(op.microbatch) + " (ops[" + std::to_string(i) + "]) before F" +
            std::to_string(expected) + "; PyTorch would start microbatch " +
            std::to_string(expected) + "'s backward from microbatch " +
            std::to_string(op.microbatch) + "'s loss (tune with --runtime torch)");
      }
      ++expected;
    }
  }
  return Status::Ok();
}

std::string ToTorchCsv(const Schedule& schedule, TorchDialect dialect) {
  std::ostringstream out;
  for (const RankProgram& program : schedule.programs) {
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      out << (i ? "," : "") << program.stages[op.chunk] << TorchToken(op.kind, dialect)
          << op.microbatch;
    }
    out << "\n";
  }
  return out.str();
}

Status CheckTorchExportable(const Schedule& schedule, TorchCsvFormat format) {
  ZB_RETURN_IF_ERROR(ValidateSchedule(schedule));
  ZB_RETURN_IF_ERROR(CheckWeightAfterInput(schedule));
  Schedule simulated = schedule;
  Status run = Simulate(simulated);
  if (!run.ok()) {
    return Infeasible("PyTorch would hang on this order: " + run.message());
  }
  ZB_RETURN_IF_ERROR(CheckTorchRuntimeRules(schedule));
  if (format == TorchCsvFormat::kLegacyComputeOnly) {
    ZB_RETURN_IF_ERROR(CheckLegacyExpressible(schedule));
  }
  return Status::Ok();
}

Expected<std::string> ExportTorchCsv(const Schedule& schedule, TorchCsvFormat format) {
  ZB_RETURN_IF_ERROR(CheckTorchExportable(schedule, format));
  if (format == TorchCsvFormat::kComputeOnly) return ToTorchCsv(schedule, TorchDialect::kModern);
  if (format == TorchCsvFormat::kLegacyComputeOnly) {
    return ToTorchCsv(schedule, TorchDialect::kLegacy);
  }
  ZB_ASSIGN_OR_RETURN(auto rows, LowerWithComms(schedule));
  std::ostringstream out;
  for (const std::vector<Action>& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out << (i ? "," : "") << row[i].stage << row[i].token;
      if (row[i].microbatch >= 0) out << row[i].microbatch;
    }
    out << "\n";
  }
  return out.str();
}

CostProfile TorchRuntimeCosts(CostProfile scheduled) {
  if (scheduled.stages.empty()) return scheduled;
  StageCost& first = scheduled.stages.front();
  first.w += first.b;
  first.b = 0;
  first.m_w = first.m_b;
  return scheduled;
}

}  // namespace zb::tuner
