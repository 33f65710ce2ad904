// SPDX-License-Identifier: Apache-2.0
// Painting: the lanes area is one QImage whose pixels are written directly from the per-column
// coverage of each lane (TimelineIndex::BinCoverage) and blitted with one drawImage; QPainter then
// adds what is sparse by construction (separators, labels and outlines of blocks several pixels
// wide, wait links, selection, ruler, legend). The cost is O(ops in view) inside BinCoverage plus
// O(pixels), whatever the zoom, which is what keeps 1M ops within a frame (docs/zbview.md §1).
#include "zbkit/gui/timeline_view.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QStaticText>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "tooltip.h"
#include "zbkit/gui/palette.h"

namespace zb::gui {
namespace {

constexpr int kRulerHeight = 40;
constexpr int kLegendRowHeight = 17;  // the ruler's top row: title, legend, selection summary
constexpr int kDefaultLabelWidth = 90;
constexpr int kLaneGap = 2;       // background between lanes, so that lanes never touch
constexpr int kRankGroupGap = 4;  // extra gap before each rank's first lane
constexpr int kMaxLaneHeight = 40;
constexpr double kExactMinPx = 3;   // blocks at least this wide are drawn as blocks
constexpr double kHoverNearPx = 2;  // hovering this close to a sub-pixel op still finds it
// Wait links are drawn when this few ops are in view; more would be a hairball, and WaitedFor is
// asked once per op preceded by idle.
constexpr int64_t kMaxWaitLinkOps = 2000;
constexpr int kNumKinds = Coverage::kKinds;
// Top to bottom inside a column: idle first, then the kinds so that F sits at the bottom; zoomed
// out, a lane reads as a stacked utilisation chart.
constexpr std::array<int, kNumKinds> kTopDownKinds = {4, 3, 2, 1, 0};
constexpr int kMaxSegments = kNumKinds + 1;

double LaneWeight(LaneKind kind) {
  switch (kind) {
    case LaneKind::kRank:
      return 1.0;
    case LaneKind::kStage:
      return 0.55;
    case LaneKind::kComm:
      return 0.5;
  }
  return 1.0;
}

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

bool IsDark(const QColor& color) {
  return 0.299 * color.red() + 0.587 * color.green() + 0.114 * color.blue() < 150;
}

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

QString OpText(const TimelineLane& lane, size_t i) {
  return QStringLiteral("%1  stage %2  mb %3")
      .arg(QString::fromLatin1(OpKindName(lane.kind_of[i])))
      .arg(lane.stage_of[i])
      .arg(lane.microbatch[i]);
}

}  // namespace

QString FormatTime(TimeNs t) {
  const TimeNs magnitude = t < 0 ? -t : t;
  if (magnitude >= kNsPerMs) return QStringLiteral("%1 ms").arg(NsToMs(t), 0, 'f', 3);
  if (magnitude >= 1000)
    return QStringLiteral("%1 us").arg(static_cast<double>(t) / 1e3, 0, 'f', 3);
  return QStringLiteral("%1 ns").arg(t);
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

struct TimelineView::Impl {
  struct Row {
    int lane = 0;
    int y = 0;  // widget coordinates
    int height = 0;
  };
  struct Label {
    QRectF rect;
    int32_t microbatch = 0;
    OpKind kind = OpKind::kF;
  };
  enum class Drag { kNone, kPan, kSelect };

  // Layout, recomputed lazily when the size, font, timeline or lane filter change.
  bool layout_dirty = true;
  QSize layout_size;
  std::vector<Row> rows;
  std::vector<int> row_of_lane;  // lane -> index into rows, -1 when hidden
  int label_width = kDefaultLabelWidth;
  int min_label_width = kDefaultLabelWidth;

  bool show_stage_lanes = true;
  bool show_wait_links = true;
  bool show_labels = true;
  QString title;
  std::array<bool, kNumKinds> kinds_present{};
  // Time zero of the ruler and tooltips: 0 for predictions, the first op of a measured timeline
  // (whose clock may be an epoch).
  TimeNs origin = 0;
  // Per lane: [first start, last end) of its ops; idle inside it is a bubble.
  std::vector<std::pair<TimeNs, TimeNs>> active;
  std::vector<std::vector<size_t>> highlighted;  // per lane, sorted op indices

  Drag drag = Drag::kNone;
  QPoint press_pos;
  TimeRange press_range;
  TimeNs select_anchor = 0;
  bool moved = false;
  QElapsedTimer last_wheel;
  int hover_lane = -1;
  qint64 hover_index = -1;

  // Reused between paints so that a repaint does not allocate.
  QImage image;
  Coverage coverage;
  std::vector<uint16_t> seg_end;                  // per column, kMaxSegments cumulative row ends
  std::vector<QRgb> seg_color;                    // per column, kMaxSegments colours
  std::vector<uint8_t> seg_count;                 // segments per column
  std::vector<uint8_t> seg_pos;                   // row sweep cursor per column
  std::vector<uint8_t> boundary;                  // rows where some column changes colour
  std::vector<uint8_t> marked;                    // columns holding a sub-pixel highlighted op
  std::vector<TimeNs> edges;                      // column boundaries of the last paint
  std::vector<std::pair<QRectF, bool>> outlines;  // highlighted: (rect, exact block)

  // What the cached lanes image shows; any change redraws it.
  struct ImageKey {
    TimeRange range;
    QSize size;
    qreal dpr = 0;
    const TimelineIndex* index = nullptr;
    uint64_t version = 0;
    bool operator==(const ImageKey& o) const {
      return range == o.range && size == o.size && dpr == o.dpr && index == o.index &&
             version == o.version;
    }
  };
  ImageKey image_key;
  uint64_t content_version = 0;  // bumped by every setter that changes the lanes image
  RenderStats image_stats;       // the image part of the stats, for paints that reuse it
  std::vector<Label> labels;
  std::unordered_map<int32_t, QStaticText> label_text;
};

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), impl_(std::make_shared<Impl>()) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  // A standalone view works without a caller-provided state; setViewState replaces it.
  setViewState(new ViewState(this));
}

