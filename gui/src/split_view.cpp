// SPDX-License-Identifier: Apache-2.0
// SplitView (split_view.h): zb partition's compared splits, bars side by side.
#include "zbkit/gui/split_view.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPaintEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "zbkit/gui/palette.h"

namespace zb::gui {
namespace {

constexpr int kSplitMargin = 12;
constexpr int kColumnGap = 18;
constexpr int kMaxRow = 22;  // the tallest a bar gets
constexpr int kSplitRowGap = 3;
constexpr int kValueWidth = 120;  // the figure after a bar

Status Bad(const std::string& source, const std::string& what) {
  return InvalidInput(source + ": " + what);
}

// A number field of `object`, or nullopt when absent or not a number.
std::optional<double> Number(const QJsonObject& object, const char* key) {
  const QJsonValue value = object.value(QLatin1String(key));
  return value.isDouble() ? std::optional<double>(value.toDouble()) : std::nullopt;
}

std::vector<double> Numbers(const QJsonValue& value) {
  std::vector<double> out;
  for (const QJsonValue& item : value.toArray())
    out.push_back(item.toDouble());
  return out;
}

Expected<SplitColumn> ReadColumn(const QJsonObject& row, const std::string& where) {
  SplitColumn column;
  column.layout = row.value(QLatin1String("layout")).toString().toStdString();
  column.split = row.value(QLatin1String("split")).toString().toStdString();
  column.family = row.value(QLatin1String("family")).toString().toStdString();
  const std::optional<double> iteration = Number(row, "iteration_ms");
  if (column.layout.empty() || column.split.empty() || !iteration) {
    return Bad(where, "needs layout, split and iteration_ms");
  }
  column.iteration_ms = *iteration;
  const QJsonArray stages = row.value(QLatin1String("stage_costs")).toArray();
  if (stages.isEmpty()) {
    return Bad(where,
               "stage_costs: missing (written by zb partition --json of zbkit 2026-12-06 on)");
  }
  for (const QJsonValue& value : stages) {
    const QJsonObject stage = value.toObject();
    const auto f = Number(stage, "F"), b = Number(stage, "B"), w = Number(stage, "W");
    const auto rank = Number(stage, "rank");
    if (!f || !b || !w || !rank || *f < 0 || *b < 0 || *w < 0 || *rank < 0) {
      return Bad(where, "stage_costs: each needs rank, F, B, W >= 0");
    }
    column.stages.push_back({static_cast<int>(*rank), *f, *b, *w});
  }
  // The memory plan: each block's mode in model order, the stages' blocks in the same order.
  const QJsonArray modes = row.value(QLatin1String("checkpointing")).toArray();
  const QJsonArray names = row.value(QLatin1String("stages")).toArray();
  if (!modes.isEmpty() && names.size() == static_cast<int>(column.stages.size())) {
    int block = 0;
    for (int s = 0; s < names.size(); ++s) {
      SplitColumn::Stage& stage = column.stages[s];
      stage.blocks = static_cast<int>(names[s].toArray().size());
      for (int k = 0; k < stage.blocks && block < modes.size(); ++k, ++block) {
        const std::string mode = modes[block].toString().toStdString();
        ++column.modes[mode];
        stage.checkpointed += mode != "none" ? 1 : 0;
      }
    }
  }
  column.state = Numbers(row.value(QLatin1String("state")));
  column.peak = Numbers(row.value(QLatin1String("peak_memory")));
  if (column.state.size() != column.peak.size() || column.peak.empty()) {
    return Bad(where, "state and peak_memory: one figure per rank each");
  }
  return column;
}

QString Ms(double ms) {
  return QString::number(ms, 'f', ms < 10 ? 2 : 1) + QStringLiteral(" ms");
}

QString Amount(double value) {
  static const char* const kUnits[] = {"", " K", " M", " G", " T"};
  int unit = 0;
  while (std::abs(value) >= 1000 && unit < 4) {
    value /= 1000;
    ++unit;
  }
  return QString::number(value, 'g', 3) + QLatin1String(kUnits[unit]);
}

QColor Lighter(QColor color) {
  return color.lighter(150);
}

}  // namespace

Expected<SplitComparison> ParseSplitComparison(const QByteArray& text, const std::string& source) {
  QJsonParseError error;
  const QJsonDocument document = QJsonDocument::fromJson(text, &error);
  if (document.isNull()) {
    return Bad(source, "not JSON (" + error.errorString().toStdString() + ")");
  }
  const QJsonObject root = document.object();
  if (root.value(QLatin1String("format")).toString() != QLatin1String("zb-partition/1")) {
    return Bad(source, "format: not zb-partition/1 (what zb partition --json prints)");
  }
  SplitComparison comparison;
  comparison.ranks = root.value(QLatin1String("ranks")).toInt();
  comparison.microbatches = root.value(QLatin1String("microbatches")).toInt();
  bool is_number = false;
  const double cap = root.value(QLatin1String("mem_limit")).toString().toDouble(&is_number);
  if (is_number && cap > 0) comparison.cap = cap;
  const QJsonArray rows = root.value(QLatin1String("rows")).toArray();
  const int best = root.value(QLatin1String("best")).toInt(-1);
  for (int i = 0; i < rows.size(); ++i) {
    const QJsonObject row = rows[i].toObject();
    if (!row.value(QLatin1String("ok")).toBool()) continue;
    ZB_ASSIGN_OR_RETURN(SplitColumn column,
                        ReadColumn(row, source + ": rows[" + std::to_string(i) + "]"));
    column.best = i == best;
    if (std::find(comparison.layouts.begin(), comparison.layouts.end(), column.layout) ==
        comparison.layouts.end()) {
      comparison.layouts.push_back(column.layout);
    }
    if (column.best) comparison.best_layout = column.layout;
    comparison.columns.push_back(std::move(column));
  }
  if (comparison.columns.empty()) return Bad(source, "no split has an order (rows: none ok)");
  if (comparison.best_layout.empty()) comparison.best_layout = comparison.layouts.front();
  return comparison;
}

Expected<SplitComparison> ReadSplitComparison(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    return IoError(path.toStdString() + ": " + file.errorString().toStdString());
  }
  return ParseSplitComparison(file.readAll(), path.toStdString());
}

