// SPDX-License-Identifier: Apache-2.0
// The exact solver of exact.h: a disjunctive model of one op set's per-rank orders, solved by Z3
// probe by probe (docs/search.md, "Exact solver"). Built without Z3, only the two entry points
// remain and say so.
#include "zbkit/tuner/exact.h"

#include "exact_graph.h"

#ifdef ZBKIT_HAVE_Z3

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zbkit/schemas/dependencies.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/objective.h"
#include "zbkit/tuner/simulator.h"

#endif  // ZBKIT_HAVE_Z3

namespace zb::tuner {

#ifdef ZBKIT_HAVE_Z3

namespace {

using exact_graph::BuildGraph;
using exact_graph::Edge;
using exact_graph::Graph;
using exact_graph::LowerBound;
using exact_graph::Node;

// The model's size grows with the square of the ops per rank; beyond this Z3 does not close the
// gap in any useful time, so a larger request is refused instead of left to run out its limit.
constexpr int64_t kMaxOps = 400;

using Clock = std::chrono::steady_clock;

// Decimal digits times 2^k, for exact numerals.
std::string TimesPowerOfTwo(std::string digits, int k) {
  for (int i = 0; i < k; ++i) {
    int carry = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
      const int d = (*it - '0') * 2 + carry;
      *it = static_cast<char>('0' + d % 10);
      carry = d / 10;
    }
    if (carry > 0) digits.insert(digits.begin(), static_cast<char>('0' + carry));
  }
  return digits;
}

// A finite double as the exact rational it is, so that memory sums in the model are exact
// whatever unit the profile uses (docs/cost-model.md §2: bytes, or fractions of M_B).
z3::expr ExactReal(z3::context& ctx, double value) {
  if (value == 0) return ctx.real_val(0);
  int exponent = 0;
  const double fraction = std::frexp(std::fabs(value), &exponent);
  int64_t mantissa = static_cast<int64_t>(std::ldexp(fraction, 53));
  exponent -= 53;
  while (mantissa % 2 == 0) {
    mantissa /= 2;
    ++exponent;
  }
  const std::string digits = std::to_string(mantissa);
  const std::string text = exponent >= 0 ? TimesPowerOfTwo(digits, exponent)
                                         : digits + "/" + TimesPowerOfTwo("1", -exponent);
  const z3::expr magnitude = ctx.real_val(text.c_str());
  return value < 0 ? (-magnitude).simplify() : magnitude;
}

// The disjunctive model over one graph: everything but the objective bound of a probe.
class Model {
 public:
  Model(const Graph& graph, const std::vector<double>& caps, Objective objective)
      : graph_(graph), ctx_(), base_(ctx_), start_(ctx_), order_(ctx_), first_(ctx_) {
    Build(caps, objective);
  }

  z3::context& ctx() { return ctx_; }
  const z3::expr_vector& base() const { return base_; }
  const z3::expr_vector& start() const { return start_; }

  // The constraints that bound the objective by `bound` units.
  z3::expr_vector Bound(Objective objective, int64_t bound) {
    z3::expr_vector constraints(ctx_);
    const int n = static_cast<int>(graph_.nodes.size());
    if (objective == Objective::kMakespan) {
      for (int x = 0; x < n; ++x) {
        constraints.push_back(start_[x] <=
                              ctx_.int_val(bound - graph_.nodes[x].duration - graph_.tail[x]));
      }
      return constraints;
    }
    for (size_t r = 0; r < graph_.rank_nodes.size(); ++r) {
      for (int y : graph_.rank_nodes[r]) {
        constraints.push_back(start_[y] - first_[static_cast<unsigned>(r)] <=
                              ctx_.int_val(bound - graph_.nodes[y].duration));
      }
    }
    return constraints;
  }

 private:
  // Whether a runs before b (same rank): a constant when the graph fixes it, else the pair's
  // order boolean.
  z3::expr Before(int a, int b) {
    if (graph_.Reaches(a, b)) return ctx_.bool_val(true);
    if (graph_.Reaches(b, a)) return ctx_.bool_val(false);
    const int r = graph_.nodes[a].rank;
    const int i = local_[a];
    const int j = local_[b];
    const int index = pair_index_[r][static_cast<size_t>(std::min(i, j)) * rank_size(r) +
                                     static_cast<size_t>(std::max(i, j))];
    const z3::expr variable = order_[static_cast<unsigned>(index)];
    return i < j ? variable : !variable;
  }
  size_t rank_size(int r) const { return graph_.rank_nodes[r].size(); }

