// SPDX-License-Identifier: Apache-2.0
// DiagnosisView (diagnosis_view.h): where each rank of a stalled job is in its program.
#include "zbkit/gui/diagnosis_view.h"

#include <QFontMetrics>
#include <QPaintEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "zbkit/gui/palette.h"

namespace zb::gui {
namespace {

constexpr int kMargin = 12;
constexpr int kLabelWidth = 190;
constexpr int kLaneHeight = 40;
constexpr int kCellHeight = 22;

zb::OpKind PaletteKind(ActionKind kind) {
  return ComputeKindOf(kind).value_or(zb::OpKind::kComm);
}

bool IsCompute(ActionKind kind) {
  return ComputeKindOf(kind).has_value();
}

enum class CellState { kDone, kCurrent, kAhead };

CellState StateOf(const doctor::RankProgress& rank, int64_t index) {
  using doctor::Phase;
  switch (rank.phase) {
    case Phase::kIterationDone:
    case Phase::kExited:
      return CellState::kDone;
    case Phase::kStarting:
      return CellState::kAhead;
    case Phase::kOpDone:
      return index <= rank.op_index ? CellState::kDone : CellState::kAhead;
    case Phase::kInOp:
    case Phase::kRaised:
      break;
  }
  if (index < rank.op_index) return CellState::kDone;
  return index == rank.op_index ? CellState::kCurrent : CellState::kAhead;
}

const doctor::RankProgress* RecordOf(const StallReport& report, int rank) {
  for (const doctor::RankProgress& record : report.run.ranks) {
    if (record.rank == rank) return &record;
  }
  return nullptr;
}

const doctor::RankFinding* FindingOf(const StallReport& report, int rank) {
  for (const doctor::RankFinding& finding : report.diagnosis.ranks) {
    if (finding.rank == rank) return &finding;
  }
  return nullptr;
}

}  // namespace

Expected<StallReport> ReadStallReport(const std::string& directory) {
  auto run = doctor::ReadRunProgress(directory);
  if (!run.ok()) return run.status();
  StallReport report;
  // What zb replay diagnosed at the stall, while the processes were there to probe, over what
  // the records say now (after --on-stall kill every rank reads as dead).
  const std::string kept = directory + "/diagnosis.json";
  if (std::filesystem::exists(kept)) {
    auto diagnosis = doctor::ReadDiagnosisJson(kept);
    if (!diagnosis.ok()) return diagnosis.status();
    report.diagnosis = std::move(*diagnosis);
    report.kept = true;
  } else {
    doctor::DiagnoseOptions options;
    options.now_ns = doctor::NowNs();
    report.diagnosis = doctor::Diagnose(*run, options);
  }
  report.run = std::move(*run);
  return report;
}

struct DiagnosisView::Layout {
  QRect title;      // state and culprit
  QRect lanes;      // the cells, right of the labels
  QRect footer;     // chain and advice
  double cell = 1;  // width of one op
  int lines = 0;    // text lines of the footer
};

DiagnosisView::DiagnosisView(QWidget* parent) : QWidget(parent) {
  setAutoFillBackground(true);
  QPalette colors = palette();
  colors.setColor(QPalette::Window, PageColor());
  setPalette(colors);
}

void DiagnosisView::setReport(std::shared_ptr<const StallReport> report) {
  report_ = std::move(report);
  updateGeometry();
  update();
}

QString DiagnosisView::titleText() const {
  if (!report_) return QStringLiteral("No diagnosis loaded");
  const doctor::Diagnosis& d = report_->diagnosis;
  return QStringLiteral("%1: %2 ranks, %3 (%4)")
      .arg(QString::fromStdString(d.directory))
      .arg(d.world)
      .arg(QString::fromStdString(d.state))
      .arg(report_->kept ? QStringLiteral("diagnosed at the stall, diagnosis.json")
                         : QStringLiteral("diagnosed now"));
}

QString DiagnosisView::culpritHistoryText() const {
  if (!report_) return {};
  const doctor::RankFinding* culprit = FindingOf(*report_, report_->diagnosis.culprit_rank);
  if (culprit == nullptr) return {};
  const std::string before = doctor::RecentOpsText(*culprit);
  if (before.empty()) return {};
  return QStringLiteral("rank %1 before it stopped: %2")
      .arg(culprit->rank)
      .arg(QString::fromStdString(before));
}

DiagnosisView::Layout DiagnosisView::Place() const {
  Layout layout;
  const QFontMetrics metrics(font());
  const int line = metrics.height() + 2;
  layout.title = QRect(kMargin, kMargin, std::max(0, width() - 2 * kMargin), 2 * line);
  const int world = report_ ? report_->run.world : 0;
  layout.lanes = QRect(kMargin + kLabelWidth, layout.title.bottom() + line,
                       std::max(1, width() - 2 * kMargin - kLabelWidth), world * kLaneHeight);
  size_t longest = 1;
  if (report_) {
    for (const doctor::RankProgress& rank : report_->run.ranks)
      longest = std::max(longest, rank.program.size());
    layout.lines =
        static_cast<int>(report_->diagnosis.chain.size() + report_->diagnosis.problems.size()) +
        (report_->diagnosis.advice.empty() ? 0 : 1);
  }
  layout.cell = static_cast<double>(layout.lanes.width()) / static_cast<double>(longest);
  layout.footer = QRect(kMargin, layout.lanes.bottom() + line, std::max(0, width() - 2 * kMargin),
                        std::max(1, layout.lines) * line * 2);
  return layout;
}

QRect DiagnosisView::opCell(int rank, int index) const {
  if (!report_) return {};
  const doctor::RankProgress* record = RecordOf(*report_, rank);
  return record == nullptr ? QRect() : CellOf(Place(), *record, index);
}

QRect DiagnosisView::CellOf(const Layout& layout, const doctor::RankProgress& record,
                            int index) const {
  if (index < 0 || index >= static_cast<int>(record.program.size())) return {};
  const int x0 = layout.lanes.left() + static_cast<int>(std::floor(index * layout.cell));
  const int x1 = layout.lanes.left() + static_cast<int>(std::floor((index + 1) * layout.cell));
  const int top = layout.lanes.top() + record.rank * kLaneHeight + (kLaneHeight - kCellHeight) / 2;
  const bool compute = IsCompute(record.program[static_cast<size_t>(index)].kind);
  // Sends and receives are thin: they post, the compute op waits.
  const int height = compute ? kCellHeight : kCellHeight / 3;
  return QRect(x0, top + (kCellHeight - height) / 2, std::max(1, x1 - x0 - 1), height);
}

std::optional<QLine> DiagnosisView::waitArrow(int rank) const {
  if (!report_) return std::nullopt;
  const doctor::RankFinding* finding = FindingOf(*report_, rank);
  if (finding == nullptr || finding->waits_for < 0) return std::nullopt;
  const QRect from = opCell(rank, static_cast<int>(finding->op_index));
  if (from.isEmpty()) return std::nullopt;
  QRect to = opCell(finding->waits_for, finding->producer_index);
  if (to.isEmpty()) {  // a peer without a record, or with no such op: its label
    const Layout layout = Place();
    const int top = layout.lanes.top() + finding->waits_for * kLaneHeight;
    to = QRect(layout.lanes.left() - kLabelWidth / 2, top + kLaneHeight / 2, 1, 1);
  }
  const bool down = to.center().y() > from.center().y();
  return QLine(QPoint(from.center().x(), down ? from.bottom() : from.top()),
               QPoint(to.center().x(), down ? to.top() : to.bottom()));
}

QSize DiagnosisView::sizeHint() const {
  const int world = report_ ? report_->run.world : 2;
  return {1200, 180 + world * kLaneHeight + 80};
}

QSize DiagnosisView::minimumSizeHint() const {
  return {480, 200};
}

void DiagnosisView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing, true);
  painter.setPen(TextColor());
  if (!report_) {
    painter.setPen(PlaceholderColor());
    painter.drawText(rect(), Qt::AlignCenter, titleText());
    return;
  }
  const Layout layout = Place();
  const doctor::Diagnosis& d = report_->diagnosis;
  const QFontMetrics metrics(font());
  const int line = metrics.height() + 2;
  QFont bold = font();
  bold.setBold(true);
  painter.setFont(bold);
  painter.drawText(layout.title.left(), layout.title.top() + metrics.ascent(), titleText());
  painter.setFont(font());
  const QString culprit =
      d.headline.empty() ? QStringLiteral("no culprit: the job makes progress")
                         : QStringLiteral("culprit: %1").arg(QString::fromStdString(d.headline));
  painter.setPen(d.culprit_rank >= 0 ? OverCapTextColor() : TextColor());
  painter.drawText(
      QRect(layout.title.left(), layout.title.top() + line, layout.title.width(), line),
      Qt::AlignLeft | Qt::AlignVCenter,
      metrics.elidedText(culprit, Qt::ElideRight, layout.title.width()));
  for (int lane = 0; lane < d.world; ++lane)
    PaintLane(painter, layout, static_cast<size_t>(lane));
  PaintArrows(painter);
  painter.setPen(TextColor());
  int y = layout.footer.top();
  auto paragraph = [&](const QString& text) {
    const QRect box(layout.footer.left(), y, layout.footer.width(), 4 * line);
    QRect used;
    painter.drawText(box, Qt::AlignLeft | Qt::TextWordWrap, text, &used);
    y += used.height() + 4;
  };
  for (const std::string& chain : d.chain)
    paragraph(QStringLiteral("chain: %1").arg(QString::fromStdString(chain)));
  if (const QString before = culpritHistoryText(); !before.isEmpty()) paragraph(before);
  if (!d.advice.empty())
    paragraph(QStringLiteral("what to do: %1").arg(QString::fromStdString(d.advice)));
  for (const std::string& problem : d.problems)
    paragraph(QStringLiteral("problem: %1").arg(QString::fromStdString(problem)));
  painter.setPen(SecondaryTextColor());
  paragraph(QStringLiteral(
      "Each lane: the rank's program for one step, op by op (F, B, W, BW; thin: sends and "
      "receives). Solid: done in this step; outlined: the op it is in (red: the culprit); pale: "
      "not reached. An arrow points from a waiting op to the peer's op that would send what it "
      "waits for."));
}

