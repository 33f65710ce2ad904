// SPDX-License-Identifier: Apache-2.0
// From attributed ops to a cost profile: per stage the median and spread (p10/p90) of T_F, T_B,
// T_W (T_BW when the job does not split the backward), communication per hop, M_B and M_W, and
// the measured timeline. Warm-up iterations are dropped first (--skip-iters).
#ifndef ZBKIT_PROFILER_COSTS_H_
#define ZBKIT_PROFILER_COSTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/profiler/attribution.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/types.h"

namespace zb::profiler {

// The store's types (zbkit/schemas/store.h) are the profiler's: a cost report's spreads, hops and
// memory source go into the store as they are.
using zb::MemorySource;
using zb::MemorySourceName;
using zb::Spread;
using HopStats = zb::HopCost;

// Median and the 10th/90th percentiles, linearly interpolated between the sorted samples (as
// numpy's default), rounded to the nearest nanosecond.
Spread SpreadOf(std::vector<TimeNs> values);

// Model dimensions for the analytic activation memory of the paper (per transformer layer and
// microbatch, in bytes with 16-bit activations): M_B = s*b*(34h + 5*a*s), M_W = 32*s*b*h.
struct ModelDims {
  int64_t hidden = 0;            // h
  int64_t heads = 0;             // a
  int64_t seq = 0;               // s
  int64_t micro_batch_size = 0;  // b
  int64_t layers = 0;            // transformer layers of the whole model, split evenly
  bool complete() const {
    return hidden > 0 && heads > 0 && seq > 0 && micro_batch_size > 0 && layers > 0;
  }
};

struct StageStats {
  int32_t stage = 0;
  int32_t rank = 0;
  Spread f, b, w, bw;
  // Per rank (CostReport::per_rank) only: the data-parallel collectives of one step, each
  // sample the sum over one (replica, iteration) (docs/data-parallel.md §5).
  Spread reduce, unshard;
  double unsharded = 0;  // bytes FSDP gathers on the rank (Attribution::unsharded_bytes)
  double reduced = 0;    // gradient bytes its reductions take in (Attribution::reduced_bytes)
  double m_b = 0;
  double m_w = 0;

  // The spread of one compute kind (F, B, W or BW; anything else reads as BW).
  Spread& Of(OpKind kind) {
    switch (kind) {
      case OpKind::kF:
        return f;
      case OpKind::kB:
        return b;
      case OpKind::kW:
        return w;
      default:
        return bw;
    }
  }
  const Spread& Of(OpKind kind) const { return const_cast<StageStats*>(this)->Of(kind); }
};

struct CostReport {
  int ranks = 0;
  int chunks = 1;
  int num_stages = 0;
  Placement placement = Placement::kLoop;
  bool layout_known = true;    // Attribution::layout_known
  std::string schedule_class;  // Attribution::schedule_class
  std::string checkpointing;   // Attribution::checkpointing
  int data_parallel = 0;       // Attribution::data_parallel
  bool split = false;          // the job runs W separately from B
  // Per model stage (ranks * chunks entries).
  std::vector<StageStats> stages;
  // Per pipeline rank: what zb tune consumes (one stage per rank). With several chunks per rank
  // each sample is the sum of the rank's chunks for one (iteration, microbatch).
  std::vector<StageStats> per_rank;
  std::vector<HopStats> hops;
  Spread comm;  // every hop's samples together
  MemorySource memory = MemorySource::kNone;
  int iterations_seen = 0;  // most iterations on any rank
  int iterations_used = 0;  // after --skip-iters
  int64_t ops_used = 0;
  Timeline timeline;  // measured, every op (warm-up included), t = 0 at the first op
  std::vector<std::string> notes;

  // The zb-costs/1 profile (per rank, medians), with the job's layout where it is known.
  // Without a B/W split: B = BW, W = 0.
  CostProfile ToCostProfile() const;
  // Spread and hops for the store.
  CostProfileDetails ToDetails() const;
};

struct CostOptions {
  int skip_iters = 0;
  std::optional<ModelDims> dims;  // for estimated memory when no allocation records exist
};

// InvalidInput when nothing is left to aggregate (no ops, or --skip-iters drops everything).
Expected<CostReport> BuildCostReport(const Attribution& attribution, const CostOptions& options);

}  // namespace zb::profiler

#endif  // ZBKIT_PROFILER_COSTS_H_