  void Build(const std::vector<double>& caps, Objective objective) {
    const int n = static_cast<int>(graph_.nodes.size());
    const int p = static_cast<int>(graph_.rank_nodes.size());
    for (int x = 0; x < n; ++x) {
      start_.push_back(ctx_.int_const(("s" + std::to_string(x)).c_str()));
      base_.push_back(start_[x] >= ctx_.int_val(graph_.head[x]));
    }
    auto end = [&](int x) { return start_[x] + ctx_.int_val(graph_.nodes[x].duration); };
    for (int x = 0; x < n; ++x) {
      for (const Edge& edge : graph_.out[x])
        base_.push_back(start_[edge.to] >= start_[x] + ctx_.int_val(edge.lag));
    }

    local_.assign(n, 0);
    pair_index_.assign(p, {});
    for (int r = 0; r < p; ++r) {
      const std::vector<int>& ids = graph_.rank_nodes[r];
      const size_t size = ids.size();
      for (size_t i = 0; i < size; ++i)
        local_[ids[i]] = static_cast<int>(i);
      pair_index_[r].assign(size * size, -1);
      for (size_t i = 0; i < size; ++i) {
        for (size_t j = i + 1; j < size; ++j) {
          const int a = ids[i];
          const int b = ids[j];
          if (graph_.Reaches(a, b) || graph_.Reaches(b, a)) continue;
          const z3::expr variable =
              ctx_.bool_const(("o" + std::to_string(a) + "_" + std::to_string(b)).c_str());
          pair_index_[r][i * size + j] = static_cast<int>(order_.size());
          order_.push_back(variable);
          // Disjunctive: one runs wholly before the other.
          base_.push_back(z3::implies(variable, start_[b] >= end(a)));
          base_.push_back(z3::implies(!variable, start_[a] >= end(b)));
        }
      }
    }

    // Memory, checked after every op that raises it (the prefix maxima of docs/cost-model.md §4).
    for (int r = 0; r < p && r < static_cast<int>(caps.size()); ++r) {
      if (!std::isfinite(caps[r])) continue;
      for (int x : graph_.rank_nodes[r]) {
        const double delta = graph_.nodes[x].delta;
        if (delta <= 0) continue;
        // The most x can ever see, to drop a constraint that can never bind; its float error is
        // covered by a margin on the magnitudes summed.
        double worst = delta;
        double scale = std::fabs(caps[r]) + delta;
        z3::expr_vector terms(ctx_);
        terms.push_back(ExactReal(ctx_, delta));
        for (int y : graph_.rank_nodes[r]) {
          const double other = graph_.nodes[y].delta;
          if (y == x || other == 0 || graph_.Reaches(x, y)) continue;
          scale += std::fabs(other);
          if (graph_.Reaches(y, x)) {
            worst += other;
            terms.push_back(ExactReal(ctx_, other));
          } else {
            if (other > 0) worst += other;
            terms.push_back(z3::ite(Before(y, x), ExactReal(ctx_, other), ctx_.real_val(0)));
          }
        }
        // Within the cap in any order, by more than the tolerance: no constraint needed.
        if (FitsCap(worst, caps[r], scale)) continue;  // no order of the set can exceed it
        base_.push_back(z3::sum(terms) <= ExactReal(ctx_, caps[r]));
      }
    }

    if (objective == Objective::kSpan) BuildSpan();
  }