void TimelineView::setViewState(ViewState* state) {
  if (state == state_ || state == nullptr) return;
  if (state_ != nullptr) disconnect(state_, nullptr, this, nullptr);
  state_ = state;
  connect(state_, &ViewState::visibleRangeChanged, this, [this] { update(); });
  connect(state_, &ViewState::selectionChanged, this, [this] { update(); });
  connect(state_, &ViewState::hoverTimeChanged, this, [this] { update(); });
  update();
}

void TimelineView::setTimeline(std::shared_ptr<const TimelineIndex> index) {
  ++impl_->content_version;
  index_ = std::move(index);
  impl_->kinds_present.fill(false);
  impl_->active.clear();
  impl_->highlighted.clear();
  impl_->hover_lane = -1;
  impl_->hover_index = -1;
  if (index_) {
    for (const TimelineLane& lane : index_->lanes()) {
      TimeNs end = 0;
      for (size_t i = 0; i < lane.size(); ++i) {
        impl_->kinds_present[static_cast<int>(lane.kind_of[i])] = true;
        end = std::max(end, lane.end[i]);
      }
      impl_->active.emplace_back(lane.size() ? lane.start.front() : 0, end);
    }
    impl_->highlighted.resize(index_->lanes().size());
    impl_->origin = index_->kind() == TimelineKind::kMeasured ? index_->begin() : 0;
    // A small margin keeps the first and last blocks off the edges when everything is shown.
    const TimeNs pad = std::max<TimeNs>((index_->end() - index_->begin()) / 100, 1);
    state_->setTraceRange({index_->begin() - pad, index_->end() + pad});
  }
  impl_->layout_dirty = true;
  update();
}

void TimelineView::setTimeOrigin(TimeNs origin) {
  impl_->origin = origin;
  update();
}

TimeNs TimelineView::timeOrigin() const {
  return impl_->origin;
}

void TimelineView::setTitle(const QString& title) {
  impl_->title = title;
  update();
}

void TimelineView::setShowStageLanes(bool show) {
  ++impl_->content_version;
  impl_->show_stage_lanes = show;
  impl_->layout_dirty = true;
  update();
}

void TimelineView::setShowWaitLinks(bool show) {
  impl_->show_wait_links = show;
  update();
}

void TimelineView::setShowLabels(bool show) {
  ++impl_->content_version;
  impl_->show_labels = show;
  update();
}

void TimelineView::setMinimumLaneLabelWidth(int pixels) {
  ++impl_->content_version;
  impl_->min_label_width = std::max(0, pixels);
  impl_->layout_dirty = true;
  update();
}

void TimelineView::setHighlighted(std::set<std::pair<int, size_t>> ops) {
  ++impl_->content_version;
  const size_t lanes = index_ ? index_->lanes().size() : 0;
  impl_->highlighted.assign(lanes, {});
  for (const auto& [lane, index] : ops) {
    if (lane >= 0 && static_cast<size_t>(lane) < lanes) impl_->highlighted[lane].push_back(index);
  }
  // std::set iterates in order, so each lane's list is already sorted.
  update();
}

// ---- Geometry -------------------------------------------------------------------------------

int TimelineView::laneLabelWidth() const {
  Impl& d = *impl_;
  if (d.layout_dirty || d.layout_size != size()) {
    // Label width from the widest label, rows filling the height (at most kMaxLaneHeight each).
    d.layout_dirty = false;
    ++d.content_version;
    d.layout_size = size();
    d.rows.clear();
    d.row_of_lane.assign(index_ ? index_->lanes().size() : 0, -1);
    const QFontMetrics metrics(font());
    int widest = 0;
    double weights = 0;
    int gaps = 0;
    std::vector<int> shown;
    if (index_) {
      for (int lane = 0; lane < static_cast<int>(index_->lanes().size()); ++lane) {
        const TimelineLane& l = index_->lane(lane);
        if (l.kind == LaneKind::kStage && !d.show_stage_lanes) continue;
        shown.push_back(lane);
        widest = std::max(widest, metrics.horizontalAdvance(LaneText(l)));
        weights += LaneWeight(l.kind);
        gaps += kLaneGap + (l.kind == LaneKind::kRank ? kRankGroupGap : 0);
      }
    }
    d.label_width = std::max(d.min_label_width, widest + 16);
    const int available = height() - kRulerHeight - gaps;
    const double unit =
        weights > 0 ? std::clamp(available / weights, 8.0, double(kMaxLaneHeight)) : 0;
    int y = kRulerHeight;
    for (int lane : shown) {
      const TimelineLane& l = index_->lane(lane);
      y += kLaneGap + (l.kind == LaneKind::kRank ? kRankGroupGap : 0);
      const int h = std::max(5, static_cast<int>(std::lround(unit * LaneWeight(l.kind))));
      d.row_of_lane[lane] = static_cast<int>(d.rows.size());
      d.rows.push_back({lane, y, h});
      y += h;
    }
  }
  return d.label_width;
}

int TimelineView::rulerHeight() const {
  return kRulerHeight;
}

int TimelineView::laneAt(int y) const {
  laneLabelWidth();  // refreshes the layout
  for (const Impl::Row& row : impl_->rows) {
    if (y >= row.y && y < row.y + row.height) return row.lane;
  }
  return -1;
}

QRect TimelineView::laneRect(int lane) const {
  laneLabelWidth();
  if (lane < 0 || lane >= static_cast<int>(impl_->row_of_lane.size())) return {};
  const int row = impl_->row_of_lane[lane];
  if (row < 0) return {};
  return QRect(0, impl_->rows[row].y, width(), impl_->rows[row].height);
}