void DiagnosisView::PaintLane(QPainter& painter, const Layout& layout, size_t lane) const {
  const int rank = static_cast<int>(lane);
  const int top = layout.lanes.top() + rank * kLaneHeight;
  const doctor::RankProgress* record = RecordOf(*report_, rank);
  const doctor::RankFinding* finding = FindingOf(*report_, rank);
  QString label = QStringLiteral("rank %1").arg(rank);
  if (finding != nullptr) {
    label += QStringLiteral(" (%1)").arg(QLatin1String(doctor::ProcessStateName(finding->process)));
    label +=
        QStringLiteral("\nstep %1, %2 s").arg(finding->iteration).arg(finding->for_s, 0, 'f', 1);
  } else {
    label += QStringLiteral("\nno record");
  }
  painter.setPen(report_->diagnosis.culprit_rank == rank ? OverCapTextColor() : TextColor());
  painter.drawText(QRect(kMargin, top, kLabelWidth - 8, kLaneHeight),
                   Qt::AlignLeft | Qt::AlignVCenter, label);
  painter.setPen(RankRuleColor());
  painter.drawLine(kMargin, top + kLaneHeight - 1, layout.lanes.right(), top + kLaneHeight - 1);
  if (record == nullptr) return;
  for (size_t i = 0; i < record->program.size(); ++i) {
    const QRect cell = CellOf(layout, *record, static_cast<int>(i));
    const CellState state = StateOf(*record, static_cast<int64_t>(i));
    const doctor::ProgramOp& op = record->program[i];
    QColor color = ColorOf(PaletteKind(op.kind));
    if (state == CellState::kAhead) color.setAlpha(60);
    painter.fillRect(cell, color);
    const QString name =
        QStringLiteral("%1%2").arg(QLatin1String(ActionKindName(op.kind))).arg(op.microbatch);
    if (IsCompute(op.kind) && painter.fontMetrics().horizontalAdvance(name) + 4 < cell.width()) {
      painter.setPen(state == CellState::kAhead ? SecondaryTextColor()
                                                : BlockLabelColor(PaletteKind(op.kind)));
      painter.drawText(cell, Qt::AlignCenter, name);
    }
    if (state != CellState::kCurrent) continue;
    const bool culprit = report_->diagnosis.culprit_rank == rank;
    painter.setPen(QPen(culprit ? OverCapTextColor() : TextColor(), 3));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(cell.adjusted(-2, -3, 2, 3));
  }
}

void DiagnosisView::PaintArrows(QPainter& painter) const {
  painter.setPen(QPen(WaitLinkColor(), 2));
  painter.setBrush(WaitLinkColor());
  for (const doctor::RankFinding& finding : report_->diagnosis.ranks) {
    const std::optional<QLine> arrow = waitArrow(finding.rank);
    if (!arrow) continue;
    painter.drawLine(*arrow);
    // The head at the peer's op: the waiter points at what it waits for.
    const QPointF tip = arrow->p2();
    const QPointF along = QPointF(arrow->p2() - arrow->p1());
    const double length = std::max(1.0, std::hypot(along.x(), along.y()));
    const QPointF unit = along / length, normal(-unit.y(), unit.x());
    QPainterPath head;
    head.moveTo(tip);
    head.lineTo(tip - 9 * unit + 4.5 * normal);
    head.lineTo(tip - 9 * unit - 4.5 * normal);
    head.closeSubpath();
    painter.drawPath(head);
  }
}

}  // namespace zb::gui