  // The span of an order is what the simulator makes of it: each rank's first F starts as early
  // as the order allows. A solution that delayed it would shorten its span, an option the
  // simulator (and the runtime) never takes. Usually each rank's first F runs first on its rank in
  // every admitted order and waits on a chain of ops that do the same (F(r, 0) on loop and V
  // placements), so the simulator starts it at its head whatever the order: pinning it there
  // makes the model exact at no cost. Otherwise every op is made to start as early as its rank and
  // its dependency allow, which is exact too but much harder for the solver.
  void BuildSpan() {
    const int n = static_cast<int>(graph_.nodes.size());
    const int p = static_cast<int>(graph_.rank_nodes.size());
    std::vector<int> by_topo(n);
    for (int x = 0; x < n; ++x)
      by_topo[graph_.topo_position[x]] = x;
    std::vector<char> pinned(n, 0);
    for (int x : by_topo) {
      const Node& node = graph_.nodes[x];
      bool first = node.dependency < 0 || pinned[node.dependency];
      for (int y : graph_.rank_nodes[node.rank])
        first = first && (y == x || graph_.Reaches(x, y));
      pinned[x] = first;
    }
    std::vector<int> first_f(p, -1);
    bool all_pinned = true;
    for (int r = 0; r < p; ++r) {
      for (int x : graph_.rank_nodes[r])
        if (pinned[x] && graph_.nodes[x].kind == OpKind::kF) first_f[r] = x;
      all_pinned = all_pinned && (first_f[r] >= 0 || graph_.rank_nodes[r].empty());
    }
    if (all_pinned) {
      for (int r = 0; r < p; ++r) {
        if (first_f[r] < 0) {
          first_.push_back(ctx_.int_val(0));  // a rank without ops: nothing to bound
          continue;
        }
        const z3::expr start = start_[first_f[r]];
        base_.push_back(start == ctx_.int_val(graph_.head[first_f[r]]));
        first_.push_back(start);
      }
      return;
    }

    for (int r = 0; r < p; ++r) {
      const std::vector<int>& ids = graph_.rank_nodes[r];
      for (int x : ids) {
        const Node& node = graph_.nodes[x];
        z3::expr_vector tight(ctx_);
        if (node.dependency >= 0) {
          tight.push_back(start_[x] == start_[node.dependency] + ctx_.int_val(node.dependency_lag));
        } else {
          tight.push_back(start_[x] == ctx_.int_val(0));
        }
        for (int y : ids) {
          if (y == x || graph_.Reaches(x, y)) continue;
          tight.push_back(Before(y, x) &&
                          start_[x] == start_[y] + ctx_.int_val(graph_.nodes[y].duration));
        }
        base_.push_back(z3::mk_or(tight));
      }
      // The rank's span starts at its first F: the earliest of the F no other F of it precedes.
      std::vector<int> candidates;
      for (int x : ids) {
        if (graph_.nodes[x].kind != OpKind::kF) continue;
        bool preceded = false;
        for (int y : ids)
          preceded =
              preceded || (y != x && graph_.nodes[y].kind == OpKind::kF && graph_.Reaches(y, x));
        if (!preceded) candidates.push_back(x);
      }
      if (candidates.empty()) {
        // A rank without ops: its span is 0, let the bound hold trivially.
        first_.push_back(ctx_.int_val(0));
        continue;
      }
      if (candidates.size() == 1) {
        first_.push_back(start_[candidates.front()]);
        continue;
      }
      const z3::expr first = ctx_.int_const(("first" + std::to_string(r)).c_str());
      z3::expr_vector equal(ctx_);
      for (int c : candidates) {
        base_.push_back(first <= start_[c]);
        equal.push_back(first == start_[c]);
      }
      base_.push_back(z3::mk_or(equal));
      first_.push_back(first);
    }
  }

  const Graph& graph_;
  z3::context ctx_;
  z3::expr_vector base_;
  z3::expr_vector start_;
  z3::expr_vector order_;
  z3::expr_vector first_;  // per rank, the start of its first F
  std::vector<int> local_;
  std::vector<std::vector<int>> pair_index_;  // per rank, (i, j) with i < j -> index in order_
};

// The schedule of a model solution: each rank's ops by start, then end (a zero-length op before
// the op that starts when it ends), then precedence (zero-length ops at one instant keep their
// dependencies' order), simulated.
Expected<Schedule> Extract(const Schedule& incumbent, const Graph& graph, const z3::model& model,
                           const z3::expr_vector& start, const std::vector<double>& caps) {
  Schedule schedule = incumbent;
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<int64_t> value(n);
  for (int x = 0; x < n; ++x)
    value[x] = model.eval(start[x], true).get_numeral_int64();
  for (size_t r = 0; r < graph.rank_nodes.size(); ++r) {
    std::vector<int> ids = graph.rank_nodes[r];
    std::sort(ids.begin(), ids.end(), [&](int a, int b) {
      const int64_t end_a = value[a] + graph.nodes[a].duration;
      const int64_t end_b = value[b] + graph.nodes[b].duration;
      if (value[a] != value[b]) return value[a] < value[b];
      if (end_a != end_b) return end_a < end_b;
      return graph.topo_position[a] < graph.topo_position[b];
    });
    std::vector<Op>& ops = schedule.programs[r].ops;
    for (size_t i = 0; i < ids.size(); ++i) {
      ops[i] = incumbent.programs[r].ops[graph.nodes[ids[i]].position];
      ops[i].start = 0;
      ops[i].end = 0;
    }
  }
  schedule.predicted.reset();
  Status status = ValidateSchedule(schedule);
  if (status.ok()) status = Simulate(schedule);
  if (!status.ok())
    return InternalError("exact: a model solution does not simulate: " + status.message());
  for (size_t r = 0; r < caps.size(); ++r) {
    if (!FitsCap(schedule.predicted->peak_memory[r], caps[r])) {
      return InternalError("exact: a model solution exceeds the cap of rank " + std::to_string(r));
    }
  }
  return schedule;
}

}  // namespace

bool ExactSolverAvailable() {
  return true;
}

