// SPDX-License-Identifier: Apache-2.0
// Painting: the lanes area is one QImage whose pixels LaneRasterizer writes from the per-column
// coverage of each lane (lane_rasterizer.h), blitted with one drawImage; the overlay painters
// (timeline_overlays.h) then add what is sparse by construction: labels and outlines of blocks
// several pixels wide, wait links, selection, hover line, lane labels, ruler and title. The cost
// is O(ops in view) inside BinCoverage plus O(pixels), whatever the zoom, which is what keeps 1M
// ops within a frame (docs/zbview.md §1). The image is kept while only hover or selection
// change.
#include "zbkit/gui/timeline_view.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>

#include "timeline_overlays.h"
#include "tooltip.h"
#include "zbkit/gui/lane_rasterizer.h"
#include "zbkit/gui/palette.h"
#include "zbkit/schemas/timeline_analysis.h"

namespace zb::gui {
namespace {

constexpr int kDefaultLabelWidth = 90;
constexpr int kMaxLaneHeight = 40;
constexpr double kHoverNearPx = 2;  // hovering this close to a sub-pixel op still finds it
// Wait links are drawn when this few ops are in view; more would be a hairball, and WaitedFor is
// asked once per op preceded by idle.
constexpr int64_t kMaxWaitLinkOps = 2000;
constexpr int kNumKinds = Coverage::kKinds;

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

QString OpText(const TimelineLane& lane, size_t i) {
  return QStringLiteral("%1  stage %2  mb %3")
      .arg(QString::fromLatin1(OpKindName(lane.kind_of[i])))
      .arg(lane.stage_of[i])
      .arg(lane.microbatch[i]);
}

// Op i of `lane` with a margin of half its duration on each side, so that its neighbours show:
// what a double click on it, or revealing it, zooms to.
TimeRange AroundOp(const TimelineLane& lane, size_t i) {
  const TimeNs margin =
      std::max<TimeNs>((lane.end[i] - lane.start[i]) / 2, ViewState::kMinimumSpan);
  return {lane.start[i] - margin, lane.end[i] + margin};
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

struct TimelineView::Impl {
  enum class Drag { kNone, kPan, kSelect };

  // Layout, recomputed lazily when the size, font, timeline or lane filter change.
  bool layout_dirty = true;
  QSize layout_size;
  std::vector<LaneRow> rows;      // the rows shown, in widget coordinates
  std::vector<int> row_of_lane;   // lane -> index into rows, -1 when hidden or scrolled away
  std::vector<LaneRow> all_rows;  // every row of the content, y from the top of the lanes
  std::vector<LaneFold> folds;    // per lane: the fold marker of rank labels
  // Folding: every rank is folded when `fold_all`, and the ranks in `fold_toggled` are the
  // other way, so a fold of all survives a new timeline.
  bool fold_all = false;
  std::set<int> fold_toggled;
  bool Folded(int rank) const { return fold_all != (fold_toggled.count(rank) > 0); }
  // Whether a lane gets a row: rank lanes always; stage lanes when shown; both stage and comm
  // lanes only while their rank is unfolded.
  bool Shows(const TimelineLane& lane) const {
    if (lane.kind == LaneKind::kRank) return true;
    return (lane.kind != LaneKind::kStage || show_stage_lanes) && !Folded(lane.rank);
  }
  int content_height = 0;
  int lane_height = 0;  // px of a rank lane; 0 = share the widget's height
  int first_row = 0;    // vertical scrolling, by whole rows: the first row shown
  int max_first_row = 0;
  QScrollBar* scrollbar = nullptr;
  int scrollbar_width = 0;                             // when shown: the lanes end before it
  std::vector<std::pair<double, double>> label_boxes;  // lane labels of the last paint
  int label_width = kDefaultLabelWidth;
  int min_label_width = kDefaultLabelWidth;

  bool show_stage_lanes = true;
  bool show_wait_links = true;
  bool show_labels = true;
  QString title;
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
  std::optional<std::pair<int, size_t>> selected_op;

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
  // The lanes image and what the overlays draw over it, kept between paints that reuse it.
  QImage image;
  RenderStats image_stats;  // the image part of the stats
  std::vector<BlockLabel> labels;
  std::vector<QRectF> outlines;  // highlighted wide blocks
  LaneRasterizer rasterizer;
  LaneRasterizer::LaneResult lane_result;  // reused between lanes
  BlockLabelPainter label_painter;

  // Draws every shown lane into `image` at `dpr` and collects labels and outlines.
  void RasterizeLanes(const TimelineIndex& index, const PaintFrame& frame, qreal dpr,
                      int label_min_height, RenderStats* stats);
};

void TimelineView::Impl::RasterizeLanes(const TimelineIndex& index, const PaintFrame& frame,
                                        qreal dpr, int label_min_height, RenderStats* stats) {
  const int columns = std::max(1, static_cast<int>(std::lround(frame.lanes_width() * dpr)));
  const int image_height = std::max(1, static_cast<int>(std::lround(frame.lanes_height() * dpr)));
  if (image.width() != columns || image.height() != image_height) {
    image = QImage(columns, image_height, QImage::Format_RGB32);
  }
  image.setDevicePixelRatio(dpr);
  image.fill(BackgroundColor());
  labels.clear();
  outlines.clear();
  rasterizer.SetFrame(frame.range.t0, frame.range.t1, columns);
  for (const LaneRow& row : rows) {
    const TimelineLane& lane = index.lane(row.lane);
    LaneRasterizer::Lane options;
    options.lane = row.lane;
    std::tie(options.active0, options.active1) = active[row.lane];
    options.tint_bubbles = lane.kind == LaneKind::kRank;
    if (static_cast<size_t>(row.lane) < highlighted.size()) {
      options.highlighted = &highlighted[row.lane];
    }
    const int y0 = static_cast<int>(std::lround((row.y - kRulerHeight) * dpr));
    const int h = static_cast<int>(std::lround(row.height * dpr));
    rasterizer.Rasterize(index, options, &image, y0, h, &lane_result, stats);
    if (show_labels && row.height >= label_min_height) {
      for (size_t i : lane_result.exact) {
        const double x0 = std::max<double>(frame.label_width, frame.X(lane.start[i]));
        const double x1 = std::min<double>(frame.width, frame.X(lane.end[i]));
        labels.push_back(
            {QRectF(x0, row.y, x1 - x0, row.height), lane.microbatch[i], lane.kind_of[i]});
      }
    }
    for (size_t i : lane_result.outlined) {
      const double x0 = frame.X(lane.start[i]);
      const double x1 = frame.X(lane.end[i]);
      outlines.emplace_back(x0, row.y, x1 - x0, row.height);
    }
  }
}

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), impl_(std::make_shared<Impl>()) {
  impl_->scrollbar = new QScrollBar(Qt::Vertical, this);
  impl_->scrollbar->hide();
  connect(impl_->scrollbar, &QScrollBar::valueChanged, this, &TimelineView::scrollToRow);
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
  impl_->active.clear();
  impl_->highlighted.clear();
  impl_->hover_lane = -1;
  impl_->hover_index = -1;
  impl_->selected_op.reset();
  if (index_) {
    for (const TimelineLane& lane : index_->lanes()) {
      TimeNs end = 0;
      for (size_t i = 0; i < lane.size(); ++i)
        end = std::max(end, lane.end[i]);
      impl_->active.emplace_back(lane.size() ? lane.start.front() : 0, end);
    }
    impl_->highlighted.resize(index_->lanes().size());
    impl_->origin = TimelineOrigin(*index_);
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
    d.layout_dirty = false;
    ++d.content_version;
    d.layout_size = size();
    d.rows.clear();
    d.all_rows.clear();
    const size_t num_lanes = index_ ? index_->lanes().size() : 0;
    d.row_of_lane.assign(num_lanes, -1);
    d.folds.assign(num_lanes, LaneFold::kNone);
    const QFontMetrics metrics(font());
    int widest = 0;
    double weights = 0;
    int gaps = 0;
    std::vector<int> shown;
    if (index_) {
      for (int lane = 0; lane < static_cast<int>(num_lanes); ++lane) {
        const TimelineLane& l = index_->lane(lane);
        // A rank label folds when the rank has a lane it could show.
        const int rank_lane = index_->RankLane(l.rank);
        if (l.kind != LaneKind::kRank && (l.kind != LaneKind::kStage || d.show_stage_lanes) &&
            rank_lane >= 0) {
          d.folds[rank_lane] = d.Folded(l.rank) ? LaneFold::kCollapsed : LaneFold::kExpanded;
        }
        if (!d.Shows(l)) continue;
        shown.push_back(lane);
        widest = std::max(widest, metrics.horizontalAdvance(LaneText(l)));
        weights += LaneWeight(l.kind);
        gaps += kLaneGap + (l.kind == LaneKind::kRank ? kRankGroupGap : 0);
      }
    }
    // Room for the fold marker in front of rank labels.
    d.label_width = std::max(d.min_label_width, widest + 16 + metrics.horizontalAdvance(u'\u25BE'));
    const int available = height() - kRulerHeight;
    // A set lane height is kept (the lanes scroll); fitting shares the height, at least 8 px a
    // rank lane (and scrolls past that).
    const double unit = d.lane_height > 0 ? d.lane_height
                        : weights > 0
                            ? std::clamp((available - gaps) / weights, 8.0, double(kMaxLaneHeight))
                            : 0;
    int y = 0;  // content coordinates, from the top of the lanes
    for (int lane : shown) {
      const TimelineLane& l = index_->lane(lane);
      y += kLaneGap + (l.kind == LaneKind::kRank ? kRankGroupGap : 0);
      // Fitting rounds down, so that rows that fit stay within the height.
      const double exact = unit * LaneWeight(l.kind);
      const int h = std::max(5, static_cast<int>(d.lane_height > 0 ? std::lround(exact) : exact));
      d.all_rows.push_back({lane, y, h});
      y += h;
    }
    d.content_height = y;
    // Scrolling by whole rows: the last first row is the one from which the rest fits.
    int last_first = static_cast<int>(d.all_rows.size());
    while (last_first > 0 &&
           d.content_height - d.all_rows[last_first - 1].y + kLaneGap + kRankGroupGap <=
               available) {
      --last_first;
    }
    d.max_first_row = last_first;
    d.first_row = std::clamp(d.first_row, 0, d.max_first_row);
    const bool scrolls = d.max_first_row > 0;
    if (d.scrollbar != nullptr) {
      const QSignalBlocker blocker(d.scrollbar);
      d.scrollbar->setRange(0, d.max_first_row);
      d.scrollbar->setPageStep(std::max(1, static_cast<int>(d.all_rows.size()) - d.max_first_row));
      d.scrollbar->setValue(d.first_row);
      d.scrollbar->setGeometry(width() - d.scrollbar->sizeHint().width(), kRulerHeight,
                               d.scrollbar->sizeHint().width(), std::max(0, available));
      d.scrollbar->setVisible(scrolls);
    }
    d.scrollbar_width = scrolls && d.scrollbar ? d.scrollbar->sizeHint().width() : 0;
    const int offset = d.all_rows.empty() || d.first_row == 0
                           ? 0
                           : d.all_rows[d.first_row].y - kLaneGap - kRankGroupGap;
    for (size_t r = static_cast<size_t>(d.first_row); r < d.all_rows.size(); ++r) {
      LaneRow row = d.all_rows[r];
      row.y += kRulerHeight - offset;
      if (row.y >= height()) break;
      d.row_of_lane[row.lane] = static_cast<int>(d.rows.size());
      d.rows.push_back(row);
    }
  }
  return d.label_width;
}

std::vector<std::pair<double, double>> TimelineView::laneLabelBoxes() const {
  return impl_->label_boxes;
}

int TimelineView::lanesRight() const {
  laneLabelWidth();  // refreshes the layout, which decides whether the lanes scroll
  return width() - impl_->scrollbar_width;
}

void TimelineView::setLaneHeight(int pixels) {
  ++impl_->content_version;
  impl_->lane_height = std::max(0, pixels);
  impl_->layout_dirty = true;
  update();
}

int TimelineView::laneHeight() const {
  return impl_->lane_height;
}

int TimelineView::firstShownRow() const {
  laneLabelWidth();
  return impl_->first_row;
}

int TimelineView::maxFirstShownRow() const {
  laneLabelWidth();
  return impl_->max_first_row;
}

void TimelineView::scrollToRow(int row) {
  laneLabelWidth();
  const int clamped = std::clamp(row, 0, impl_->max_first_row);
  if (clamped == impl_->first_row) return;
  impl_->first_row = clamped;
  impl_->layout_dirty = true;
  ++impl_->content_version;
  update();
}

void TimelineView::scrollToLane(int lane) {
  laneLabelWidth();
  Impl& d = *impl_;
  if (lane >= 0 && lane < static_cast<int>(d.row_of_lane.size()) && d.row_of_lane[lane] >= 0) {
    const LaneRow& row = d.rows[d.row_of_lane[lane]];
    if (row.y + row.height <= height()) return;  // wholly shown already
  }
  for (int r = 0; r < static_cast<int>(d.all_rows.size()); ++r) {
    if (d.all_rows[r].lane == lane) {
      scrollToRow(r);
      return;
    }
  }
}

void TimelineView::setRankCollapsed(int rank, bool collapsed) {
  if (impl_->Folded(rank) == collapsed) return;
  if (collapsed != impl_->fold_all) {
    impl_->fold_toggled.insert(rank);
  } else {
    impl_->fold_toggled.erase(rank);
  }
  ++impl_->content_version;
  impl_->layout_dirty = true;
  update();
}

bool TimelineView::isRankCollapsed(int rank) const {
  return impl_->Folded(rank);
}

void TimelineView::setAllRanksCollapsed(bool collapsed) {
  impl_->fold_all = collapsed;
  impl_->fold_toggled.clear();
  ++impl_->content_version;
  impl_->layout_dirty = true;
  update();
}

int TimelineView::rulerHeight() const {
  return kRulerHeight;
}

int TimelineView::laneAt(int y) const {
  laneLabelWidth();  // refreshes the layout
  for (const LaneRow& row : impl_->rows) {
    if (y >= row.y && y < row.y + row.height) return row.lane;
  }
  return -1;
}

QRect TimelineView::laneRect(int lane) const {
  laneLabelWidth();
  if (lane < 0 || lane >= static_cast<int>(impl_->row_of_lane.size())) return {};
  const int row = impl_->row_of_lane[lane];
  if (row < 0) return {};
  return QRect(0, impl_->rows[row].y, lanesRight(), impl_->rows[row].height);
}

TimeNs TimelineView::timeAtX(double x) const {
  const TimeRange range = state_->visibleRange();
  const double w = std::max(1, lanesRight() - laneLabelWidth());
  return range.t0 + static_cast<TimeNs>(std::floor((x - laneLabelWidth()) *
                                                   static_cast<double>(range.length()) / w));
}

double TimelineView::xForTime(TimeNs t) const {
  const TimeRange range = state_->visibleRange();
  const double w = std::max(1, lanesRight() - laneLabelWidth());
  return laneLabelWidth() +
         static_cast<double>(t - range.t0) * w / static_cast<double>(range.length());
}

QSize TimelineView::sizeHint() const {
  if (impl_->lane_height > 0 && index_) {
    laneLabelWidth();
    return QSize(1000, kRulerHeight + impl_->content_height + 8);
  }
  int height = kRulerHeight + 8;
  if (index_) {
    for (const TimelineLane& lane : index_->lanes()) {
      if (!impl_->Shows(lane)) continue;
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
  if (!index_ || pos.x() < laneLabelWidth() || pos.x() >= lanesRight()) return std::nullopt;
  const int lane = laneAt(pos.y());
  if (lane < 0) return std::nullopt;
  const TimeRange range = state_->visibleRange();
  const double ns_per_px =
      static_cast<double>(range.length()) / std::max(1, lanesRight() - laneLabelWidth());
  const TimeNs t = timeAtX(pos.x() + 0.5);
  if (auto hit = index_->HitTest(lane, t)) return std::make_pair(lane, *hit);
  const auto tolerance = static_cast<TimeNs>(std::ceil(kHoverNearPx * ns_per_px));
  if (auto near = index_->HitTestNear(lane, t, tolerance)) return std::make_pair(lane, *near);
  return std::nullopt;
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

std::optional<std::pair<int, size_t>> TimelineView::selectedOp() const {
  return impl_->selected_op;
}

void TimelineView::selectOp(std::optional<std::pair<int, size_t>> op) {
  if (op && (!index_ || op->first < 0 || op->first >= static_cast<int>(index_->lanes().size()) ||
             op->second >= index_->lane(op->first).size())) {
    op.reset();
  }
  if (op == impl_->selected_op) return;
  impl_->selected_op = op;
  update();
  emit opSelected(op ? op->first : -1, op ? static_cast<qint64>(op->second) : -1);
}

void TimelineView::revealOp(int lane_id, size_t i) {
  if (!index_ || lane_id < 0 || lane_id >= static_cast<int>(index_->lanes().size()) ||
      i >= index_->lane(lane_id).size()) {
    return;
  }
  const TimelineLane& lane = index_->lane(lane_id);
  state_->setVisibleRange(AroundOp(lane, i));
  if (lane.kind != LaneKind::kRank) setRankCollapsed(lane.rank, false);
  scrollToLane(lane_id);
  selectOp(std::make_pair(lane_id, i));
}

QString TimelineView::selectionSummaryText() const {
  const auto selection = state_->selection();
  if (!index_ || !selection || selection->length() <= 0) return {};
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
  painter.fillRect(QRect(0, 0, width(), kRulerHeight), RulerColor());
  painter.fillRect(QRect(0, kRulerHeight, label_width, height() - kRulerHeight),
                   LabelColumnColor());
  const QFont base_font = font();
  QFont small_font = base_font;
  small_font.setPointSizeF(std::max(6.0, base_font.pointSizeF() * 0.85));

  if (!index_ || index_->num_ops() == 0) {
    painter.setPen(PlaceholderColor());
    painter.drawText(rect(), Qt::AlignCenter,
                     index_ ? tr("The timeline has no ops") : tr("No timeline loaded"));
    return;
  }

  PaintFrame frame;
  frame.range = state_->visibleRange();
  frame.width = lanesRight();
  frame.height = height();
  frame.label_width = label_width;
  if (frame.lanes_width() <= 0 || frame.lanes_height() <= 0) return;
  frame.x_per_ns =
      static_cast<double>(frame.lanes_width()) / static_cast<double>(frame.range.length());

  // The lanes image depends only on what is shown where: hover and selection changes (every
  // mouse move) reuse it and redraw the overlays only.
  const qreal dpr = devicePixelRatioF();
  const Impl::ImageKey key{frame.range, size(), dpr, index_.get(), d.content_version};
  if (key == d.image_key && !d.image.isNull()) {
    stats_ = d.image_stats;
  } else {
    d.image_key = key;
    d.RasterizeLanes(*index_, frame, dpr, QFontMetrics(small_font).height(), &stats_);
    d.image_stats = stats_;
  }

  painter.drawImage(QPointF(label_width, kRulerHeight), d.image);
  painter.setClipRect(QRect(label_width, kRulerHeight, frame.lanes_width(), frame.lanes_height()));
  d.label_painter.Paint(painter, d.labels, small_font, &stats_);
  PaintOutlines(painter, d.outlines, &stats_);
  PaintIterationBoundaries(painter, *index_, small_font, frame, &stats_);
  if (d.show_wait_links && stats_.ops_in_view <= kMaxWaitLinkOps) {
    PaintWaitLinks(painter, *index_, d.rows, d.row_of_lane, frame, &stats_);
  }
  const auto selection = state_->selection();
  PaintSelectionBand(painter, selection, frame);
  PaintHoverLine(painter, state_->hoverTime(), frame);
  if (d.selected_op && d.row_of_lane[d.selected_op->first] >= 0) {
    const LaneRow& row = d.rows[d.row_of_lane[d.selected_op->first]];
    const TimelineLane& lane = index_->lane(d.selected_op->first);
    PaintSelectedOp(painter, frame.X(lane.start[d.selected_op->second]),
                    frame.X(lane.end[d.selected_op->second]), row, &stats_);
  }
  painter.setClipping(false);

  d.label_boxes = PaintLaneLabels(painter, *index_, d.rows, d.folds, base_font, small_font, frame);
  PaintRuler(painter, d.origin, small_font, frame);
  PaintTitle(painter, d.title, base_font, frame);
  if (selection) PaintSelectionTag(painter, *index_, *selection, small_font, frame);
}

// ---- Input ----------------------------------------------------------------------------------

void TimelineView::wheelEvent(QWheelEvent* event) {
  if (!index_) return;
  const QPoint delta = event->angleDelta();
  // Over the lane labels, or with Alt, the wheel scrolls the lanes: 3 rows a notch.
  if ((event->position().x() < laneLabelWidth() || (event->modifiers() & Qt::AltModifier)) &&
      impl_->max_first_row > 0) {
    const int notches = (delta.y() != 0 ? delta.y() : delta.x()) / 120;
    scrollToRow(impl_->first_row - 3 * notches);
    event->accept();
    return;
  }
  const TimeRange range = state_->visibleRange();
  if (delta.x() != 0 && std::abs(delta.x()) > std::abs(delta.y())) {
    // Horizontal scrolling (touchpads) pans.
    state_->pan(
        static_cast<TimeNs>(-delta.x() / 120.0 * 0.1 * static_cast<double>(range.length())));
    event->accept();
    return;
  }
  if (delta.y() == 0) return;
  double base = 0.8;  // one notch zooms in by 20 %
  if (event->modifiers() & Qt::ControlModifier) base = 0.95;
  if (event->modifiers() & Qt::ShiftModifier) base = 0.5;
  const double factor = std::pow(base, delta.y() / 120.0);
  const double x = std::clamp<double>(event->position().x(), laneLabelWidth(), lanesRight());
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
  if (event->button() == Qt::LeftButton && d.press_pos.x() < laneLabelWidth()) {
    // A rank's label folds or unfolds its stage and comm lanes.
    const int lane = laneAt(d.press_pos.y());
    if (lane >= 0 && index_->lane(lane).kind == LaneKind::kRank &&
        d.folds[lane] != LaneFold::kNone) {
      const int rank = index_->lane(lane).rank;
      setRankCollapsed(rank, !isRankCollapsed(rank));
    }
    event->accept();
    return;
  }
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
  const int lanes_width = std::max(1, lanesRight() - laneLabelWidth());
  if (d.drag == Impl::Drag::kPan) {
    const int dx = pos.x() - d.press_pos.x();
    if (dx != 0) d.moved = true;
    const auto delta = static_cast<TimeNs>(
        std::llround(-dx * static_cast<double>(d.press_range.length()) / lanes_width));
    state_->setVisibleRange({d.press_range.t0 + delta, d.press_range.t1 + delta}, false);
  } else if (d.drag == Impl::Drag::kSelect) {
    if (std::abs(pos.x() - d.press_pos.x()) >= 2) d.moved = true;
    if (d.moved) {
      const TimeNs t = timeAtX(std::clamp(pos.x(), laneLabelWidth(), lanesRight()));
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
  if (d.drag == Impl::Drag::kPan && !d.moved && event->button() == Qt::LeftButton) {
    selectOp(opAt(event->position().toPoint()));  // a click: the op under it, or none
  }
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
    state_->setVisibleRange(AroundOp(index_->lane(op->first), op->second));
  } else if (pos.x() >= laneLabelWidth()) {
    state_->zoomAt(timeAtX(pos.x()), 0.5);
  }
  event->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  const TimeRange range = state_->visibleRange();
  const auto hover = state_->hoverTime();
  const TimeNs anchor =
      hover && *hover >= range.t0 && *hover <= range.t1 ? *hover : range.t0 + range.length() / 2;
  const auto pan_step = static_cast<TimeNs>(static_cast<double>(range.length()) * 0.15);
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
    case Qt::Key_PageDown:
      scrollToRow(impl_->first_row + std::max(1, impl_->scrollbar->pageStep()));
      break;
    case Qt::Key_PageUp:
      scrollToRow(impl_->first_row - std::max(1, impl_->scrollbar->pageStep()));
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