// Where everything goes: per shown column its header, stage bars and memory bars.
struct SplitView::Layout {
  QRect title;
  QRect legend;
  struct Column {
    QRect header;
    QRect time_caption;
    QRect memory_caption;
    std::vector<QRect> stage_labels, stage_bars;  // a bar spans the stage's F+B+W
    std::vector<QRect> rank_labels, memory_bars;  // a bar spans the rank's peak
    std::vector<QRect> state_bars;
    std::optional<int> cap_x;
  };
  std::vector<Column> columns;
};

SplitView::SplitView(QWidget* parent) : QWidget(parent) {
  setAutoFillBackground(true);
  QPalette colors = palette();
  colors.setColor(QPalette::Window, Qt::white);
  setPalette(colors);
}

void SplitView::setComparison(std::shared_ptr<const SplitComparison> comparison) {
  comparison_ = std::move(comparison);
  layout_ = comparison_ ? comparison_->best_layout : std::string();
  update();
}

void SplitView::setLayout(const std::string& layout) {
  layout_ = layout;
  update();
}

std::vector<const SplitColumn*> SplitView::shownColumns() const {
  std::vector<const SplitColumn*> shown;
  if (!comparison_) return shown;
  for (const SplitColumn& column : comparison_->columns) {
    if (column.layout == layout_) shown.push_back(&column);
  }
  return shown;
}

QString SplitView::titleText() const {
  if (!comparison_) return QStringLiteral("No split comparison loaded");
  return QStringLiteral("Layer splits, layout %1, p=%2 m=%3%4: each split with its best order")
      .arg(QString::fromStdString(layout_))
      .arg(comparison_->ranks)
      .arg(comparison_->microbatches)
      .arg(comparison_->cap ? QStringLiteral(", cap %1 per rank").arg(Amount(*comparison_->cap))
                            : QString());
}

