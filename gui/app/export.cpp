// SPDX-License-Identifier: Apache-2.0
#include "export.h"

#include <QBuffer>
#include <QCoreApplication>
#include <QFileInfo>
#include <QLabel>
#include <QLayout>
#include <QPageSize>
#include <QPainter>
#include <QPainterPath>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QVBoxLayout>
#include <algorithm>

#include "summary_panel.h"
#include "zbkit/gui/compare_view.h"
#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/view_state.h"

namespace zb::gui {
namespace {

Status WriteBytes(const QString& path, const QByteArray& bytes) {
  // QSaveFile writes beside the target and renames, so a failed export never leaves a truncated
  // file where a good one was.
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) {
    return IoError(path.toStdString() + ": cannot write: " + file.errorString().toStdString());
  }
  if (file.write(bytes) != bytes.size() || !file.commit()) {
    return IoError(path.toStdString() + ": cannot write: " + file.errorString().toStdString());
  }
  return Status::Ok();
}

}  // namespace

TimeRange FullRange(const TimelineIndex& index) {
  const TimeNs t0 =
      index.kind() == TimelineKind::kPredicted ? std::min<TimeNs>(0, index.begin()) : index.begin();
  return {t0, std::max(index.end(), t0 + ViewState::kMinimumSpan)};
}

QString PaneLabel(const LoadedItem& item, char side) {
  // The pane title sits in the lane-label corner: short, the full titles are in the header.
  return QStringLiteral("%1: %2")
      .arg(QLatin1Char(side))
      .arg(QString::fromStdString(item.short_label));
}

void ShowItemInViews(const LoadedItem& item, LegendWidget* legend, TimelineView* timeline,
                     MemoryTrack* memory, ViewState* state) {
  legend->setKinds(KindsIn(*item.index));
  legend->setShowMemoryCap(item.index->has_memory() && !item.caps.empty());
  timeline->setTimeline(item.index);
  timeline->setTitle(QString::fromStdString(item.short_label));
  memory->setTimeline(item.index);
  memory->setCaps(item.caps);
  memory->setLabelWidth(timeline->laneLabelWidth());
  memory->setVisible(item.index->has_memory());
  state->setTraceRange(FullRange(*item.index));
}

unsigned KindsIn(const TimelineIndex& index) {
  unsigned mask = 0;
  for (const TimelineLane& lane : index.lanes()) {
    if (lane.kind == LaneKind::kStage) continue;  // the same ops as their rank lane
    for (OpKind kind : lane.kind_of)
      mask |= 1U << static_cast<unsigned>(kind);
  }
  return mask;
}

std::optional<ExportFormat> ExportFormatForPath(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("png")) return ExportFormat::kPng;
  if (suffix == QLatin1String("svg")) return ExportFormat::kSvg;
  if (suffix == QLatin1String("pdf")) return ExportFormat::kPdf;
  return std::nullopt;
}

Status SavePng(const QImage& image, const QString& path) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (image.isNull() || !image.save(&buffer, "PNG")) {
    return IoError(path.toStdString() + ": cannot encode the image as PNG");
  }
  return WriteBytes(path, bytes);
}

Status ExportWidget(QWidget* widget, const QString& path) {
  const std::optional<ExportFormat> format = ExportFormatForPath(path);
  if (!format) {
    return UsageError(path.toStdString() + ": unknown export format (use .png, .svg or .pdf)");
  }
  if (widget == nullptr) return UsageError(path.toStdString() + ": nothing to export");
  if (!widget->isVisible()) {
    // render() lays out a hidden window before painting, which can change the widget's size; a
    // one-pixel render first settles it, so the output has the size that is then painted.
    QImage settle(1, 1, QImage::Format_ARGB32_Premultiplied);
    widget->render(&settle, QPoint(), QRegion(0, 0, 1, 1));
  }
  if (widget->width() <= 0 || widget->height() <= 0) {
    return UsageError(path.toStdString() + ": nothing to export (the view is empty)");
  }
  const QSize size = widget->size();
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  switch (*format) {
    case ExportFormat::kPng: {
      QImage image(size, QImage::Format_ARGB32_Premultiplied);
      image.fill(Qt::white);
      widget->render(&image);
      if (!image.save(&buffer, "PNG")) {
        return IoError(path.toStdString() + ": cannot encode the image as PNG");
      }
      break;
    }
    case ExportFormat::kSvg: {
      QSvgGenerator generator;
      generator.setOutputDevice(&buffer);
      generator.setSize(size);
      generator.setViewBox(QRect(QPoint(0, 0), size));
      generator.setTitle(QStringLiteral("zbview"));
      generator.setDescription(widget->windowTitle());
      QPainter painter;
      if (!painter.begin(&generator)) {
        return IoError(path.toStdString() + ": cannot start the SVG painter");
      }
      widget->render(&painter);
      painter.end();
      break;
    }
    case ExportFormat::kPdf: {
      QPdfWriter writer(&buffer);
      writer.setCreator(QStringLiteral("zbview"));
      writer.setTitle(widget->windowTitle());
      // One page the size of the view: 96 px per inch, so the page is as wide as the screen.
      writer.setResolution(96);
      writer.setPageSize(QPageSize(QSizeF(size.width() * 72.0 / 96.0, size.height() * 72.0 / 96.0),
                                   QPageSize::Point, QString(), QPageSize::ExactMatch));
      writer.setPageMargins(QMarginsF(0, 0, 0, 0));
      QPainter painter;
      if (!painter.begin(&writer)) {
        return IoError(path.toStdString() + ": cannot start the PDF painter");
      }
      const double scale = std::min(static_cast<double>(writer.width()) / size.width(),
                                    static_cast<double>(writer.height()) / size.height());
      painter.scale(scale, scale);
      widget->render(&painter);
      painter.end();
      break;
    }
  }
  buffer.close();
  if (bytes.isEmpty()) return IoError(path.toStdString() + ": the renderer produced nothing");
  return WriteBytes(path, bytes);
}

