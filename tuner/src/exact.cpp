// SPDX-License-Identifier: Apache-2.0
// The exact solver of exact.h: a disjunctive model of one op set's per-rank orders, solved by Z3
// probe by probe (docs/search.md, "Exact solver"). Built without Z3, only the two entry points
// remain and say so.
#include "zbkit/tuner/exact.h"

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

// The model's size grows with the square of the ops per rank; beyond this Z3 does not close the
// gap in any useful time, so a larger request is refused instead of left to run out its limit.
constexpr int64_t kMaxOps = 400;

using Clock = std::chrono::steady_clock;

// One op of the incumbent. Times are in units of `unit` (the gcd of every duration and the hop
// latency): every figure a simulated order can have is a multiple of it, so the bisection steps by
// whole units and the integers Z3 sees stay small.
struct Node {
  int rank = 0;
  int position = 0;  // index in the incumbent's rank program
  OpKind kind = OpKind::kF;
  int stage = 0;
  int microbatch = 0;
  int64_t duration = 0;
  double delta = 0;  // activation memory change when it completes
  int dependency = -1;
  int64_t dependency_lag = 0;  // start >= start(dependency) + dependency_lag
};

// start(to) >= start(from) + lag: a dependency, or the microbatch order of one kind on one stage.
struct Edge {
  int to = 0;
  int64_t lag = 0;
};

struct Graph {
  TimeNs unit = 1;
  std::vector<Node> nodes;
  std::vector<std::vector<int>> rank_nodes;
  std::vector<std::vector<Edge>> out;
  std::vector<int> topo_position;
  // reach[u] bit v: a path of edges leads from u to v, so v starts after u ends in every order the
  // model admits. Pairs on one rank whose order this fixes get no order boolean.
  std::vector<std::vector<uint64_t>> reach;
  std::vector<int64_t> head;  // earliest start
  std::vector<int64_t> tail;  // time from the end to the end of the last op that waits on it
  // The caps force a cycle: no order the model admits fits them.
  bool infeasible = false;

  bool Reaches(int u, int v) const { return (reach[u][v / 64] >> (v % 64)) & 1; }
};

// Orders the graph topologically and fills reach, head and tail; false when it has a cycle.
bool Close(Graph& graph) {
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<int> indegree(n, 0);
  for (int u = 0; u < n; ++u)
    for (const Edge& edge : graph.out[u])
      ++indegree[edge.to];
  std::vector<int> order;
  order.reserve(n);
  for (int v = 0; v < n; ++v)
    if (indegree[v] == 0) order.push_back(v);
  for (size_t i = 0; i < order.size(); ++i) {
    for (const Edge& edge : graph.out[order[i]])
      if (--indegree[edge.to] == 0) order.push_back(edge.to);
  }
  if (static_cast<int>(order.size()) != n) return false;
  graph.topo_position.assign(n, 0);
  for (int i = 0; i < n; ++i)
    graph.topo_position[order[i]] = i;

  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  graph.reach.assign(n, std::vector<uint64_t>(words, 0));
  graph.tail.assign(n, 0);
  for (int i = n - 1; i >= 0; --i) {
    const int u = order[i];
    for (const Edge& edge : graph.out[u]) {
      const int v = edge.to;
      graph.reach[u][v / 64] |= uint64_t{1} << (v % 64);
      for (size_t w = 0; w < words; ++w)
        graph.reach[u][w] |= graph.reach[v][w];
      graph.tail[u] = std::max(graph.tail[u], edge.lag - graph.nodes[u].duration +
                                                  graph.nodes[v].duration + graph.tail[v]);
    }
  }
  graph.head.assign(n, 0);
  for (int u : order)
    for (const Edge& edge : graph.out[u])
      graph.head[edge.to] = std::max(graph.head[edge.to], graph.head[u] + edge.lag);
  return true;
}