SplitView::Layout SplitView::Place() const {
  Layout layout;
  const std::vector<const SplitColumn*> shown = shownColumns();
  const QFontMetrics metrics(font());
  const int line = metrics.height();
  const QRect area = rect().adjusted(kSplitMargin, kSplitMargin, -kSplitMargin, -kSplitMargin);
  layout.title = QRect(area.left(), area.top(), area.width(), line + 6);
  layout.legend = QRect(area.left(), area.bottom() - line - 4, area.width(), line + 4);
  if (shown.empty()) return layout;
  double time_max = 0, memory_max = comparison_->cap.value_or(0);
  size_t stages = 0, ranks = 0;
  for (const SplitColumn* column : shown) {
    for (const SplitColumn::Stage& stage : column->stages)
      time_max = std::max(time_max, stage.f_ms + stage.b_ms + stage.w_ms);
    for (double peak : column->peak)
      memory_max = std::max(memory_max, peak);
    stages = std::max(stages, column->stages.size());
    ranks = std::max(ranks, column->peak.size());
  }
  const int top = layout.title.bottom() + 8;
  const int bottom = layout.legend.top() - 8;
  const int header_h = 2 * line + 6;
  const int caption_h = line + 4;
  const int rows_h = bottom - top - header_h - 2 * caption_h - 8;
  const int row_h = std::clamp(
      rows_h / std::max<int>(1, static_cast<int>(stages + ranks)) - kSplitRowGap, 4, kMaxRow);
  const int label_w = metrics.horizontalAdvance(QStringLiteral("rank 00")) + 6;
  const int value_w = metrics.horizontalAdvance(QStringLiteral("0000.00 ms")) + 6;
  const int count = static_cast<int>(shown.size());
  const int width = (area.width() - kColumnGap * (count - 1)) / count;
  for (int c = 0; c < count; ++c) {
    const SplitColumn& column = *shown[c];
    Layout::Column placed;
    const int left = area.left() + c * (width + kColumnGap);
    const int bar_left = left + label_w;
    const int bar_w = std::max(10, width - label_w - value_w);
    placed.header = QRect(left, top, width, header_h);
    int y = top + header_h;
    placed.time_caption = QRect(left, y, width, caption_h);
    y += caption_h;
    for (const SplitColumn::Stage& stage : column.stages) {
      const double total = stage.f_ms + stage.b_ms + stage.w_ms;
      const int length = time_max > 0 ? static_cast<int>(std::lround(bar_w * total / time_max)) : 0;
      placed.stage_labels.push_back(QRect(left, y, label_w - 4, row_h));
      placed.stage_bars.push_back(QRect(bar_left, y, std::max(1, length), row_h));
      y += row_h + kSplitRowGap;
    }
    y += 8;
    placed.memory_caption = QRect(left, y, width, caption_h);
    y += caption_h;
    for (size_t r = 0; r < column.peak.size(); ++r) {
      auto length = [&](double value) {
        return memory_max > 0 ? static_cast<int>(std::lround(bar_w * value / memory_max)) : 0;
      };
      placed.rank_labels.push_back(QRect(left, y, label_w - 4, row_h));
      placed.memory_bars.push_back(QRect(bar_left, y, std::max(1, length(column.peak[r])), row_h));
      placed.state_bars.push_back(QRect(bar_left, y, length(column.state[r]), row_h));
      y += row_h + kSplitRowGap;
    }
    if (comparison_->cap && memory_max > 0) {
      placed.cap_x =
          bar_left + static_cast<int>(std::lround(bar_w * *comparison_->cap / memory_max));
    }
    layout.columns.push_back(std::move(placed));
  }
  return layout;
}

QRect SplitView::stageBar(int column, int stage) const {
  const Layout layout = Place();
  if (column < 0 || column >= static_cast<int>(layout.columns.size())) return {};
  const auto& bars = layout.columns[column].stage_bars;
  return stage >= 0 && stage < static_cast<int>(bars.size()) ? bars[stage] : QRect();
}

QRect SplitView::memoryBar(int column, int rank) const {
  const Layout layout = Place();
  if (column < 0 || column >= static_cast<int>(layout.columns.size())) return {};
  const auto& bars = layout.columns[column].memory_bars;
  return rank >= 0 && rank < static_cast<int>(bars.size()) ? bars[rank] : QRect();
}

