// SPDX-License-Identifier: Apache-2.0
// Certified optima on small instances (`zb tune --exact`): the per-rank op orders of a schedule's
// op set solved exactly with Z3 on a disjunctive model (docs/search.md, "Exact solver"), or the gap
// between the best order found and the best bound proved when the time limit ends first.
//
// The model: one integer start time per op; the dependency edges of the simulator (plus the comm
// latency between ranks); for every pair of ops on one rank an order boolean (pairs whose order a
// chain of edges already implies get none); the per-rank activation cap checked at every op that
// raises memory (F), as the sum of the memory deltas of the ops ordered before it, with the
// precedences a cap forces on its own added as edges first. Each op type keeps microbatch order
// per stage (F(s,j) before F(s,j+1), the paper's ILP does the same): this removes the symmetric
// copies of a solution, so "optimal" means optimal among such (admitted) orders. The objective
// (makespan or span, objective.h) is minimised by bisection between a proved lower bound and the
// incumbent, each probe under the remaining time; every order found is simulated, and its simulated
// figure is what `upper` reports.
#ifndef ZBKIT_TUNER_EXACT_H_
#define ZBKIT_TUNER_EXACT_H_

#include <optional>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/objective.h"

namespace zb::tuner {

struct ExactOptions {
  Objective objective = Objective::kMakespan;
  double time_limit_s = 10;  // wall clock for the whole bisection
};

struct ExactResult {
  bool optimal = false;  // lower == upper: `best` is proved optimal
  TimeNs lower = 0;      // proved: no admitted order of the op set does better by the objective
  TimeNs upper = 0;      // the objective figure of `best`
  Schedule best;         // the best order found (simulated); the incumbent if nothing beat it
  double seconds = 0;    // wall clock, model building included
  int probes = 0;        // solver calls made
};

// True when zbkit was built with Z3; otherwise SolveExact returns kUsage saying so.
bool ExactSolverAvailable();

// `incumbent` fixes the op set (which backwards are split or fused), placement, chunks and costs,
// and is the starting upper bound; it must be valid, simulated and within `rank_caps` (+inf =
// none). Errors: kUsage when built without Z3 or the instance exceeds the size the model is for
// (more than 400 ops), kInvalidInput for an incumbent that does not fit its caps (with the relative
// tolerance of 1e-9 that tune.cpp allows). A span objective does not break equal spans by makespan.
Expected<ExactResult> SolveExact(const Schedule& incumbent, const std::vector<double>& rank_caps,
                                 const ExactOptions& options);

}  // namespace zb::tuner

#endif  // ZBKIT_TUNER_EXACT_H_