// ---- LegendWidget --------------------------------------------------------------------------

LegendWidget::LegendWidget(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  setToolTip(
      tr("F forward, B gradient w.r.t. the stage input, W gradient w.r.t. the weights, BW "
         "fused backward. Tinted background: a bubble (the rank idles between its first "
         "and last op). A thin line joins an op that waited to the op it waited for."));
}

void LegendWidget::setShowMemoryCap(bool show) {
  show_cap_ = show;
  update();
}

void LegendWidget::setKinds(unsigned mask) {
  kinds_ = mask;
  update();
}

QSize LegendWidget::sizeHint() const {
  return {760, fontMetrics().height() + 10};
}

QSize LegendWidget::minimumSizeHint() const {
  return {100, fontMetrics().height() + 10};
}

void LegendWidget::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing, false);
  const QFontMetrics metrics = fontMetrics();
  const int box = metrics.height() - 2;
  const int y = (height() - box) / 2;
  int x = 4;
  auto label = [&](const QString& text) {
    painter.setPen(palette().color(QPalette::WindowText));
    painter.drawText(QRect(x, 0, metrics.horizontalAdvance(text) + 2, height()),
                     Qt::AlignVCenter | Qt::AlignLeft, text);
    x += metrics.horizontalAdvance(text) + 16;
  };
  auto swatch = [&](const QColor& fill, const QString& text) {
    painter.fillRect(QRect(x, y, box * 2, box), fill);
    painter.setPen(fill.darker(140));
    painter.drawRect(QRect(x, y, box * 2 - 1, box - 1));
    x += box * 2 + 5;
    label(text);
  };
  const std::pair<OpKind, QString> kinds[] = {{OpKind::kF, tr("F forward")},
                                              {OpKind::kB, tr("B input grad")},
                                              {OpKind::kW, tr("W weight grad")},
                                              {OpKind::kBW, tr("BW fused backward")},
                                              {OpKind::kComm, tr("comm")}};
  for (const auto& [kind, text] : kinds) {
    if ((kinds_ >> static_cast<unsigned>(kind)) & 1U) swatch(ColorOf(kind), text);
  }
  swatch(BubbleColor(), tr("bubble (idle)"));
  // The wait link: an op that started the moment another one ended, after idling.
  painter.setRenderHint(QPainter::Antialiasing, true);
  painter.setPen(QPen(palette().color(QPalette::WindowText), 1.2));
  painter.drawLine(QPointF(x, y + box - 1), QPointF(x + box * 2, y + 1));
  painter.setRenderHint(QPainter::Antialiasing, false);
  x += box * 2 + 5;
  label(tr("waited for"));
  if (show_cap_) {
    painter.setPen(QPen(CapColor(), 2, Qt::DashLine));
    painter.drawLine(x, y + box / 2, x + box * 2, y + box / 2);
    x += box * 2 + 5;
    label(tr("memory cap"));
  }
}

// ---- ReportView ----------------------------------------------------------------------------

ReportView::ReportView(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_DontShowOnScreen);
  setAutoFillBackground(true);
  QPalette colours = palette();
  colours.setColor(QPalette::Window, Qt::white);
  colours.setColor(QPalette::WindowText, QColor(0x20, 0x20, 0x20));
  setPalette(colours);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(12, 8, 12, 8);
  layout->setSpacing(4);
  title_ = new QLabel(this);
  QFont title_font = title_->font();
  title_font.setBold(true);
  title_font.setPointSizeF(title_font.pointSizeF() * 1.3);
  title_->setFont(title_font);
  subtitle_ = new QLabel(this);
  legend_ = new LegendWidget(this);
  layout->addWidget(title_);
  layout->addWidget(subtitle_);
  layout->addWidget(legend_);

  state_ = new ViewState(this);
  timeline_ = new TimelineView(this);
  timeline_->setViewState(state_);
  memory_ = new MemoryTrack(this);
  memory_->setViewState(state_);
  memory_->setLabelWidth(timeline_->laneLabelWidth());
  compare_ = new CompareView(this);
  compare_->hide();
  // The timeline grows first; what it and the memory rows cannot use collects under the summary
  // (the spacer's small stretch), so the picture never shows half-empty lanes areas.
  layout->addWidget(timeline_, 100);
  layout->addWidget(memory_, 30);
  layout->addWidget(compare_, 100);

  summary_ = new QLabel(this);
  summary_->setTextFormat(Qt::PlainText);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  layout->addStretch(1);
}

