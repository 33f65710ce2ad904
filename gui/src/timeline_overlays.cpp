// SPDX-License-Identifier: Apache-2.0
// The overlay layers of TimelineView (timeline_overlays.h).
#include "timeline_overlays.h"

#include <QFontMetrics>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"

namespace zb::gui {
namespace {

// Tick step of 1, 2 or 5 times a power of ten giving about `target` ticks over `span`.
TimeNs NiceStep(double span, double target) {
  const double raw = std::max(span / std::max(target, 1.0), 1.0);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  return std::max<TimeNs>(1, static_cast<TimeNs>(std::llround(step)));
}

// The ruler's unit: the one of the largest time shown, so a deep zoom into a long trace reads
// "196.6295 ms", not "196629500 ns".
struct RulerUnit {
  double scale = 1;
  QString name = QStringLiteral("ns");
};

RulerUnit UnitFor(TimeNs magnitude) {
  if (magnitude >= 1'000'000'000) return {1e9, QStringLiteral("s")};
  if (magnitude >= kNsPerMs) return {1e6, QStringLiteral("ms")};
  if (magnitude >= 1000) return {1e3, QStringLiteral("us")};
  return {};
}

void PaintArrowHead(QPainter& painter, QPointF from, QPointF to, const QColor& color) {
  const QPointF dir = to - from;
  const double len = std::hypot(dir.x(), dir.y());
  if (len <= 6) return;
  const QPointF u = dir / len;
  const QPointF n(-u.y(), u.x());
  QPainterPath head;
  head.moveTo(to);
  head.lineTo(to - u * 6 + n * 3);
  head.lineTo(to - u * 6 - n * 3);
  head.closeSubpath();
  painter.fillPath(head, color);
}

}  // namespace

QString LaneText(const TimelineLane& lane) {
  switch (lane.kind) {
    case LaneKind::kRank:
      return QStringLiteral("rank %1").arg(lane.rank);
    case LaneKind::kStage:
      return QStringLiteral("rank %1 s%2").arg(lane.rank).arg(lane.stage);
    case LaneKind::kComm:
      return QStringLiteral("rank %1 comm").arg(lane.rank);
  }
  return {};
}

void BlockLabelPainter::Paint(QPainter& painter, const std::vector<BlockLabel>& labels,
                              const QFont& font, RenderStats* stats) {
  if (labels.empty()) return;
  painter.setFont(font);
  for (const BlockLabel& label : labels) {
    auto it = text_.find(label.microbatch);
    if (it == text_.end()) {
      QStaticText text(QString::number(label.microbatch));
      text.setTextFormat(Qt::PlainText);
      text.prepare(QTransform(), font);
      it = text_.emplace(label.microbatch, text).first;
    }
    const QSizeF size = it->second.size();
    if (size.width() + 4 > label.rect.width()) continue;
    painter.setPen(BlockLabelColor(label.kind));
    painter.drawStaticText(QPointF(label.rect.center().x() - size.width() / 2,
                                   label.rect.center().y() - size.height() / 2),
                           it->second);
    ++stats->labels;
    ++stats->primitives;
  }
}

void PaintOutlines(QPainter& painter, const std::vector<QRectF>& outlines, RenderStats* stats) {
  if (outlines.empty()) return;
  painter.setPen(QPen(HighlightColor(), 2));
  painter.setBrush(Qt::NoBrush);
  for (const QRectF& r : outlines) {
    painter.drawRect(r.adjusted(1, 1, -1, -1));
    ++stats->primitives;
  }
}

void PaintSelectedOp(QPainter& painter, double x0, double x1, const LaneRow& row,
                     RenderStats* stats) {
  constexpr double kMinWidth = 5;
  if (x1 - x0 < kMinWidth) {
    const double centre = (x0 + x1) / 2;
    x0 = centre - kMinWidth / 2;
    x1 = centre + kMinWidth / 2;
  }
  painter.setPen(QPen(SelectionColor(230), 2));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(QRectF(x0, row.y, x1 - x0, row.height).adjusted(1, 1, -1, -1));
  ++stats->primitives;
}

void PaintWaitLinks(QPainter& painter, const TimelineIndex& index, const std::vector<LaneRow>& rows,
                    const std::vector<int>& row_of_lane, const PaintFrame& frame,
                    RenderStats* stats) {
  // Level of detail: only waits of at least a pixel are candidates, and of those the
  // kMaxWaitLinks longest (the bubbles that matter most) are drawn.
  struct Link {
    TimeNs idle = 0;
    QPointF from;
    QPointF to;
  };
  std::vector<Link> links;
  const double ns_per_px = 1.0 / frame.x_per_ns;
  for (const LaneRow& row : rows) {
    const TimelineLane& lane = index.lane(row.lane);
    if (lane.kind != LaneKind::kRank) continue;
    const auto [first, last] = index.Visible(row.lane, frame.range.t0, frame.range.t1);
    for (size_t i = first; i < last; ++i) {
      if (i > 0 && lane.start[i] <= lane.end[i - 1]) continue;  // no idle before it
      const TimeNs idle = lane.start[i] - (i > 0 ? lane.end[i - 1] : index.begin());
      if (static_cast<double>(idle) < ns_per_px && i > 0) continue;  // a sub-pixel wait
      const auto cause = index.WaitedFor(row.lane, i);
      if (!cause || static_cast<size_t>(cause->lane) >= row_of_lane.size()) continue;
      const int cause_row = row_of_lane[cause->lane];
      if (cause_row < 0) continue;
      const LaneRow& from_row = rows[cause_row];
      links.push_back({idle,
                       QPointF(frame.X(index.lane(cause->lane).end[cause->index]),
                               from_row.y + from_row.height / 2.0),
                       QPointF(frame.X(lane.start[i]), row.y + row.height / 2.0)});
    }
  }
  if (links.size() > static_cast<size_t>(kMaxWaitLinks)) {
    std::nth_element(links.begin(), links.begin() + kMaxWaitLinks, links.end(),
                     [](const Link& a, const Link& b) { return a.idle > b.idle; });
    stats->wait_links_thinned += static_cast<int64_t>(links.size()) - kMaxWaitLinks;
    links.resize(kMaxWaitLinks);
  }
  painter.setRenderHint(QPainter::Antialiasing, true);
  const QColor link_color = WaitLinkColor();
  painter.setPen(QPen(link_color, 1.2));
  for (const Link& link : links) {
    painter.drawLine(link.from, link.to);
    PaintArrowHead(painter, link.from, link.to, link_color);  // at the waiting op
    ++stats->wait_links;
    stats->primitives += 2;
  }
  painter.setRenderHint(QPainter::Antialiasing, false);
}

void PaintSelectionBand(QPainter& painter, const std::optional<TimeRange>& selection,
                        const PaintFrame& frame) {
  if (!selection || selection->length() <= 0) return;
  const double x0 = frame.X(selection->t0);
  const double x1 = frame.X(selection->t1);
  painter.fillRect(QRectF(x0, kRulerHeight, x1 - x0, frame.lanes_height()), SelectionColor(40));
  painter.setPen(QPen(SelectionColor(200), 1));
  painter.drawLine(QPointF(x0, kRulerHeight), QPointF(x0, frame.height));
  painter.drawLine(QPointF(x1, kRulerHeight), QPointF(x1, frame.height));
}

void PaintHoverLine(QPainter& painter, const std::optional<TimeNs>& hover,
                    const PaintFrame& frame) {
  if (!hover || *hover < frame.range.t0 || *hover >= frame.range.t1) return;
  painter.setPen(QPen(HoverLineColor(), 1));
  painter.drawLine(QPointF(frame.X(*hover), kRulerHeight), QPointF(frame.X(*hover), frame.height));
}

void PaintIterationBoundaries(QPainter& painter, const TimelineIndex& index, const QFont& font,
                              const PaintFrame& frame, RenderStats* stats) {
  const auto& spans = index.iterations();
  if (spans.size() < 2) return;
  painter.setFont(font);
  const QFontMetrics metrics(font);
  QPen line(IterationLineColor(), 1, Qt::DashLine);
  double label_end = -1e9;  // right end of the last label drawn
  double line_x = -1e9;     // the last line drawn: lines closer than a few pixels are thinned
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].ops == 0 || spans[i].start < frame.range.t0 || spans[i].start >= frame.range.t1) {
      continue;
    }
    const double x = frame.X(spans[i].start);
    if (x - line_x < 4) continue;
    line_x = x;
    painter.setPen(line);
    painter.drawLine(QPointF(x, kRulerHeight), QPointF(x, frame.height));
    ++stats->iteration_lines;
    const QString text = QStringLiteral("iter %1").arg(i);
    const int width = metrics.horizontalAdvance(text);
    if (x + 3 < label_end + 6) continue;  // would overlap the previous label
    painter.setPen(IterationLineColor());
    painter.drawText(QPointF(x + 3, kRulerHeight + metrics.ascent() + 1), text);
    label_end = x + 3 + width;
  }
}

