// SPDX-License-Identifier: Apache-2.0
// Structural validation of model objects, independent of how they were read.
#ifndef ZBKIT_SCHEMAS_VALIDATE_H_
#define ZBKIT_SCHEMAS_VALIDATE_H_

#include <string>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb {

// The longest time one op (F, B, W, BW) or one hop of a profile may take: an hour. A schedule's
// times are sums of these on the int64 nanosecond clock: with PyTorch's runtime costs (stage 0's
// W = B + W, at most two hours) and at most kMaxScheduleOps ops (tuner/tune.h) their sum stays
// below 2^63 ns (7.2e12 ns x 2^20 ops = 7.5e18 < 9.2e18).
inline constexpr TimeNs kMaxOpTime = 3'600'000'000'000;
// `field: X ms is more than an hour ...` when `ms` (as the user wrote it) exceeds kMaxOpTime
// times `factor` (2 for a schedule's costs, which may carry torch's stage-0 W = B + W).
Status CheckOpTime(const std::string& field, double ms, int factor = 1);

// The most one stage's M_B (and so M_W) may be: 2^50, 1 PiB in bytes. A rank's peak is a sum of
// these over at most kMaxScheduleOps ops (tuner/tune.h), 2^70 at most: a double holds it, where
// an unbounded M_B (1e308) made the peak infinite and its ratios NaN.
inline constexpr double kMaxMemory = 1125899906842624.0;

// Every time finite and >= 0, F > 0, memory finite, >= 0 and at most kMaxMemory (M_W, what is held
// from B until W, may exceed M_B under activation checkpointing: docs/activation-checkpointing.md
// §2), comm >= 0, at least one stage. Errors name the field and say why, e.g.
// `stages[2].M_W: must be a finite number >= 0`.
Status ValidateCostProfile(const CostProfile& costs);

// A profile to tune: ValidateCostProfile, and every time at most kMaxOpTime (CheckOpTime).
Status ValidateProfileToTune(const CostProfile& costs);

// p >= 1, m >= 1, v >= 1 (v == 2 for placement v), costs for p*v stages, each rank holds the
// stages its placement says, and every (kind, stage, microbatch) op appears exactly once
// (a BW op stands for both B and W; a stage is either fully split or fully fused per microbatch).
// Errors name the path, e.g. `ranks[1].ops[7]: duplicate W of stage 1 microbatch 3`.
Status ValidateSchedule(const Schedule& schedule);

// A hop measurement as zb-hops/1 and the store take it: message_bytes >= 1, a source, at least
// one hop, and per hop ranks >= 0 that differ, a time >= 0, no (from, to) pair twice. Errors name
// the field, e.g. `hops[2]: ranks must be >= 0 and differ, got 1 -> 1`. (The cluster is the
// store's to check: a file does not name it.)
Status ValidateHopMeasurement(const HopMeasurement& measurement);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_VALIDATE_H_