TimeNs TimelineView::timeAtX(double x) const {
  const TimeRange range = state_->visibleRange();
  const double w = std::max(1, width() - laneLabelWidth());
  return range.t0 + static_cast<TimeNs>(
                        std::floor((x - laneLabelWidth()) * static_cast<double>(range.span()) / w));
}

double TimelineView::xForTime(TimeNs t) const {
  const TimeRange range = state_->visibleRange();
  const double w = std::max(1, width() - laneLabelWidth());
  return laneLabelWidth() +
         static_cast<double>(t - range.t0) * w / static_cast<double>(range.span());
}

QSize TimelineView::sizeHint() const {
  int height = kRulerHeight + 8;
  if (index_) {
    for (const TimelineLane& lane : index_->lanes()) {
      if (lane.kind == LaneKind::kStage && !impl_->show_stage_lanes) continue;
      height += kLaneGap + (lane.kind == LaneKind::kRank ? kRankGroupGap : 0) +
                static_cast<int>(std::lround(28 * LaneWeight(lane.kind)));
    }
  } else {
    height += 200;
  }
  return QSize(1000, height);
}

// ---- Queries --------------------------------------------------------------------------------

std::optional<std::pair<int, size_t>> TimelineView::opAt(QPoint pos) const {
  if (!index_ || pos.x() < laneLabelWidth()) return std::nullopt;
  const int lane = laneAt(pos.y());
  if (lane < 0) return std::nullopt;
  const TimeRange range = state_->visibleRange();
  const double ns_per_px =
      static_cast<double>(range.span()) / std::max(1, width() - laneLabelWidth());
  const TimeNs t = timeAtX(pos.x() + 0.5);
  if (auto hit = index_->HitTest(lane, t)) return std::make_pair(lane, *hit);
  const auto tolerance = static_cast<TimeNs>(std::ceil(kHoverNearPx * ns_per_px));
  if (auto near = index_->HitTestNear(lane, t, tolerance)) return std::make_pair(lane, *near);
  return std::nullopt;
}

QString TimelineView::tooltipText(QPoint pos) const {
  if (!index_ || pos.x() < laneLabelWidth() || pos.x() >= width()) return {};
  const int lane_id = laneAt(pos.y());
  if (lane_id < 0) return {};
  const TimelineLane& lane = index_->lane(lane_id);
  const TimeRange range = state_->visibleRange();
  const double ns_per_px =
      static_cast<double>(range.span()) / std::max(1, width() - laneLabelWidth());
  // The pixel column under the cursor, in time.
  const TimeNs c0 = timeAtX(pos.x());
  const TimeNs c1 = std::max(c0 + 1, timeAtX(pos.x() + 1));

  auto op_text = [&](size_t i) {
    QString text = OpText(lane, i) + QStringLiteral("\nstart %1  duration %2")
                                         .arg(FormatTime(lane.start[i] - impl_->origin),
                                              FormatTime(lane.end[i] - lane.start[i]));
    if (lane.kind != LaneKind::kComm) {
      if (auto cause = index_->WaitedFor(lane_id, i)) {
        const TimelineLane& other = index_->lane(cause->lane);
        text += QStringLiteral("\nwaited for %1 (rank %2)")
                    .arg(OpText(other, cause->index))
                    .arg(other.rank);
      }
    }
    return text;
  };

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
  const TimeNs gap_start = next > 0 ? lane.end[next - 1] : active0;
  QString text = QStringLiteral("idle %1 before %2")
                     .arg(FormatTime(lane.start[next] - gap_start), OpText(lane, next));
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
  if (!index_ || !selection || selection->span() <= 0) return {};
  RangeSummary summary = index_->Summarize(selection->t0, selection->t1);
  summary.t0 -= impl_->origin;
  summary.t1 -= impl_->origin;
  return FormatRangeSummary(summary, index_->num_ranks());
}

// ---- Painting -------------------------------------------------------------------------------