void ReportView::setHeader(const LoadedItem& item, const QString& title) {
  title_->setText(title);
  QString subtitle = QFileInfo(QString::fromStdString(item.store_path)).fileName();
  if (!item.context.empty())
    subtitle += QStringLiteral("  |  ") + QString::fromStdString(item.context);
  if (item.schedule) {
    const ScheduleInfo& info = *item.schedule;
    subtitle += QStringLiteral("  |  %1, p=%2 m=%3")
                    .arg(info.family.empty() ? QStringLiteral("schedule")
                                             : QString::fromStdString(info.family))
                    .arg(info.ranks)
                    .arg(info.microbatches);
    if (info.chunks > 1) subtitle += QStringLiteral(" v=%1").arg(info.chunks);
    subtitle += QStringLiteral(", %1 placement").arg(PlacementName(info.placement));
  }
  subtitle_->setText(subtitle);
}

void ReportView::setItem(std::shared_ptr<const LoadedItem> item) {
  compare_->hide();
  timeline_->show();
  memory_->show();
  if (!item) return;
  setHeader(*item, QString::fromStdString(item->title));
  if (item->index) {
    ShowItemInViews(*item, legend_, timeline_, memory_, state_);
    // Per-stage lanes explain V and interleaved schedules, but past a few dozen lanes they leave
    // each lane too thin to read.
    timeline_->setShowStageLanes(item->index->lanes().size() <= 40);
  }
  summary_lines_ = SummaryLines(*item);
  summary_->setText(summary_lines_.join(u'\n'));
  item_ = std::move(item);
}

void ReportView::setComparison(std::shared_ptr<const LoadedItem> a,
                               std::shared_ptr<const LoadedItem> b) {
  if (!a || !b || !a->index || !b->index) return;
  item_.reset();
  timeline_->hide();
  memory_->hide();
  compare_->show();
  setHeader(*a, QStringLiteral("%1  vs  %2")
                    .arg(QString::fromStdString(a->title), QString::fromStdString(b->title)));
  legend_->setKinds(KindsIn(*a->index) | KindsIn(*b->index));
  legend_->setShowMemoryCap(false);
  compare_->setTimelines(a->index, PaneLabel(*a, 'A'), b->index, PaneLabel(*b, 'B'));
  const TimeRange ra = FullRange(*a->index);
  const TimeRange rb = FullRange(*b->index);
  compare_->viewState()->setTraceRange({std::min(ra.t0, rb.t0), std::max(ra.t1, rb.t1)});
  // CompareView prints its own line (ops that differ); these are the figures beside it.
  summary_lines_ = ComparisonLines(*a, *b);
  summary_->setText(summary_lines_.join(u'\n'));
}

void ReportView::fitMemoryTrack(QSize size) {
  if (!item_ || !item_->index || !item_->index->has_memory()) return;
  // MemoryTrack keeps its rows at least 18 px (+3 px gap) and clips the ranks that do not fit, so
  // it gets that much or nothing: a clipped track would silently drop ranks. Up to 40% of what
  // the header and summary leave; the timeline takes the rest.
  const int ranks = item_->index->num_ranks();
  const int needed = 2 + ranks * 21;
  const int room = size.height() - 220;
  const bool fits = needed <= room * 2 / 5;
  memory_->setVisible(fits);
  legend_->setShowMemoryCap(fits && !item_->caps.empty());
  memory_->setMinimumHeight(fits ? needed : 0);
  memory_->setMaximumHeight(fits ? std::max(needed, memory_->sizeHint().height())
                                 : QWIDGETSIZE_MAX);
  // TimelineView's lanes stop growing at 40 px (its size hint counts 28 px a lane, plus 48 px of
  // ruler and margin); beyond that the extra height would only be blank.
  const int hint = timeline_->sizeHint().height();
  timeline_->setMaximumHeight(48 + (hint - 48) * 10 / 7 + 8);
  QStringList lines = summary_lines_;
  if (!fits) {
    lines << tr("memory track left out: %1 ranks need %2 px of it; a taller --size (e.g. "
                "--size %3x%4) shows it")
                 .arg(ranks)
                 .arg(needed)
                 .arg(size.width())
                 .arg(needed * 5 / 2 + 220);
  }
  summary_->setText(lines.join(u'\n'));
}

QImage ReportView::renderImage(QSize size) {
  resize(size);
  fitMemoryTrack(size);
  // Never shown: QWidget::render() polishes and lays out a hidden widget itself, and painting
  // into an image of exactly `size` ignores the screen's pixel ratio.
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.setDevicePixelRatio(1.0);
  image.fill(Qt::white);
  render(&image);
  return image;
}

QString ReportView::titleText() const {
  return title_->text();
}
QString ReportView::summaryText() const {
  return summary_->text();
}

}  // namespace zb::gui
