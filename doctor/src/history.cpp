// SPDX-License-Identifier: Apache-2.0
#include "zbkit/doctor/history.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

namespace zb::doctor {
namespace {

// The timeline kind of a program op: its compute kind, COMM for a transfer; nullopt for torch's
// actions that are neither (UNSHARD, RESHARD, REDUCE_GRAD, ...).
std::optional<zb::OpKind> TimelineKindOf(ActionKind kind) {
  if (const std::optional<zb::OpKind> compute = ComputeKindOf(kind)) return compute;
  if (DirectionOf(kind) != CommDirection::kNone) return zb::OpKind::kComm;
  return std::nullopt;
}

}  // namespace

Expected<Timeline> HistoryTimeline(const RunProgress& run, int64_t now_ns) {
  Timeline timeline;
  timeline.kind = TimelineKind::kMeasured;
  TimelineNameTable names(timeline.names);
  bool any_history = false;
  auto add = [&](const RankProgress& rank, int64_t iteration, int64_t op_index, int64_t begin_ns,
                 int64_t end_ns, const std::string& suffix) {
    const ProgramOp& op = rank.program[static_cast<size_t>(op_index)];
    const std::optional<zb::OpKind> kind = TimelineKindOf(op.kind);
    if (!kind || op.stage < 0) return;
    TimelineOp out;
    out.rank = rank.rank;
    out.stage = op.stage;
    out.kind = *kind;
    out.microbatch = std::max(0, op.microbatch);
    out.start = begin_ns;
    out.end = std::max(begin_ns, end_ns);
    out.iteration = static_cast<int32_t>(std::max<int64_t>(0, iteration));
    out.name = names.Intern(OpText(op) + suffix);
    timeline.ops.push_back(out);
  };
  for (const RankProgress& rank : run.ranks) {
    any_history = any_history || !rank.history.empty();
    for (const OpRun& ran : rank.history)
      add(rank, ran.iteration, ran.op_index, ran.begin_ns, ran.end_ns, "");
    if (rank.version >= 2 && InsideOp(rank) && rank.since_ns > 0) {
      add(rank, rank.iteration, rank.op_index, rank.since_ns, now_ns, " (not ended)");
    }
  }
  if (!any_history || timeline.ops.empty()) {
    return NotFound(run.directory + ": no record keeps a history of the ranks' ops (zbkit " +
                    "older than zb-progress version 2, or no op ended yet)");
  }
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const TimelineOp& op : timeline.ops)
    origin = std::min<int64_t>(origin, op.start);
  for (TimelineOp& op : timeline.ops) {
    op.start -= origin;
    op.end -= origin;
  }
  std::stable_sort(timeline.ops.begin(), timeline.ops.end(), [](const auto& a, const auto& b) {
    return std::tie(a.rank, a.start) < std::tie(b.rank, b.start);
  });
  return timeline;
}

}  // namespace zb::doctor
