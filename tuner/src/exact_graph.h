// SPDX-License-Identifier: Apache-2.0
// The exact solver's precedence graph and its lower bound (docs/search.md, "Exact solver"): the
// part of exact.cpp that needs no Z3, so that it builds and is tested in every configuration.
// Internal to the tuner library (not installed).
#ifndef ZBKIT_TUNER_SRC_EXACT_GRAPH_H_
#define ZBKIT_TUNER_SRC_EXACT_GRAPH_H_

#include <cstdint>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"
#include "zbkit/tuner/objective.h"

namespace zb::tuner::exact_graph {

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
bool Close(Graph& graph);

// The incumbent's op set as a graph: the simulator's dependency edges (plus the hop latency),
// each op type's microbatch order per stage, and the precedences the caps force
// (AddMemoryPrecedences), closed. Times in units of the gcd of every duration and the latency.
Expected<Graph> BuildGraph(const Schedule& schedule, const std::vector<double>& caps);

// A lower bound, in units, on the objective of every order the graph admits.
int64_t LowerBound(const Graph& graph, Objective objective);

}  // namespace zb::tuner::exact_graph

#endif  // ZBKIT_TUNER_SRC_EXACT_GRAPH_H_
