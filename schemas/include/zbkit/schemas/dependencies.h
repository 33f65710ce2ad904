// SPDX-License-Identifier: Apache-2.0
// The pipeline dependency rule: which op an op must wait for before it can start.
//
// One definition for every component that reasons about it: the simulator times ops with it
// (zbkit/tuner/simulator.h) and TimelineIndex::WaitedFor explains bubbles with it, so a predicted
// timeline and the explanation of its bubbles cannot disagree. Stages are the model chunks
// 0 .. num_stages-1 in pipeline order, whichever rank holds them; j is the microbatch.
//
//   F(s, j)      <- F(s-1, j)               the previous stage's activation; none on stage 0
//   B(s, j)      <- B(s+1, j) or BW(s+1, j)  the gradient w.r.t. the next stage's input
//                <- F(s, j) on the last stage (the loss needs only its own forward)
//   BW(s, j)     as B (a fused backward needs what B needs)
//   W(s, j)      <- B(s, j)                 the weight gradient reuses the input gradient's work
//   COMM         none (communication follows from the compute dependencies)
//
// Each op waits for at most one op. Header-only: the simulator asks once per op in its inner loop.
#ifndef ZBKIT_SCHEMAS_DEPENDENCIES_H_
#define ZBKIT_SCHEMAS_DEPENDENCIES_H_

#include <cstdint>
#include <optional>

#include "zbkit/schemas/types.h"

namespace zb {

// What the rule needs to know about the pipeline.
struct DependencyRule {
  int num_stages = 0;
  // 0 normally. When > 0, the ZB paper authors' interleaved 1F1B simulation
  // (SimulationOptions::paper_interleaved_quirk, loop placement, several chunks per rank, with
  // wrap_period = ranks): the wrap-around edge from stage k*p-1 to stage k*p (and its mirror for
  // B) holds only for microbatches j with j % wrap_period == 0. Physically wrong; kept so the
  // published table can be reproduced.
  int wrap_period = 0;
};

// The op an op waits for: the op of `kind` at (stage, microbatch). When `or_fused_backward` is
// set, a fused BW at the same (stage, microbatch) delivers it as well (a stage that ran its
// backward fused still sends the input gradient); an index that files a BW under its B already
// (the simulator's) can ignore the flag.
struct Dependency {
  OpKind kind = OpKind::kF;
  int32_t stage = 0;
  int32_t microbatch = 0;
  bool or_fused_backward = false;

  bool operator==(const Dependency&) const = default;
};

// The dependency of op `kind` at (stage, microbatch), or nullopt when it waits for nothing.
inline std::optional<Dependency> WaitsFor(OpKind kind, int32_t stage, int32_t microbatch,
                                          const DependencyRule& rule) {
  const bool quirk = rule.wrap_period > 0 && microbatch % rule.wrap_period != 0;
  switch (kind) {
    case OpKind::kF:
      if (stage == 0) return std::nullopt;
      if (quirk && stage % rule.wrap_period == 0) return std::nullopt;
      return Dependency{OpKind::kF, stage - 1, microbatch, false};
    case OpKind::kB:
    case OpKind::kBW:
      if (stage == rule.num_stages - 1) return Dependency{OpKind::kF, stage, microbatch, false};
      if (quirk && (stage + 1) % rule.wrap_period == 0) return std::nullopt;
      return Dependency{OpKind::kB, stage + 1, microbatch, true};
    case OpKind::kW:
      return Dependency{OpKind::kB, stage, microbatch, false};
    case OpKind::kComm:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_DEPENDENCIES_H_