QRect SplitView::stateBar(int column, int rank) const {
  const Layout layout = Place();
  if (column < 0 || column >= static_cast<int>(layout.columns.size())) return {};
  const auto& bars = layout.columns[column].state_bars;
  return rank >= 0 && rank < static_cast<int>(bars.size()) ? bars[rank] : QRect();
}

std::optional<int> SplitView::capX(int column) const {
  const Layout layout = Place();
  if (column < 0 || column >= static_cast<int>(layout.columns.size())) return std::nullopt;
  return layout.columns[column].cap_x;
}

QSize SplitView::sizeHint() const {
  return {1400, 800};
}

QSize SplitView::minimumSizeHint() const {
  return {480, 320};
}

void SplitView::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.fillRect(rect(), Qt::white);
  const Layout layout = Place();
  painter.setPen(TextColor());
  QFont bold = font();
  bold.setBold(true);
  painter.setFont(bold);
  painter.drawText(layout.title, Qt::AlignLeft | Qt::AlignVCenter, titleText());
  painter.setFont(font());
  if (layout.columns.empty()) {
    painter.setPen(PlaceholderColor());
    painter.drawText(rect(), Qt::AlignCenter,
                     comparison_ ? QStringLiteral("No split of layout %1 has an order")
                                       .arg(QString::fromStdString(layout_))
                                 : QStringLiteral("No split comparison loaded"));
    return;
  }
  for (int c = 0; c < static_cast<int>(layout.columns.size()); ++c)
    PaintColumn(painter, layout, c);
  PaintLegend(painter, layout.legend);
}

void SplitView::PaintColumn(QPainter& painter, const Layout& layout, int c) const {
  const SplitColumn& column = *shownColumns()[c];
  const Layout::Column& placed = layout.columns[c];
  // The first shown split (torchtitan's default, "even") is what the others are measured against.
  const SplitColumn& reference = *shownColumns().front();
  QFont bold = font();
  bold.setBold(true);
  painter.setFont(column.best ? bold : font());
  painter.setPen(TextColor());
  const int line = painter.fontMetrics().height();
  QRect first_line = placed.header;
  first_line.setHeight(line);
  painter.drawText(first_line, Qt::AlignLeft | Qt::AlignVCenter,
                   QString::fromStdString(column.split) +
                       (column.best ? QStringLiteral("  (chosen)") : QString()));
  painter.setFont(font());
  QString figures =
      Ms(column.iteration_ms) + QStringLiteral(", ") + QString::fromStdString(column.family);
  if (&column != &reference && reference.iteration_ms > 0) {
    const double gain = 1 - column.iteration_ms / reference.iteration_ms;
    figures += QStringLiteral(", %1 % %2 than %3")
                   .arg(std::abs(gain) * 100, 0, 'f', 1)
                   .arg(gain >= 0 ? QStringLiteral("faster") : QStringLiteral("slower"))
                   .arg(QString::fromStdString(reference.split));
  }
  for (const auto& [mode, count] : column.modes) {
    if (mode != "none") figures += QStringLiteral(", %1 blocks %2").arg(count).arg(mode.c_str());
  }
  painter.setPen(SecondaryTextColor());
  painter.drawText(first_line.translated(0, line + 2), Qt::AlignLeft | Qt::AlignVCenter, figures);
  painter.drawText(placed.time_caption, Qt::AlignLeft | Qt::AlignVCenter,
                   QStringLiteral("per stage, one microbatch: F B W"));
  painter.drawText(placed.memory_caption, Qt::AlignLeft | Qt::AlignVCenter,
                   QStringLiteral("per rank at its peak: state + activations"));
  for (size_t s = 0; s < column.stages.size(); ++s) {
    const SplitColumn::Stage& stage = column.stages[s];
    painter.setPen(SecondaryTextColor());
    painter.drawText(placed.stage_labels[s], Qt::AlignRight | Qt::AlignVCenter,
                     QStringLiteral("s%1 r%2").arg(s).arg(stage.rank));
    const QRect bar = placed.stage_bars[s];
    const double total = stage.f_ms + stage.b_ms + stage.w_ms;
    int x = bar.left();
    const double parts[] = {stage.f_ms, stage.b_ms, stage.w_ms};
    const OpKind kinds[] = {OpKind::kF, OpKind::kB, OpKind::kW};
    for (int k = 0; k < 3; ++k) {
      const int end = k == 2 ? bar.left() + bar.width()
                             : x + static_cast<int>(std::lround(bar.width() * parts[k] / total));
      painter.fillRect(QRect(x, bar.top(), std::max(0, end - x), bar.height()), ColorOf(kinds[k]));
      x = end;
    }
    if (stage.checkpointed > 0 && stage.blocks > 0) {  // the share of its blocks checkpointed
      const int stripe = std::max(2, bar.height() / 4);
      painter.fillRect(QRect(bar.left(), bar.top(),
                             std::max(1, bar.width() * stage.checkpointed / stage.blocks), stripe),
                       CheckpointedColor());
    }
    painter.setPen(TextColor());
    painter.drawText(QRect(bar.right() + 4, bar.top(), kValueWidth, bar.height()),
                     Qt::AlignLeft | Qt::AlignVCenter, Ms(total));
  }
  for (size_t r = 0; r < column.peak.size(); ++r) {
    painter.setPen(SecondaryTextColor());
    painter.drawText(placed.rank_labels[r], Qt::AlignRight | Qt::AlignVCenter,
                     QStringLiteral("rank %1").arg(r));
    const QColor fill = MemoryColor();
    painter.fillRect(placed.memory_bars[r], Lighter(fill));
    painter.fillRect(placed.state_bars[r], fill);
    painter.setPen(TextColor());
    const QRect bar = placed.memory_bars[r];
    painter.drawText(QRect(bar.right() + 4, bar.top(), kValueWidth, bar.height()),
                     Qt::AlignLeft | Qt::AlignVCenter, Amount(column.peak[r]));
  }
  if (placed.cap_x && !placed.memory_bars.empty()) {
    painter.setPen(QPen(CapColor(), 2, Qt::DashLine));
    painter.drawLine(*placed.cap_x, placed.memory_bars.front().top() - 2, *placed.cap_x,
                     placed.memory_bars.back().bottom() + 2);
  }
}