std::vector<std::pair<double, double>> PaintLaneLabels(
    QPainter& painter, const TimelineIndex& index, const std::vector<LaneRow>& rows,
    const std::vector<LaneFold>& folds, const QFont& rank_font, const QFont& other_font,
    const PaintFrame& frame) {
  // Labels never overlap: each takes its font's height centred on its row; rank labels are placed
  // first (top down, skipping one that would touch the one above), then stage and comm labels
  // where they touch none. A row thinner than its label may go unlabelled; its rank's label and
  // the tooltip still say what it is.
  std::vector<std::pair<double, double>> taken;  // [top, bottom) of labels placed, by top
  auto slot = [](const LaneRow& row, const QFontMetrics& metrics) {
    const double centre = row.y + row.height / 2.0;
    return std::make_pair(centre - metrics.height() / 2.0, centre + metrics.height() / 2.0);
  };
  auto overlaps = [&](std::pair<double, double> label) {
    const auto after = std::lower_bound(taken.begin(), taken.end(), label);
    return (after != taken.end() && after->first < label.second) ||
           (after != taken.begin() && std::prev(after)->second > label.first);
  };
  auto draw = [&](const LaneRow& row, const TimelineLane& lane) {
    QString text = LaneText(lane);
    const LaneFold fold =
        static_cast<size_t>(row.lane) < folds.size() ? folds[row.lane] : LaneFold::kNone;
    if (fold == LaneFold::kExpanded) text = QStringLiteral("\u25BE ") + text;
    if (fold == LaneFold::kCollapsed) text = QStringLiteral("\u25B8 ") + text;
    painter.drawText(QRectF(6, row.y + row.height / 2.0 - 50, frame.label_width - 10, 100),
                     Qt::AlignVCenter | Qt::AlignLeft, text);
  };
  const QFontMetrics rank_metrics(rank_font);
  const QFontMetrics other_metrics(other_font);
  painter.setFont(rank_font);
  for (const LaneRow& row : rows) {
    const TimelineLane& lane = index.lane(row.lane);
    if (lane.kind != LaneKind::kRank) continue;
    if (row.y - kRankGroupGap > kRulerHeight) {
      painter.setPen(RankRuleColor());
      const int y = row.y - kLaneGap - kRankGroupGap / 2;
      painter.drawLine(0, y, frame.label_width - 1, y);
    }
    const auto label = slot(row, rank_metrics);
    if (!taken.empty() && taken.back().second > label.first) continue;
    taken.push_back(label);
    painter.setPen(TextColor());
    draw(row, lane);
  }
  painter.setFont(other_font);
  painter.setPen(SecondaryTextColor());
  for (const LaneRow& row : rows) {
    const TimelineLane& lane = index.lane(row.lane);
    if (lane.kind == LaneKind::kRank) continue;
    const auto label = slot(row, other_metrics);
    if (overlaps(label)) continue;
    taken.insert(std::lower_bound(taken.begin(), taken.end(), label), label);
    draw(row, lane);
  }
  painter.setPen(FrameColor());
  painter.drawLine(frame.label_width - 1, kRulerHeight, frame.label_width - 1, frame.height);
  return taken;
}