// Precedences the caps force on a pair (x, y) of one rank that the graph leaves unordered, x an
// op that raises memory. y must run before x when, with y (and all that follows it) after x, even
// every release that could still come before x leaves x over its cap; y must run after x when y
// before x (with its predecessors) would do so. The estimate ignores that a release may need an
// op holding memory before it, so it can only be too weak, never too strong; the margin keeps
// float rounding from making it so. Each edge removes an order boolean and lengthens the chains
// the bounds are computed from. Returns the number of edges added.
int AddMemoryPrecedences(Graph& graph, const std::vector<double>& caps) {
  int added = 0;
  for (size_t r = 0; r < graph.rank_nodes.size(); ++r) {
    if (!std::isfinite(caps[r])) continue;
    const double cap = caps[r];
    const std::vector<int>& ids = graph.rank_nodes[r];
    std::vector<std::pair<int, int>> edges;
    for (int x : ids) {
      const double delta_x = graph.nodes[x].delta;
      if (delta_x <= 0) continue;
      double forced = delta_x;  // x and everything that must precede it
      double releases = 0;      // every release that may precede it
      double scale = std::fabs(cap) + delta_x;
      for (int z : ids) {
        if (z == x || graph.Reaches(x, z)) continue;
        const double delta = graph.nodes[z].delta;
        scale += std::fabs(delta);
        if (graph.Reaches(z, x)) {
          forced += delta;
        } else if (delta < 0) {
          releases += delta;
        }
      }
      // Over the cap in any order: left to the solver.
      if (!FitsCap(forced + releases, cap, scale)) continue;
      for (int y : ids) {
        if (y == x || graph.Reaches(x, y) || graph.Reaches(y, x)) continue;
        double lost = 0;   // releases that y after x takes away
        double extra = 0;  // holdings that y before x adds
        for (int z : ids) {
          if (z == x || graph.Reaches(x, z) || graph.Reaches(z, x)) continue;
          const double delta = graph.nodes[z].delta;
          if (delta < 0 && (z == y || graph.Reaches(y, z))) lost += delta;
          if (delta > 0 && (z == y || graph.Reaches(z, y))) extra += delta;
        }
        if (!FitsCap(forced + releases - lost, cap, scale)) {
          edges.emplace_back(y, x);
        } else if (!FitsCap(forced + releases + extra, cap, scale)) {
          edges.emplace_back(x, y);
        }
      }
    }
    for (const auto& [from, to] : edges)
      graph.out[from].push_back({to, graph.nodes[from].duration});
    added += static_cast<int>(edges.size());
  }
  return added;
}

