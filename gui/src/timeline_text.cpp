// SPDX-License-Identifier: Apache-2.0
// TimelineView's words: op text, the tooltip, the details of an op and the summary of a range.
#include <QApplication>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <cmath>

#include "timeline_view_impl.h"
#include "tooltip.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/schemas/time_text.h"
#include "zbkit/schemas/timeline_analysis.h"

namespace zb::gui {
using namespace timeline_detail;

QString FormatTime(TimeNs t) {
  return QString::fromStdString(zb::FormatTime(t));
}

QString FormatRangeSummary(const RangeSummary& summary, int ranks) {
  QString text =
      QStringLiteral("%1 .. %2 (%3)\nbusy %4%, idle %5 over %6 ranks\nops:")
          .arg(FormatTime(summary.t0), FormatTime(summary.t1), FormatTime(summary.t1 - summary.t0))
          .arg(summary.busy_fraction * 100.0, 0, 'f', 1)
          .arg(FormatTime(summary.idle))
          .arg(ranks);
  bool any = false;
  for (int k = 0; k < kNumKinds; ++k) {
    if (summary.ops[k] == 0) continue;
    text += QStringLiteral("%1 %2 %3")
                .arg(any ? QStringLiteral(",") : QString(),
                     QString::fromLatin1(OpKindName(static_cast<OpKind>(k))))
                .arg(summary.ops[k]);
    any = true;
  }
  if (!any) text += QStringLiteral(" none");
  return text;
}

QString OpDetailsText(const TimelineIndex& index, int lane_id, size_t i, TimeNs origin) {
  const TimelineLane& lane = index.lane(lane_id);
  QString text = OpText(lane, i) + QStringLiteral("  rank %1").arg(lane.rank);
  if (index.iterations().size() > 1) {
    text += QStringLiteral("  iteration %1").arg(lane.IterationOf(i));
  }
  if (!lane.name.empty() && lane.name[i] >= 0) {
    text += QStringLiteral("\nrange %1")
                .arg(QString::fromStdString(index.names()[static_cast<size_t>(lane.name[i])]));
  }
  const TimeNs duration = lane.end[i] - lane.start[i];
  text += QStringLiteral("\nstart %1  end %2  duration %3")
              .arg(FormatTime(lane.start[i] - origin), FormatTime(lane.end[i] - origin),
                   FormatTime(duration));
  if (!lane.busy.empty()) {
    const double share =
        duration > 0 ? static_cast<double>(lane.busy[i]) / static_cast<double>(duration) : 1.0;
    text += QStringLiteral("\nbusy %1 (%2% of its span)  %3 kernel%4")
                .arg(FormatTime(lane.busy[i]))
                .arg(share * 100.0, 0, 'f', 1)
                .arg(lane.kernels[i])
                .arg(lane.kernels[i] == 1 ? QString() : QStringLiteral("s"));
  }
  if (lane.kind != LaneKind::kComm) {
    if (auto cause = index.WaitedFor(lane_id, i)) {
      const TimelineLane& other = index.lane(cause->lane);
      text += QStringLiteral("\nwaited for %1 (rank %2)")
                  .arg(OpText(other, cause->index))
                  .arg(other.rank);
    }
  }
  return text;
}

QString TimelineView::tooltipText(QPoint pos) const {
  if (!index_ || pos.x() < laneLabelWidth() || pos.x() >= lanesRight()) return {};
  const int lane_id = laneAt(pos.y());
  if (lane_id < 0) return {};
  const TimelineLane& lane = index_->lane(lane_id);
  const TimeRange range = state_->visibleRange();
  const double ns_per_px =
      static_cast<double>(range.length()) / std::max(1, lanesRight() - laneLabelWidth());
  // The pixel column under the cursor, in time.
  const TimeNs c0 = timeAtX(pos.x());
  const TimeNs c1 = std::max(c0 + 1, timeAtX(pos.x() + 1));

  auto op_text = [&](size_t i) { return OpDetailsText(*index_, lane_id, i, impl_->origin); };

  const TimeNs t = timeAtX(pos.x() + 0.5);
  const std::optional<size_t> hit = index_->HitTest(lane_id, t);
  if (hit && static_cast<double>(lane.end[*hit] - lane.start[*hit]) >= ns_per_px) {
    return op_text(*hit);
  }
  // Several sub-pixel ops share the column: say what is there and invite a zoom.
  const auto [first, last] = index_->Visible(lane_id, c0, c1);
  if (last - first > 1) {
    std::array<int64_t, kNumKinds> per_kind{};
    for (size_t i = first; i < last; ++i)
      ++per_kind[static_cast<int>(lane.kind_of[i])];
    QString kinds;
    for (int k = 0; k < kNumKinds; ++k) {
      if (per_kind[k] == 0) continue;
      if (!kinds.isEmpty()) kinds += QStringLiteral(", ");
      kinds += QStringLiteral("%1 %2")
                   .arg(QString::fromLatin1(OpKindName(static_cast<OpKind>(k))))
                   .arg(per_kind[k]);
    }
    Coverage column;
    index_->BinCoverage(lane_id, c0, c1, 1, &column);
    const double busy =
        std::min(1.0, static_cast<double>(column.BusyTotal(0)) / static_cast<double>(c1 - c0));
    return QStringLiteral("%1 ops in this column: %2\nbusy %3%\nzoom in to see them")
        .arg(last - first)
        .arg(kinds)
        .arg(std::lround(busy * 100));
  }
  if (hit) return op_text(*hit);
  const auto tolerance = static_cast<TimeNs>(std::ceil(kHoverNearPx * ns_per_px));
  if (auto near = index_->HitTestNear(lane_id, t, tolerance)) return op_text(*near);

  // Idle inside the rank's activity is a bubble: say how long and what the next op waited for.
  if (lane.kind != LaneKind::kRank || lane.size() == 0) return {};
  const auto [active0, active1] = impl_->active[lane_id];
  if (t < active0 || t >= active1) return {};
  const size_t next = index_->Visible(lane_id, t, active1).first;
  if (next >= lane.size() || lane.start[next] <= t) return {};
  // The stretch the bubble list names: from where every earlier op has ended (timeline_analysis.h).
  const Bubble idle = IdleBefore(*index_, lane_id, next);
  if (t < idle.start) return {};  // an earlier, overlapping op still runs here
  QString text =
      QStringLiteral("idle %1 before %2").arg(FormatTime(idle.length()), OpText(lane, next));
  if (auto cause = index_->WaitedFor(lane_id, next)) {
    const TimelineLane& other = index_->lane(cause->lane);
    text += QStringLiteral("\nwhich waited for %1 (rank %2)")
                .arg(OpText(other, cause->index))
                .arg(other.rank);
  }
  return text;
}

QString TimelineView::selectionSummaryText() const {
  const auto selection = state_->selection();
  if (!index_ || !selection || selection->length() <= 0) return {};
  RangeSummary summary = index_->Summarize(selection->t0, selection->t1);
  summary.t0 -= impl_->origin;
  summary.t1 -= impl_->origin;
  return FormatRangeSummary(summary, index_->num_ranks());
}

}  // namespace zb::gui
