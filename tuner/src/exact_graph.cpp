// SPDX-License-Identifier: Apache-2.0
#include "exact_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "zbkit/schemas/dependencies.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/memory_limit.h"

namespace zb::tuner::exact_graph {
namespace {

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

}  // namespace

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

}  // namespace zb::tuner::exact_graph