Expected<Graph> BuildGraph(const Schedule& schedule, const std::vector<double>& caps) {
  Graph graph;
  const int p = schedule.ranks;
  const int m = schedule.microbatches;
  const int num_stages = schedule.num_stages();
  const std::vector<StageCost>& costs = schedule.costs.stages;

  // Slots as the simulator files them: a BW fills its B and its W slot.
  std::vector<int> slot(static_cast<size_t>(3) * num_stages * m, -1);
  auto slot_of = [&](int kind, int stage, int microbatch) -> int& {
    return slot[(static_cast<size_t>(kind) * num_stages + stage) * m + microbatch];
  };
  graph.rank_nodes.resize(p);
  for (int r = 0; r < p; ++r) {
    const RankProgram& program = schedule.programs[r];
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      Node node;
      node.rank = r;
      node.position = static_cast<int>(i);
      node.kind = op.kind;
      node.stage = program.stages[op.chunk];
      node.microbatch = op.microbatch;
      node.duration = costs[node.stage].Duration(op.kind);
      node.delta = costs[node.stage].MemoryDelta(op.kind);
      const int id = static_cast<int>(graph.nodes.size());
      if (op.kind == OpKind::kBW) {
        slot_of(1, node.stage, node.microbatch) = id;
        slot_of(2, node.stage, node.microbatch) = id;
      } else {
        slot_of(static_cast<int>(op.kind), node.stage, node.microbatch) = id;
      }
      graph.rank_nodes[r].push_back(id);
      graph.nodes.push_back(node);
    }
  }
  const int n = static_cast<int>(graph.nodes.size());

  TimeNs unit = schedule.costs.comm;
  for (const Node& node : graph.nodes)
    unit = std::gcd(unit, node.duration);
  if (unit <= 0) return InternalError("exact: every op lasts 0 ns");
  graph.unit = unit;
  const int64_t comm = schedule.costs.comm / unit;
  for (Node& node : graph.nodes)
    node.duration /= unit;

  graph.out.assign(n, {});
  DependencyRule rule;
  rule.num_stages = num_stages;
  for (int v = 0; v < n; ++v) {
    Node& node = graph.nodes[v];
    const std::optional<Dependency> dep = WaitsFor(node.kind, node.stage, node.microbatch, rule);
    if (!dep) continue;
    const int u = slot_of(static_cast<int>(dep->kind), dep->stage, dep->microbatch);
    if (u < 0) return InternalError("exact: a validated schedule lacks a dependency");
    node.dependency = u;
    node.dependency_lag = graph.nodes[u].duration + (graph.nodes[u].rank == node.rank ? 0 : comm);
    graph.out[u].push_back({v, node.dependency_lag});
  }
  // Symmetry breaking (exact.h): each kind keeps microbatch order on each stage.
  std::vector<int> last(static_cast<size_t>(4) * num_stages, -1);
  std::vector<int> by_microbatch(n);
  std::iota(by_microbatch.begin(), by_microbatch.end(), 0);
  std::stable_sort(by_microbatch.begin(), by_microbatch.end(), [&](int a, int b) {
    return graph.nodes[a].microbatch < graph.nodes[b].microbatch;
  });
  for (int v : by_microbatch) {
    const Node& node = graph.nodes[v];
    int& previous = last[static_cast<size_t>(node.kind) * num_stages + node.stage];
    if (previous >= 0) graph.out[previous].push_back({v, graph.nodes[previous].duration});
    previous = v;
  }

  if (!Close(graph)) return InternalError("exact: cyclic precedence graph");
  while (AddMemoryPrecedences(graph, caps) > 0) {
    if (!Close(graph)) {
      graph.infeasible = true;
      break;
    }
  }
  return graph;
}

// A lower bound, in units, on the objective of every order the model admits.
int64_t LowerBound(const Graph& graph, Objective objective) {
  const int n = static_cast<int>(graph.nodes.size());
  int64_t bound = 0;
  for (const std::vector<int>& ids : graph.rank_nodes) {
    if (ids.empty()) continue;
    int64_t busy = 0;
    int64_t first = std::numeric_limits<int64_t>::max();
    int64_t after = std::numeric_limits<int64_t>::max();
    for (int id : ids) {
      busy += graph.nodes[id].duration;
      first = std::min(first, graph.head[id]);
      after = std::min(after, graph.tail[id]);
    }
    // Every B and W of a rank follows an F of its own stage, so the span of a rank covers all its
    // work; the makespan also covers the earliest any of it can start and the least that can
    // still follow the rank's last op.
    bound = std::max(bound, objective == Objective::kMakespan ? first + busy + after : busy);
  }
  if (objective == Objective::kMakespan) {
    for (int x = 0; x < n; ++x)
      bound = std::max(bound, graph.head[x] + graph.nodes[x].duration + graph.tail[x]);
    return bound;
  }
  // Span: a rank's span is at least the longest chain from any of its F to an op on it that
  // waits for that F.
  std::vector<int> by_topo(n);
  for (int v = 0; v < n; ++v)
    by_topo[graph.topo_position[v]] = v;
  std::vector<int64_t> distance(n);
  for (int x = 0; x < n; ++x) {
    if (graph.nodes[x].kind != OpKind::kF) continue;
    std::fill(distance.begin(), distance.end(), -1);
    distance[x] = 0;
    for (int i = graph.topo_position[x]; i < n; ++i) {
      const int u = by_topo[i];
      if (distance[u] < 0) continue;
      if (graph.nodes[u].rank == graph.nodes[x].rank) {
        bound = std::max(bound, distance[u] + graph.nodes[u].duration);
      }
      for (const Edge& edge : graph.out[u])
        distance[edge.to] = std::max(distance[edge.to], distance[u] + edge.lag);
    }
  }
  return bound;
}

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
        if (worst + kCapTolerance * scale <= caps[r]) continue;
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