void TimelineView::paintEvent(QPaintEvent* /*event*/) {
  Impl& d = *impl_;
  stats_ = {};
  const int label_width = laneLabelWidth();
  QPainter painter(this);
  painter.fillRect(rect(), BackgroundColor());
  const QColor ruler_background(0xF3, 0xF4, 0xF6);
  painter.fillRect(QRect(0, 0, width(), kRulerHeight), ruler_background);
  painter.fillRect(QRect(0, kRulerHeight, label_width, height() - kRulerHeight),
                   QColor(0xF7, 0xF7, 0xF8));
  const QFont base_font = font();
  QFont small_font = base_font;
  small_font.setPointSizeF(std::max(6.0, base_font.pointSizeF() * 0.85));

  if (!index_ || index_->num_ops() == 0) {
    painter.setPen(QColor(0x70, 0x70, 0x70));
    painter.drawText(rect(), Qt::AlignCenter,
                     index_ ? tr("The timeline has no ops") : tr("No timeline loaded"));
    return;
  }

  const TimeRange range = state_->visibleRange();
  const int lanes_width = width() - label_width;
  const int lanes_height = height() - kRulerHeight;
  if (lanes_width <= 0 || lanes_height <= 0) return;
  const qreal dpr = devicePixelRatioF();
  const int columns = std::max(1, static_cast<int>(std::lround(lanes_width * dpr)));
  const int image_height = std::max(1, static_cast<int>(std::lround(lanes_height * dpr)));
  const double ns_per_col = static_cast<double>(range.span()) / columns;
  // The index's column edges, so that what is tinted, separated and outlined lines up with
  // what BinCoverage counted.
  d.edges.resize(static_cast<size_t>(columns) + 1);
  for (int c = 0; c <= columns; ++c)
    d.edges[c] = ColumnEdge(range.t0, range.t1, columns, c);
  const auto col_time = [&](int c) { return d.edges[c]; };
  // The column holding t: -1 before the range, `columns` after it.
  const auto col_of = [&](TimeNs t) {
    return static_cast<int>(std::upper_bound(d.edges.begin(), d.edges.end(), t) - d.edges.begin()) -
           1;
  };
  const double x_per_ns = static_cast<double>(lanes_width) / static_cast<double>(range.span());
  const auto x_of = [&](TimeNs t) {
    return label_width + static_cast<double>(t - range.t0) * x_per_ns;
  };

  const QFontMetrics small_metrics(small_font);
  // The lanes image depends only on what is shown where: hover and selection changes (every
  // mouse move) reuse it and redraw the overlays only.
  const Impl::ImageKey key{range, size(), dpr, index_.get(), d.content_version};
  if (key == d.image_key && !d.image.isNull()) {
    stats_ = d.image_stats;
  } else {
    d.image_key = key;
    if (d.image.width() != columns || d.image.height() != image_height) {
      d.image = QImage(columns, image_height, QImage::Format_RGB32);
    }
    d.image.setDevicePixelRatio(dpr);
    d.image.fill(BackgroundColor());
    d.seg_end.resize(static_cast<size_t>(columns) * kMaxSegments);
    d.seg_color.resize(static_cast<size_t>(columns) * kMaxSegments);
    d.seg_count.resize(columns);
    d.seg_pos.resize(columns);
    d.labels.clear();

    std::array<QRgb, kNumKinds> kind_rgb{};
    std::array<QRgb, kNumKinds> separator_rgb{};
    for (int k = 0; k < kNumKinds; ++k) {
      kind_rgb[k] = ColorOf(static_cast<OpKind>(k)).rgb();
      separator_rgb[k] = ColorOf(static_cast<OpKind>(k)).darker(160).rgb();
    }
    const QRgb background_rgb = BackgroundColor().rgb();
    const QRgb bubble_rgb = BubbleColor().rgb();
    const auto exact_min_ns = static_cast<TimeNs>(std::ceil(kExactMinPx * ns_per_col));
    const int label_min_height = small_metrics.height();
    d.outlines.clear();

    for (const Impl::Row& row : d.rows) {
      const TimelineLane& lane = index_->lane(row.lane);
      const int y0 = static_cast<int>(std::lround((row.y - kRulerHeight) * dpr));
      const int h = std::min(static_cast<int>(std::lround(row.height * dpr)), image_height - y0);
      if (h <= 0) continue;
      const auto [first, last] = index_->Visible(row.lane, range.t0, range.t1);
      stats_.ops_in_view += static_cast<int64_t>(last - first);
      if (first == last) {
        // Nothing in view; the lane is still idle, so a bubble if inside the rank's activity.
        const auto [a0, a1] = d.active[row.lane];
        if (lane.kind == LaneKind::kRank && a0 < range.t1 && a1 > range.t0) {
          const int c0 = std::clamp(col_of(a0), 0, columns);
          const int c1 = std::clamp(col_of(a1 - 1) + 1, c0, columns);
          for (int r = 0; r < h; ++r) {
            auto* line = reinterpret_cast<QRgb*>(d.image.scanLine(y0 + r));
            std::fill(line + c0, line + c1, bubble_rgb);
          }
        }
        continue;
      }
      index_->BinCoverage(row.lane, range.t0, range.t1, columns, &d.coverage);
      const auto [active0, active1] = d.active[row.lane];
      const bool tint = lane.kind == LaneKind::kRank;

      // 1. Per column, the stacked segments: idle on top, then each kind present in proportion to
      //    its busy time, at least one pixel each, so no op vanishes and idle stays visible.
      d.boundary.assign(h + 1, 0);
      int previous_count = -1;
      bool any_empty = false;
      for (int c = 0; c < columns; ++c) {
        if (col_time(c + 1) == col_time(c)) {
          // Fewer nanoseconds than columns (deepest zoom): an empty column shows the instant it
          // stands for, i.e. the same as the next column, filled in below.
          d.seg_count[c] = 0;
          any_empty = true;
          previous_count = -1;
          continue;
        }
        const TimeNs* busy = &d.coverage.busy[static_cast<size_t>(c) * kNumKinds];
        const double span = static_cast<double>(col_time(c + 1) - col_time(c));
        std::array<int, kNumKinds> px{};
        double total = 0;
        int present = 0;
        for (int k = 0; k < kNumKinds; ++k) {
          total += static_cast<double>(busy[k]);
          present += busy[k] > 0 ? 1 : 0;
        }
        // Overlapping comm ops can be busier than the column; scale so that the stack fits.
        const double scale = h / std::max(span, total);
        // The busy pixels are the busy time rounded once, so the idle share of the column is
        // right to half a pixel; they are shared by largest remainder, at least one per kind.
        const int busy_px =
            std::min(h, std::max(present, static_cast<int>(std::lround(total * scale))));
        int sum = 0;
        std::array<double, kNumKinds> remainder{};
        for (int k = 0; k < kNumKinds; ++k) {
          if (busy[k] <= 0) continue;
          const double exact = static_cast<double>(busy[k]) * scale;
          px[k] = std::max(1, static_cast<int>(exact));
          remainder[k] = exact - px[k];
          sum += px[k];
        }
        while (sum < busy_px) {
          int best = -1;
          for (int k = 0; k < kNumKinds; ++k) {
            if (busy[k] > 0 && (best < 0 || remainder[k] > remainder[best])) best = k;
          }
          ++px[best];
          remainder[best] -= 1;
          ++sum;
        }
        while (sum > busy_px) {  // the one-pixel minimum overflowed: take it from the largest
          int largest = 0;
          for (int k = 1; k < kNumKinds; ++k) {
            if (px[k] > px[largest]) largest = k;
          }
          if (px[largest] <= 1) break;
          --px[largest];
          --sum;
        }
        if (present > 0 && (d.coverage.count[c] > 1 || total < span)) ++stats_.binned_columns;
        uint16_t* ends = &d.seg_end[static_cast<size_t>(c) * kMaxSegments];
        QRgb* colors = &d.seg_color[static_cast<size_t>(c) * kMaxSegments];
        int n = 0;
        int row_end = 0;
        if (sum < h) {
          const bool bubble = tint && col_time(c + 1) > active0 && col_time(c) < active1;
          row_end = h - sum;
          ends[n] = static_cast<uint16_t>(row_end);
          colors[n++] = bubble ? bubble_rgb : background_rgb;
        }
        for (int k : kTopDownKinds) {
          if (px[k] == 0) continue;
          row_end = std::min(h, row_end + px[k]);
          ends[n] = static_cast<uint16_t>(row_end);
          colors[n++] = kind_rgb[k];
        }
        ends[n - 1] = static_cast<uint16_t>(h);  // the last segment always reaches the bottom
        d.seg_count[c] = static_cast<uint8_t>(n);
        d.seg_pos[c] = 0;
        for (int s = 0; s < n; ++s)
          d.boundary[ends[s]] = 1;
        // A primitive is a rectangle: columns repeating the previous column's stack extend it.
        const bool same = c > 0 && n == previous_count &&
                          std::equal(ends, ends + n, ends - kMaxSegments) &&
                          std::equal(colors, colors + n, colors - kMaxSegments);
        if (!same) stats_.primitives += present;
        previous_count = n;
      }

      if (any_empty) {
        for (int c = columns - 2; c >= 0; --c) {
          if (d.seg_count[c] != 0) continue;
          const size_t from = static_cast<size_t>(c + 1) * kMaxSegments;
          const size_t to = static_cast<size_t>(c) * kMaxSegments;
          std::copy_n(&d.seg_end[from], kMaxSegments, &d.seg_end[to]);
          std::copy_n(&d.seg_color[from], kMaxSegments, &d.seg_color[to]);
          d.seg_count[c] = d.seg_count[c + 1];
        }
      }

      // 2. Rows, top to bottom; a row whose colours equal the previous one is a memcpy.
      for (int r = 0; r < h; ++r) {
        auto* line = reinterpret_cast<QRgb*>(d.image.scanLine(y0 + r));
        if (r > 0 && !d.boundary[r]) {
          std::memcpy(line, d.image.scanLine(y0 + r - 1), sizeof(QRgb) * columns);
          continue;
        }
        for (int c = 0; c < columns; ++c) {
          const size_t base = static_cast<size_t>(c) * kMaxSegments;
          uint8_t& pos = d.seg_pos[c];
          while (d.seg_end[base + pos] <= r)
            ++pos;
          line[c] = d.seg_color[base + pos];
        }
      }

      // 3. Blocks several pixels wide: a darker first column where one abuts another wide block
      //    (so that neighbours never fuse), and labels. Only columns holding nothing but the two
      //    blocks get a separator, so no sub-pixel op is painted over.
      for (size_t i = first; i < last; ++i) {
        if (lane.end[i] - lane.start[i] < exact_min_ns) continue;
        ++stats_.exact_blocks;
        const int kind = static_cast<int>(lane.kind_of[i]);
        if (i > 0 && lane.end[i - 1] - lane.start[i - 1] >= exact_min_ns &&
            static_cast<double>(lane.start[i] - lane.end[i - 1]) < ns_per_col) {
          const int s = col_of(lane.start[i]);
          const int previous_first = col_of(std::max(lane.start[i - 1], range.t0));
          const int own_last = col_of(std::min(lane.end[i], range.t1) - 1);
          if (s >= 0 && s < columns && previous_first < s && own_last > s &&
              d.coverage.count[s] <= 2) {
            for (int r = 0; r < h; ++r) {
              reinterpret_cast<QRgb*>(d.image.scanLine(y0 + r))[s] = separator_rgb[kind];
            }
            ++stats_.primitives;
          }
        }
        if (d.show_labels && row.height >= label_min_height) {
          const double x0 = std::max<double>(label_width, x_of(lane.start[i]));
          const double x1 = std::min<double>(width(), x_of(lane.end[i]));
          d.labels.push_back(
              {QRectF(x0, row.y, x1 - x0, row.height), lane.microbatch[i], lane.kind_of[i]});
        }
      }

      // 4. Ops differing from a compared timeline: wide ones outlined, sub-pixel ones marked by a
      //    strip along the lane's top, merged per column so the count stays bounded.
      if (static_cast<size_t>(row.lane) < d.highlighted.size() &&
          !d.highlighted[row.lane].empty()) {
        const std::vector<size_t>& list = d.highlighted[row.lane];
        d.marked.assign(columns, 0);
        bool any_marked = false;
        for (auto it = std::lower_bound(list.begin(), list.end(), first);
             it != list.end() && *it < last; ++it) {
          const size_t i = *it;
          ++stats_.highlighted;
          if (lane.end[i] - lane.start[i] >= exact_min_ns) {
            const double x0 = x_of(lane.start[i]);
            const double x1 = x_of(lane.end[i]);
            d.outlines.emplace_back(QRectF(x0, row.y, x1 - x0, row.height), true);
          } else {
            const int c0 = std::clamp(col_of(lane.start[i]), 0, columns - 1);
            const int c1 = std::clamp(col_of(lane.end[i] - 1), c0, columns - 1);
            std::fill(d.marked.begin() + c0, d.marked.begin() + c1 + 1, 1);
            any_marked = true;
          }
        }
        if (any_marked) {
          const QRgb highlight_rgb = HighlightColor().rgb();
          const int strip = std::max(2, h / 6);
          for (int c = 0; c < columns; ++c) {
            if (!d.marked[c]) continue;
            if (c == 0 || !d.marked[c - 1]) ++stats_.primitives;
            for (int r = 0; r < strip; ++r) {
              reinterpret_cast<QRgb*>(d.image.scanLine(y0 + r))[c] = highlight_rgb;
            }
          }
        }
      }
    }
    d.image_stats = stats_;
  }

  painter.drawImage(QPointF(label_width, kRulerHeight), d.image);
  painter.setClipRect(QRect(label_width, kRulerHeight, lanes_width, lanes_height));

  // Labels: microbatch numbers, centred where the visible part of the block has room.
  if (!d.labels.empty()) {
    painter.setFont(small_font);
    for (const Impl::Label& label : d.labels) {
      auto it = d.label_text.find(label.microbatch);
      if (it == d.label_text.end()) {
        QStaticText text(QString::number(label.microbatch));
        text.setTextFormat(Qt::PlainText);
        text.prepare(QTransform(), small_font);
        it = d.label_text.emplace(label.microbatch, text).first;
      }
      const QSizeF size = it->second.size();
      if (size.width() + 4 > label.rect.width()) continue;
      painter.setPen(IsDark(ColorOf(label.kind)) ? Qt::white : QColor(0x20, 0x20, 0x20));
      painter.drawStaticText(QPointF(label.rect.center().x() - size.width() / 2,
                                     label.rect.center().y() - size.height() / 2),
                             it->second);
      ++stats_.labels;
      ++stats_.primitives;
    }
  }

  if (!d.outlines.empty()) {
    painter.setPen(QPen(HighlightColor(), 2));
    painter.setBrush(Qt::NoBrush);
    for (const auto& [r, exact] : d.outlines) {
      painter.drawRect(r.adjusted(1, 1, -1, -1));
      ++stats_.primitives;
    }
  }

  // Why the bubbles are there: a line from the end of the op each op waited for to its start.
  if (d.show_wait_links && stats_.ops_in_view <= kMaxWaitLinkOps) {
    painter.setRenderHint(QPainter::Antialiasing, true);
    const QColor link_color(0x30, 0x30, 0x30, 190);
    painter.setPen(QPen(link_color, 1.2));
    for (const Impl::Row& row : d.rows) {
      const TimelineLane& lane = index_->lane(row.lane);
      if (lane.kind != LaneKind::kRank) continue;
      const auto [first, last] = index_->Visible(row.lane, range.t0, range.t1);
      for (size_t i = first; i < last; ++i) {
        if (i > 0 && lane.start[i] <= lane.end[i - 1]) continue;  // no idle before it
        const auto cause = index_->WaitedFor(row.lane, i);
        if (!cause || static_cast<size_t>(cause->lane) >= d.row_of_lane.size()) continue;
        const int cause_row = d.row_of_lane[cause->lane];
        if (cause_row < 0) continue;
        const Impl::Row& from_row = d.rows[cause_row];
        const QPointF from(x_of(index_->lane(cause->lane).end[cause->index]),
                           from_row.y + from_row.height / 2.0);
        const QPointF to(x_of(lane.start[i]), row.y + row.height / 2.0);
        painter.drawLine(from, to);
        // Arrow head at the waiting op.
        const QPointF dir = to - from;
        const double len = std::hypot(dir.x(), dir.y());
        if (len > 6) {
          const QPointF u = dir / len;
          const QPointF n(-u.y(), u.x());
          QPainterPath head;
          head.moveTo(to);
          head.lineTo(to - u * 6 + n * 3);
          head.lineTo(to - u * 6 - n * 3);
          head.closeSubpath();
          painter.fillPath(head, link_color);
        }
        ++stats_.wait_links;
        stats_.primitives += 2;
      }
    }
    painter.setRenderHint(QPainter::Antialiasing, false);
  }

  // Selection: a translucent band over the lanes.
  const auto selection = state_->selection();
  if (selection && selection->span() > 0) {
    const double x0 = x_of(selection->t0);
    const double x1 = x_of(selection->t1);
    painter.fillRect(QRectF(x0, kRulerHeight, x1 - x0, lanes_height), QColor(40, 90, 200, 40));
    painter.setPen(QPen(QColor(40, 90, 200, 200), 1));
    painter.drawLine(QPointF(x0, kRulerHeight), QPointF(x0, height()));
    painter.drawLine(QPointF(x1, kRulerHeight), QPointF(x1, height()));
  }
  const auto hover = state_->hoverTime();
  if (hover && *hover >= range.t0 && *hover < range.t1) {
    painter.setPen(QPen(QColor(0, 0, 0, 110), 1));
    painter.drawLine(QPointF(x_of(*hover), kRulerHeight), QPointF(x_of(*hover), height()));
  }
  painter.setClipping(false);

  // Lane labels, with a faint rule between ranks.
  painter.setFont(base_font);
  for (const Impl::Row& row : d.rows) {
    const TimelineLane& lane = index_->lane(row.lane);
    if (lane.kind == LaneKind::kRank && row.y - kRankGroupGap > kRulerHeight) {
      painter.setPen(QColor(0xDD, 0xDD, 0xE0));
      const int y = row.y - kLaneGap - kRankGroupGap / 2;
      painter.drawLine(0, y, label_width - 1, y);
    }
    painter.setPen(lane.kind == LaneKind::kRank ? QColor(0x20, 0x20, 0x20)
                                                : QColor(0x60, 0x60, 0x66));
    painter.setFont(lane.kind == LaneKind::kRank ? base_font : small_font);
    painter.drawText(QRect(6, row.y, label_width - 10, row.height),
                     Qt::AlignVCenter | Qt::AlignLeft, LaneText(lane));
  }
  painter.setPen(QColor(0xC8, 0xC8, 0xCC));
  painter.drawLine(label_width - 1, kRulerHeight, label_width - 1, height());

  // Ruler: ticks at a 1-2-5 step, in the unit of the times shown (so a deep zoom into a long
  // trace reads "196.6295 ms", not "196629500 ns"), from the view's time origin.
  painter.setFont(small_font);
  const TimeNs origin = d.origin;
  const TimeNs magnitude = std::max(std::abs(range.t0 - origin), std::abs(range.t1 - origin));
  double unit = 1;
  QString unit_name = QStringLiteral("ns");
  if (magnitude >= 1'000'000'000) {
    unit = 1e9;
    unit_name = QStringLiteral("s");
  } else if (magnitude >= kNsPerMs) {
    unit = 1e6;
    unit_name = QStringLiteral("ms");
  } else if (magnitude >= 1000) {
    unit = 1e3;
    unit_name = QStringLiteral("us");
  }
  const auto tick_label = [&](TimeNs t, int decimals) {
    return QStringLiteral("%1 %2")
        .arg(static_cast<double>(t - origin) / unit, 0, 'f', decimals)
        .arg(unit_name);
  };
  const auto decimals_for = [&](TimeNs tick_step) {
    return std::clamp(
        static_cast<int>(std::ceil(-std::log10(static_cast<double>(tick_step) / unit) - 1e-9)), 0,
        9);
  };
  // The step depends on how wide labels are, and their width on the step's decimals.
  TimeNs step = NiceStep(static_cast<double>(range.span()), lanes_width / 110.0);
  for (int pass = 0; pass < 2; ++pass) {
    const int label_px =
        small_metrics.horizontalAdvance(tick_label(
            std::abs(range.t0 - origin) > std::abs(range.t1 - origin) ? range.t0 : range.t1,
            decimals_for(step))) +
        16;
    step =
        NiceStep(static_cast<double>(range.span()), lanes_width / std::max(60.0, 1.0 * label_px));
  }
  const int decimals = decimals_for(step);
  const int tick_top = kLegendRowHeight;
  painter.setClipRect(QRect(label_width, 0, lanes_width, kRulerHeight));
  const TimeNs relative = range.t0 - origin;
  TimeNs tick = origin + (relative >= 0 ? (relative + step - 1) / step : relative / step) * step;
  for (; tick <= range.t1; tick += step) {
    const double x = std::floor(x_of(tick)) + 0.5;
    painter.setPen(QColor(0x60, 0x60, 0x66));
    painter.drawLine(QPointF(x, kRulerHeight - 8), QPointF(x, kRulerHeight - 1));
    painter.drawText(QRectF(x + 3, tick_top, 400, kRulerHeight - tick_top - 6),
                     Qt::AlignLeft | Qt::AlignVCenter, tick_label(tick, decimals));
    // Half steps as short minor ticks.
    const double xm = std::floor(x_of(tick + step / 2)) + 0.5;
    painter.drawLine(QPointF(xm, kRulerHeight - 4), QPointF(xm, kRulerHeight - 1));
  }
  painter.setClipping(false);
  painter.setPen(QColor(0xC8, 0xC8, 0xCC));
  painter.drawLine(0, kRulerHeight - 1, width(), kRulerHeight - 1);

  // Title in the corner.
  if (!d.title.isEmpty()) {
    QFont bold = base_font;
    bold.setBold(true);
    painter.setFont(bold);
    painter.setPen(QColor(0x20, 0x20, 0x20));
    painter.drawText(QRect(6, 0, label_width - 8, kRulerHeight), Qt::AlignVCenter | Qt::AlignLeft,
                     QFontMetrics(bold).elidedText(d.title, Qt::ElideRight, label_width - 8));
  }

  // Legend, right-aligned in the ruler's top row: the kinds present, bubble, wait link.
  painter.setFont(small_font);
  struct Entry {
    QString name;
    QColor color;
    bool line = false;
  };
  std::vector<Entry> legend;
  for (int k = 0; k < kNumKinds; ++k) {
    if (d.kinds_present[k]) {
      legend.push_back({QString::fromLatin1(OpKindName(static_cast<OpKind>(k))),
                        ColorOf(static_cast<OpKind>(k))});
    }
  }
  legend.push_back({tr("bubble"), BubbleColor()});
  if (d.show_wait_links) legend.push_back({tr("waited for"), QColor(0x30, 0x30, 0x30), true});
  int x = width() - 6;
  for (auto it = legend.rbegin(); it != legend.rend(); ++it) {
    const int text_width = small_metrics.horizontalAdvance(it->name);
    x -= text_width;
    painter.setPen(QColor(0x30, 0x30, 0x30));
    painter.drawText(QRect(x, 2, text_width + 2, kLegendRowHeight - 2), Qt::AlignVCenter, it->name);
    x -= 14;
    const QRect swatch(x, 5, 11, 10);
    if (it->line) {
      painter.drawLine(swatch.left(), swatch.center().y(), swatch.right(), swatch.center().y());
    } else {
      painter.fillRect(swatch, it->color);
      painter.setPen(it->color.darker(140));
      painter.drawRect(swatch.adjusted(0, 0, -1, -1));
    }
    x -= 10;
  }
  const int legend_left = x;

  // The selection's summary, in the ruler's top row above the selection.
  if (selection && selection->span() > 0) {
    const double x0 = std::max<double>(label_width, x_of(selection->t0));
    const double x1 = std::min<double>(width(), x_of(selection->t1));
    painter.fillRect(QRectF(x0, 0, std::max(1.0, x1 - x0), kRulerHeight), QColor(40, 90, 200, 40));
    const RangeSummary summary = index_->Summarize(selection->t0, selection->t1);
    const QString text = QStringLiteral("%1  busy %2%")
                             .arg(FormatTime(selection->span()))
                             .arg(summary.busy_fraction * 100.0, 0, 'f', 1);
    const int text_width = small_metrics.horizontalAdvance(text) + 8;
    const double tx = std::clamp(x0, double(label_width),
                                 std::max<double>(label_width, legend_left - text_width));
    painter.fillRect(QRectF(tx, 1, text_width, kLegendRowHeight - 1), QColor(40, 90, 200, 220));
    painter.setPen(Qt::white);
    painter.drawText(QRectF(tx + 4, 1, text_width, kLegendRowHeight - 1), Qt::AlignVCenter, text);
  }
}