Expected<ExactResult> SolveExact(const Schedule& incumbent, const std::vector<double>& rank_caps,
                                 const ExactOptions& options) {
  const Clock::time_point started = Clock::now();
  const Objective objective = options.objective;
  ZB_RETURN_IF_ERROR(ValidateSchedule(incumbent).WithContext("exact: incumbent"));
  const int64_t num_ops = incumbent.num_ops();
  if (num_ops > kMaxOps) {
    return UsageError("exact: the schedule has " + std::to_string(num_ops) +
                      " ops; the exact solver handles at most " + std::to_string(kMaxOps));
  }
  const int p = incumbent.ranks;
  std::vector<double> caps = rank_caps;
  if (caps.empty()) caps.assign(p, std::numeric_limits<double>::infinity());
  if (static_cast<int>(caps.size()) != p) {
    return UsageError("exact: " + std::to_string(caps.size()) + " memory caps for " +
                      std::to_string(p) + " ranks");
  }

  ExactResult result;
  result.best = incumbent;
  result.best.predicted.reset();
  ZB_RETURN_IF_ERROR(Simulate(result.best).WithContext("exact: incumbent"));
  for (int r = 0; r < p; ++r) {
    const double peak = result.best.predicted->peak_memory[r];
    if (!FitsCap(peak, caps[r])) {
      return InvalidInput("exact: the incumbent's peak memory on rank " + std::to_string(r) +
                          " is " + std::to_string(peak) + ", over its cap " +
                          std::to_string(caps[r]));
    }
  }

  ZB_ASSIGN_OR_RETURN(const Graph graph, BuildGraph(incumbent, caps));
  const TimeNs unit = graph.unit;
  const TimeNs incumbent_figure = ObjectiveFigure(*result.best.predicted, objective);
  if (incumbent_figure % unit != 0) {
    return InternalError("exact: a simulated figure is not a multiple of the op durations' gcd");
  }
  int64_t upper = incumbent_figure / unit;
  // No admitted order fits: the incumbent stands, and nothing is left to probe.
  int64_t lower = graph.infeasible ? upper : std::min(LowerBound(graph, objective), upper);
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };

  try {
    if (lower < upper) {
      Model model(graph, caps, objective);
      z3::context& ctx = model.ctx();
      // One solver for every probe: each probe's bound hangs on its own assumption literal, so
      // what Z3 learns in one probe carries over to the next (about 2x faster than a fresh solver
      // per probe on the reference instances). A bound an order has met stays asserted: every
      // later probe asks for less.
      z3::solver solver(ctx);
      solver.add(model.base());
      while (lower < upper) {
        const double remaining = options.time_limit_s - seconds();
        if (remaining <= 0.001) break;
        z3::params params(ctx);
        // The same answers run after run: a fixed seed, one thread.
        params.set("random_seed", 0u);
        params.set("threads", 1u);
        params.set("timeout", static_cast<unsigned>(std::min(remaining * 1000, 4.0e9)));
        solver.set(params);
        const int64_t mid = lower + (upper - 1 - lower) / 2;
        const z3::expr probe = ctx.bool_const(("probe" + std::to_string(result.probes)).c_str());
        solver.add(z3::implies(probe, z3::mk_and(model.Bound(objective, mid))));
        z3::expr_vector assumptions(ctx);
        assumptions.push_back(probe);
        ++result.probes;
        const z3::check_result answer = solver.check(assumptions);
        if (answer == z3::unknown) break;  // out of time: the gap is what is left
        if (answer == z3::unsat) {
          lower = mid + 1;
          continue;
        }
        ZB_ASSIGN_OR_RETURN(Schedule found,
                            Extract(incumbent, graph, solver.get_model(), model.start(), caps));
        const TimeNs figure = ObjectiveFigure(*found.predicted, objective);
        if (figure > mid * unit || figure % unit != 0) {
          return InternalError("exact: the simulator gives " + std::to_string(figure) +
                               " ns for an order the model bounds by " +
                               std::to_string(mid * unit));
        }
        upper = figure / unit;
        result.best = std::move(found);
        if (lower < upper) solver.add(z3::mk_and(model.Bound(objective, upper - 1)));
      }
    }
  } catch (const z3::exception& error) {
    return InternalError(std::string("exact: z3: ") + error.msg());
  }
  result.lower = lower * unit;
  result.upper = upper * unit;
  result.optimal = lower == upper;
  result.seconds = seconds();
  return result;
}

#else  // ZBKIT_HAVE_Z3

bool ExactSolverAvailable() {
  return false;
}

Expected<ExactResult> SolveExact(const Schedule& /*incumbent*/,
                                 const std::vector<double>& /*rank_caps*/,
                                 const ExactOptions& /*options*/) {
  return UsageError(
      "zbkit was built without Z3 (install libz3-dev and rebuild): --exact is unavailable");
}

#endif  // ZBKIT_HAVE_Z3

}  // namespace zb::tuner