void SplitView::PaintLegend(QPainter& painter, const QRect& area) const {
  const QFontMetrics metrics = painter.fontMetrics();
  int x = area.left();
  const int box = metrics.height() - 4;
  auto entry = [&](const QColor& color, const QString& text, bool line = false) {
    if (line) {
      painter.setPen(QPen(color, 2, Qt::DashLine));
      painter.drawLine(x + box / 2, area.top() + 2, x + box / 2, area.top() + 2 + box);
    } else {
      painter.fillRect(QRect(x, area.top() + 2, box, box), color);
    }
    painter.setPen(TextColor());
    painter.drawText(QRect(x + box + 4, area.top(), 400, area.height()),
                     Qt::AlignLeft | Qt::AlignVCenter, text);
    x += box + 12 + metrics.horizontalAdvance(text);
  };
  entry(ColorOf(OpKind::kF), QStringLiteral("F"));
  entry(ColorOf(OpKind::kB), QStringLiteral("B (input gradient)"));
  entry(ColorOf(OpKind::kW), QStringLiteral("W (weight gradient)"));
  entry(MemoryColor(), QStringLiteral("state: weights, gradients, optimizer"));
  entry(Lighter(MemoryColor()), QStringLiteral("activations in flight"));
  if (comparison_ && comparison_->cap) entry(CapColor(), QStringLiteral("cap"), true);
  // The stripe's entry only where a stripe is drawn: zb partition gives every row its blocks'
  // modes, checkpointed or not.
  const bool striped =
      comparison_ && std::any_of(comparison_->columns.begin(), comparison_->columns.end(),
                                 [](const SplitColumn& c) {
                                   return std::any_of(c.stages.begin(), c.stages.end(),
                                                      [](const SplitColumn::Stage& stage) {
                                                        return stage.checkpointed > 0;
                                                      });
                                 });
  if (striped)
    entry(CheckpointedColor(), QStringLiteral("share of the stage's blocks checkpointed"));
}

}  // namespace zb::gui