// ---- Input ----------------------------------------------------------------------------------

void TimelineView::wheelEvent(QWheelEvent* event) {
  if (!index_) return;
  const QPoint delta = event->angleDelta();
  const TimeRange range = state_->visibleRange();
  if (delta.x() != 0 && std::abs(delta.x()) > std::abs(delta.y())) {
    // Horizontal scrolling (touchpads) pans.
    state_->pan(static_cast<TimeNs>(-delta.x() / 120.0 * 0.1 * static_cast<double>(range.span())));
    event->accept();
    return;
  }
  if (delta.y() == 0) return;
  double base = 0.8;  // one notch zooms in by 20 %
  if (event->modifiers() & Qt::ControlModifier) base = 0.95;
  if (event->modifiers() & Qt::ShiftModifier) base = 0.5;
  const double factor = std::pow(base, delta.y() / 120.0);
  const double x = std::clamp<double>(event->position().x(), laneLabelWidth(), width());
  // One burst of wheel steps is one zoom-history step.
  const bool record = !impl_->last_wheel.isValid() || impl_->last_wheel.elapsed() > 500;
  impl_->last_wheel.start();
  state_->zoomAt(timeAtX(x), factor, record);
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  Impl& d = *impl_;
  if (!index_) return;
  d.press_pos = event->position().toPoint();
  d.moved = false;
  const bool select =
      event->button() == Qt::RightButton ||
      (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
  if (select && d.press_pos.x() >= laneLabelWidth()) {
    d.drag = Impl::Drag::kSelect;
    d.select_anchor = timeAtX(d.press_pos.x());
  } else if (event->button() == Qt::LeftButton) {
    d.drag = Impl::Drag::kPan;
    d.press_range = state_->visibleRange();
  }
  event->accept();
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  Impl& d = *impl_;
  if (!index_) return;
  const QPoint pos = event->position().toPoint();
  const int lanes_width = std::max(1, width() - laneLabelWidth());
  if (d.drag == Impl::Drag::kPan) {
    const int dx = pos.x() - d.press_pos.x();
    if (dx != 0) d.moved = true;
    const auto delta = static_cast<TimeNs>(
        std::llround(-dx * static_cast<double>(d.press_range.span()) / lanes_width));
    state_->setVisibleRange({d.press_range.t0 + delta, d.press_range.t1 + delta}, false);
  } else if (d.drag == Impl::Drag::kSelect) {
    if (std::abs(pos.x() - d.press_pos.x()) >= 2) d.moved = true;
    if (d.moved) {
      const TimeNs t = timeAtX(std::clamp(pos.x(), laneLabelWidth(), width()));
      state_->setSelection(TimeRange{std::min(t, d.select_anchor), std::max(t, d.select_anchor)});
    }
  }
  if (pos.x() >= laneLabelWidth()) {
    state_->setHoverTime(timeAtX(pos.x()));
  } else {
    state_->setHoverTime(std::nullopt);
  }
  const auto op = opAt(pos);
  const int lane = op ? op->first : -1;
  const qint64 index = op ? static_cast<qint64>(op->second) : -1;
  if (lane != d.hover_lane || index != d.hover_index) {
    d.hover_lane = lane;
    d.hover_index = index;
    emit opHovered(lane, index);
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  Impl& d = *impl_;
  if (d.drag == Impl::Drag::kPan && d.moved) state_->commitGesture(d.press_range);
  if (d.drag == Impl::Drag::kSelect && d.moved) {
    if (const auto selection = state_->selection()) emit rangeSelected(*selection);
  }
  d.drag = Impl::Drag::kNone;
  event->accept();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (!index_) return;
  const QPoint pos = event->position().toPoint();
  if (const auto op = opAt(pos)) {
    // Zoom to the block, with a margin so that its neighbours show.
    const TimelineLane& lane = index_->lane(op->first);
    const TimeNs start = lane.start[op->second];
    const TimeNs end = lane.end[op->second];
    const TimeNs margin = std::max<TimeNs>((end - start) / 2, ViewState::kMinimumSpan);
    state_->setVisibleRange({start - margin, end + margin});
  } else if (pos.x() >= laneLabelWidth()) {
    state_->zoomAt(timeAtX(pos.x()), 0.5);
  }
  event->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  const TimeRange range = state_->visibleRange();
  const auto hover = state_->hoverTime();
  const TimeNs anchor =
      hover && *hover >= range.t0 && *hover <= range.t1 ? *hover : range.t0 + range.span() / 2;
  const auto pan_step = static_cast<TimeNs>(static_cast<double>(range.span()) * 0.15);
  switch (event->key()) {
    case Qt::Key_W:
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      state_->zoomAt(anchor, 0.7);
      break;
    case Qt::Key_S:
    case Qt::Key_Minus:
      state_->zoomAt(anchor, 1 / 0.7);
      break;
    case Qt::Key_A:
    case Qt::Key_Left:
      state_->pan(-pan_step);
      break;
    case Qt::Key_D:
    case Qt::Key_Right:
      state_->pan(pan_step);
      break;
    case Qt::Key_Home:
    case Qt::Key_F:
      state_->fitAll();
      break;
    case Qt::Key_Backspace:
      if (event->modifiers() & Qt::ShiftModifier) {
        state_->zoomForward();
      } else {
        state_->zoomBack();
      }
      break;
    case Qt::Key_Escape:
      state_->setSelection(std::nullopt);
      break;
    default:
      QWidget::keyPressEvent(event);
      return;
  }
  event->accept();
}

void TimelineView::leaveEvent(QEvent* event) {
  state_->setHoverTime(std::nullopt);
  if (impl_->hover_lane != -1) {
    impl_->hover_lane = -1;
    impl_->hover_index = -1;
    emit opHovered(-1, -1);
  }
  QWidget::leaveEvent(event);
}

bool TimelineView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    return ShowToolTip(this, event, [this](QPoint pos) { return tooltipText(pos); });
  }
  return QWidget::event(event);
}

}  // namespace zb::gui