void PaintRuler(QPainter& painter, TimeNs origin, const QFont& font, const PaintFrame& frame) {
  const TimeRange range = frame.range;
  const QFontMetrics metrics(font);
  painter.setFont(font);
  const RulerUnit unit =
      UnitFor(std::max(std::abs(range.t0 - origin), std::abs(range.t1 - origin)));
  const auto tick_label = [&](TimeNs t, int decimals) {
    return QStringLiteral("%1 %2")
        .arg(static_cast<double>(t - origin) / unit.scale, 0, 'f', decimals)
        .arg(unit.name);
  };
  const auto decimals_for = [&](TimeNs tick_step) {
    return std::clamp(static_cast<int>(std::ceil(
                          -std::log10(static_cast<double>(tick_step) / unit.scale) - 1e-9)),
                      0, 9);
  };
  // The step depends on how wide labels are, and their width on the step's decimals.
  const int lanes_width = frame.lanes_width();
  TimeNs step = NiceStep(static_cast<double>(range.length()), lanes_width / 110.0);
  for (int pass = 0; pass < 2; ++pass) {
    const int label_px =
        metrics.horizontalAdvance(tick_label(
            std::abs(range.t0 - origin) > std::abs(range.t1 - origin) ? range.t0 : range.t1,
            decimals_for(step))) +
        16;
    step =
        NiceStep(static_cast<double>(range.length()), lanes_width / std::max(60.0, 1.0 * label_px));
  }
  const int decimals = decimals_for(step);
  const int tick_top = kRulerTopRowHeight;
  painter.setClipRect(QRect(frame.label_width, 0, lanes_width, kRulerHeight));
  const TimeNs relative = range.t0 - origin;
  TimeNs tick = origin + (relative >= 0 ? (relative + step - 1) / step : relative / step) * step;
  for (; tick <= range.t1; tick += step) {
    const double x = std::floor(frame.X(tick)) + 0.5;
    painter.setPen(SecondaryTextColor());
    painter.drawLine(QPointF(x, kRulerHeight - 8), QPointF(x, kRulerHeight - 1));
    painter.drawText(QRectF(x + 3, tick_top, 400, kRulerHeight - tick_top - 6),
                     Qt::AlignLeft | Qt::AlignVCenter, tick_label(tick, decimals));
    // Half steps as short minor ticks.
    const double xm = std::floor(frame.X(tick + step / 2)) + 0.5;
    painter.drawLine(QPointF(xm, kRulerHeight - 4), QPointF(xm, kRulerHeight - 1));
  }
  painter.setClipping(false);
  painter.setPen(FrameColor());
  painter.drawLine(0, kRulerHeight - 1, frame.width, kRulerHeight - 1);
}

void PaintTitle(QPainter& painter, const QString& title, const QFont& font,
                const PaintFrame& frame) {
  if (title.isEmpty()) return;
  QFont bold = font;
  bold.setBold(true);
  painter.setFont(bold);
  painter.setPen(TextColor());
  const int width = frame.label_width - 8;
  painter.drawText(QRect(6, 0, width, kRulerHeight), Qt::AlignVCenter | Qt::AlignLeft,
                   QFontMetrics(bold).elidedText(title, Qt::ElideRight, width));
}

void PaintSelectionTag(QPainter& painter, const TimelineIndex& index, const TimeRange& selection,
                       const QFont& font, const PaintFrame& frame) {
  if (selection.length() <= 0) return;
  const double x0 = std::max<double>(frame.label_width, frame.X(selection.t0));
  const double x1 = std::min<double>(frame.width, frame.X(selection.t1));
  painter.fillRect(QRectF(x0, 0, std::max(1.0, x1 - x0), kRulerHeight), SelectionColor(40));
  const RangeSummary summary = index.Summarize(selection.t0, selection.t1);
  const QString text = QStringLiteral("%1  busy %2%")
                           .arg(FormatTime(selection.length()))
                           .arg(summary.busy_fraction * 100.0, 0, 'f', 1);
  painter.setFont(font);
  const int text_width = QFontMetrics(font).horizontalAdvance(text) + 8;
  const int right = frame.width - 6;  // the tag stays inside the ruler's right edge
  const double tx = std::clamp(x0, double(frame.label_width),
                               std::max<double>(frame.label_width, right - text_width));
  painter.fillRect(QRectF(tx, 1, text_width, kRulerTopRowHeight - 1), SelectionColor(220));
  painter.setPen(SelectionTextColor());
  painter.drawText(QRectF(tx + 4, 1, text_width, kRulerTopRowHeight - 1), Qt::AlignVCenter, text);
}

}  // namespace zb::gui
