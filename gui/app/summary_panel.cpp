// SPDX-License-Identifier: Apache-2.0
#include "summary_panel.h"

#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "zbkit/gui/palette.h"
#include "zbkit/gui/units.h"
#include "zbkit/schemas/time_text.h"
#include "zbkit/tuner/memory_limit.h"  // FitsCap: "over the cap" as the tuner judges it

namespace zb::gui {
namespace {

QString Ms(TimeNs ns) {
  return FormatMs(ns) + QStringLiteral(" ms");
}

QString Delta(double a, double b) {
  if (a == 0) return {};
  return QStringLiteral(" (%1%2%)").arg(b >= a ? "+" : "").arg((b - a) / a * 100.0, 0, 'f', 1);
}

template <typename Vector>
bool HasRow(const Vector& values, int row) {
  return row >= 0 && static_cast<size_t>(row) < values.size();
}

double MaxOf(const std::vector<double>& values) {
  double best = 0;
  for (double v : values)
    best = std::max(best, v);
  return best;
}

QString NoteText(const BubbleNote& note) {
  QString text = QStringLiteral("rank %1 idle %2 ms (%3-%4)")
                     .arg(note.rank)
                     .arg(FormatMs(note.end - note.start))
                     .arg(FormatMs(note.start), FormatMs(note.end));
  if (note.before.empty()) return text + QStringLiteral(" at the end, waiting for the others");
  text += QStringLiteral(" before %1").arg(QString::fromStdString(note.before));
  if (!note.waited_for.empty()) {
    text += QStringLiteral(", waiting for %1").arg(QString::fromStdString(note.waited_for));
  }
  return text;
}

QTableWidgetItem* Cell(const QString& text, bool align_right = true) {
  auto* cell = new QTableWidgetItem(text);
  cell->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  if (align_right) cell->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return cell;
}

QTableWidget* MakeTable(const QStringList& headers, QWidget* parent) {
  auto* table = new QTableWidget(0, static_cast<int>(headers.size()), parent);
  table->setHorizontalHeaderLabels(headers);
  table->verticalHeader()->setVisible(false);
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionMode(QAbstractItemView::NoSelection);
  table->setFocusPolicy(Qt::NoFocus);
  table->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
  return table;
}

}  // namespace

QString FormatMs(TimeNs ns) {
  return QString::fromStdString(zb::FormatMs(ns));
}

QString FormatRate(double rate) {
  return QString::number(rate * 100.0, 'f', 2) + u'%';
}

QString BubbleRatesExplanation() {
  return QStringLiteral(
      "Two bubble rates, both idle time of the busiest rank over a length of time:\n"
      "- from t = 0: (makespan - heaviest rank's busy time) / makespan. What one synchronous "
      "iteration costs, warm-up and cool-down included.\n"
      "- paper: (span - busy) / span, with the span measured from each rank's first F (the ZB "
      "paper's convention). It assumes the next iteration's warm-up overlaps this one's tail.");
}

QString LowerBoundExplanation() {
  return QStringLiteral(
      "T/LB: the makespan over a lower bound on the makespan of any schedule of the same costs, "
      "microbatches and placement under the same per-rank memory cap. The bound is the largest "
      "of three: the critical path (a stage's forwards, the round trip to the last stage and the "
      "backwards back to the first), each rank's work plus the idle before its first backward "
      "that no forward can fill, and the time the cap forces when it limits how many "
      "microbatches a rank can hold at once. "
      "1.000 means no schedule can be faster.");
}

QStringList FrontierLines(const Frontier& frontier) {
  auto factor = [](double value) { return QString::number(value, 'g', 6) + u'x'; };
  std::vector<std::string> methods;
  for (const FrontierPoint& point : frontier.points) {
    if (std::find(methods.begin(), methods.end(), point.method) == methods.end()) {
      methods.push_back(point.method);
    }
  }
  QStringList lines;
  for (const std::string& method : methods) {
    int caps = 0;
    int fitting = 0;
    const FrontierPoint* lowest = nullptr;   // the smallest cap that fits
    const FrontierPoint* highest = nullptr;  // the largest cap that fits
    for (const FrontierPoint& point : frontier.points) {
      if (point.method != method) continue;
      ++caps;
      if (!point.fits) continue;
      ++fitting;
      if (lowest == nullptr || point.cap_factor < lowest->cap_factor) lowest = &point;
      if (highest == nullptr || point.cap_factor > highest->cap_factor) highest = &point;
    }
    QString line = QStringLiteral("%1: fits %2 of %3 caps")
                       .arg(QString::fromStdString(method))
                       .arg(fitting)
                       .arg(caps);
    if (lowest != nullptr) {
      line += QStringLiteral("; paper bubble %1 at %2 -> %3 at %4")
                  .arg(FormatRate(lowest->paper_bubble_rate), factor(lowest->cap_factor),
                       FormatRate(highest->paper_bubble_rate), factor(highest->cap_factor));
    }
    lines << line;
  }
  if (methods.size() == 2) {
    // Where the two differ most, at a cap where both fit: what the search buys over the
    // heuristic (or the other way round).
    const FrontierPoint* best_a = nullptr;
    const FrontierPoint* best_b = nullptr;
    for (const FrontierPoint& a : frontier.points) {
      if (a.method != methods[0] || !a.fits) continue;
      for (const FrontierPoint& b : frontier.points) {
        if (b.method != methods[1] || !b.fits || b.cap_factor != a.cap_factor) continue;
        if (best_a == nullptr ||
            std::fabs(a.paper_bubble_rate - b.paper_bubble_rate) >
                std::fabs(best_a->paper_bubble_rate - best_b->paper_bubble_rate)) {
          best_a = &a;
          best_b = &b;
        }
      }
    }
    if (best_a != nullptr) {
      lines << QStringLiteral("largest gap: %1 %2 vs %3 %4 at %5")
                   .arg(QString::fromStdString(methods[0]), FormatRate(best_a->paper_bubble_rate),
                        QString::fromStdString(methods[1]), FormatRate(best_b->paper_bubble_rate),
                        factor(best_a->cap_factor));
    }
  }
  return lines;
}

QStringList SummaryLines(const LoadedItem& item) {
  QStringList lines;
  if (item.frontier) return FrontierLines(*item.frontier);
  if (!item.figures) return lines;
  const Prediction& figures = *item.figures;
  QString line = QStringLiteral(
                     "makespan %1 ms   bubble %2 (from t = 0)   paper bubble %3 (from "
                     "each rank's first F)")
                     .arg(FormatMs(figures.makespan), FormatRate(figures.bubble_rate),
                          FormatRate(figures.paper_bubble_rate));
  if (auto ratio = item.TOverLb()) {
    line += QStringLiteral("   T/LB %1").arg(*ratio, 0, 'f', 3);
  }
  lines << line;
  if (!figures.peak_memory.empty()) {
    QStringList peaks;
    for (double peak : figures.peak_memory)
      peaks << FormatMemory(peak, item.memory_unit);
    QString memory = QStringLiteral("peak memory per rank: %1").arg(peaks.join(' '));
    if (!item.caps.empty()) {
      const double cap = MaxOf(item.caps);
      memory += QStringLiteral("   cap %1 (highest peak %2% of it)")
                    .arg(FormatMemory(cap, item.memory_unit))
                    .arg(cap > 0 ? MaxOf(figures.peak_memory) / cap * 100.0 : 0.0, 0, 'f', 0);
    }
    lines << memory;
  }
  for (size_t i = 0; i < item.bubbles.size() && i < 3; ++i) {
    lines << (i == 0 ? QStringLiteral("largest bubbles: ") : QStringLiteral("                 ")) +
                 NoteText(item.bubbles[i]);
  }
  return lines;
}

MemoryUnit SharedMemoryUnit(const LoadedItem& a, const LoadedItem& b) {
  return a.memory_unit == b.memory_unit ? a.memory_unit : MemoryUnit::kProfileUnits;
}

QStringList ComparisonLines(const LoadedItem& a, const LoadedItem& b) {
  QStringList lines;
  const MemoryUnit unit = SharedMemoryUnit(a, b);
  if (!a.figures || !b.figures) return lines;
  const Prediction& fa = *a.figures;
  const Prediction& fb = *b.figures;
  QString line =
      QStringLiteral(
          "makespan %1 -> %2 ms%3   bubble %4 -> %5 (from t = 0)   paper bubble %6 -> %7")
          .arg(FormatMs(fa.makespan), FormatMs(fb.makespan),
               Delta(static_cast<double>(fa.makespan), static_cast<double>(fb.makespan)),
               FormatRate(fa.bubble_rate), FormatRate(fb.bubble_rate),
               FormatRate(fa.paper_bubble_rate), FormatRate(fb.paper_bubble_rate));
  const auto ra = a.TOverLb();
  const auto rb = b.TOverLb();
  if (ra && rb) line += QStringLiteral("   T/LB %1 -> %2").arg(*ra, 0, 'f', 3).arg(*rb, 0, 'f', 3);
  lines << line;
  if (!fa.peak_memory.empty() && !fb.peak_memory.empty()) {
    QString memory = QStringLiteral("highest peak memory %1 -> %2")
                         .arg(FormatMemory(MaxOf(fa.peak_memory), unit),
                              FormatMemory(MaxOf(fb.peak_memory), unit));
    const std::vector<double>& caps = !b.caps.empty() ? b.caps : a.caps;
    if (!caps.empty()) memory += QStringLiteral("   cap %1").arg(FormatMemory(MaxOf(caps), unit));
    if (a.memory_unit != b.memory_unit) {
      memory += QStringLiteral("   (A counts %1, B %2: the figures are not comparable)")
                    .arg(MemoryUnitName(a.memory_unit), MemoryUnitName(b.memory_unit));
    }
    lines << memory;
  }
  return lines;
}

QString RangeSummaryText(const RangeSummary& range, int ranks) {
  QString text = QStringLiteral("%1-%2 ms (%3 ms): busy %4, idle %5 ms over %6 ranks")
                     .arg(FormatMs(range.t0), FormatMs(range.t1), FormatMs(range.t1 - range.t0))
                     .arg(FormatRate(range.busy_fraction))
                     .arg(FormatMs(range.idle))
                     .arg(ranks);
  QStringList kinds;
  for (int k = 0; k < Coverage::kKinds; ++k) {
    if (range.ops[static_cast<size_t>(k)] > 0) {
      kinds << QStringLiteral("%1 %2")
                   .arg(OpKindName(static_cast<OpKind>(k)))
                   .arg(range.ops[static_cast<size_t>(k)]);
    }
  }
  if (!kinds.isEmpty()) text += QStringLiteral("; ops: ") + kinds.join(QStringLiteral(", "));
  return text;
}

SummaryPanel::SummaryPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel(this);
  title_->setWordWrap(true);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  context_ = new QLabel(this);
  context_->setWordWrap(true);
  layout->addWidget(title_);
  layout->addWidget(context_);

  figures_ = new QWidget(this);
  auto* form = new QFormLayout(figures_);
  form->setContentsMargins(0, 0, 0, 0);
  auto add_row = [&](const QString& name, const QString& tooltip) {
    auto* value = new QLabel(figures_);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* label = new QLabel(name, figures_);
    label->setToolTip(tooltip);
    value->setToolTip(tooltip);
    form->addRow(label, value);
    return value;
  };
  makespan_ = add_row(tr("Makespan"), tr("Max over ranks of the last op's end, from t = 0."));
  bubble_ = add_row(tr("Bubble (t = 0)"), BubbleRatesExplanation());
  paper_bubble_ = add_row(tr("Bubble (paper)"), BubbleRatesExplanation());
  lower_bound_ = add_row(tr("T / LB"), LowerBoundExplanation());
  ops_ = add_row(tr("Ops"), tr("Ops in the timeline, all ranks."));
  layout->addWidget(figures_);

  memory_caption_ = new QLabel(tr("Per rank: busy share, peak activation memory, cap"), this);
  memory_table_ = MakeTable({tr("rank"), tr("busy"), tr("peak"), tr("cap"), tr("of cap")}, this);
  memory_table_->setToolTip(
      tr("busy: the rank's compute time over the makespan. Peak: the most activation memory the "
         "rank holds (unit of the cost profile's M_B). A peak above the cap is shown in red."));
  layout->addWidget(memory_caption_);
  layout->addWidget(memory_table_);

  bubbles_ = new QLabel(this);
  bubbles_->setWordWrap(true);
  bubbles_->setTextFormat(Qt::RichText);
  bubbles_->setToolTip(
      tr("The longest idle stretches of any rank, and the op each one waited "
         "for: the dependency that caused the bubble."));
  layout->addWidget(bubbles_);

  costs_caption_ = new QLabel(tr("Cost profile"), this);
  cost_table_ =
      MakeTable({tr("stage"), tr("F ms"), tr("B ms"), tr("W ms"), tr("M_B"), tr("M_W")}, this);
  cost_table_->setToolTip(
      tr("Per scheduled stage: forward, input-backward and weight-backward "
         "time; activation memory held from F until B (M_B) and the part "
         "still held from B until W (M_W)."));
  layout->addWidget(costs_caption_);
  layout->addWidget(cost_table_);

  frontier_ = new QLabel(this);
  frontier_->setWordWrap(true);
  frontier_->setTextFormat(Qt::RichText);
  frontier_->setToolTip(
      tr("Per method, the caps where a schedule of it fits and its paper bubble rate at the "
         "smallest and the largest of them."));
  layout->addWidget(frontier_);

  selection_ = new QLabel(this);
  selection_->setWordWrap(true);
  selection_->setToolTip(tr("Shift+drag (or right-drag) in the timeline to select a range."));
  layout->addWidget(selection_);
  layout->addStretch(1);
  clear();
}

void SummaryPanel::clear() {
  setMessage(tr("Open a store (File > Open) and pick a schedule."));
}

void SummaryPanel::setMessage(const QString& message) {
  item_.reset();
  other_.reset();
  title_->setText(message);
  context_->clear();
  context_->hide();
  figures_->hide();
  memory_caption_->hide();
  memory_table_->hide();
  memory_table_->setRowCount(0);
  bubbles_->hide();
  costs_caption_->hide();
  cost_table_->hide();
  cost_table_->setRowCount(0);
  selection_->clear();
  selection_->hide();
  frontier_->clear();
  frontier_->hide();
  for (QLabel* label : {makespan_, bubble_, paper_bubble_, lower_bound_, ops_})
    label->clear();
}

void SummaryPanel::setItem(std::shared_ptr<const LoadedItem> item) {
  setMessage({});
  if (!item) return;
  item_ = std::move(item);
  title_->setText(QString::fromStdString(item_->title));
  context_->setText(QString::fromStdString(item_->context));
  context_->setVisible(!item_->context.empty());
  if (item_->figures) {
    const Prediction& figures = *item_->figures;
    figures_->show();
    makespan_->setText(Ms(figures.makespan));
    bubble_->setText(FormatRate(figures.bubble_rate));
    paper_bubble_->setText(FormatRate(figures.paper_bubble_rate));
    const auto ratio = item_->TOverLb();
    lower_bound_->setText(
        ratio ? QStringLiteral("%1 (bound %2)").arg(*ratio, 0, 'f', 3).arg(Ms(item_->lower_bound))
              : tr("unknown (no cost profile)"));
    ops_->setText(item_->index ? QString::number(item_->index->num_ops()) : QString());
    showMemory(item_.get(), nullptr);
    if (!item_->bubbles.empty()) {
      QStringList rows;
      for (const BubbleNote& note : item_->bubbles)
        rows << NoteText(note).toHtmlEscaped();
      bubbles_->setText(tr("<b>Largest bubbles</b><br>") + rows.join(QStringLiteral("<br>")));
      bubbles_->show();
    }
  }
  if (item_->frontier) {
    QStringList rows;
    for (const QString& line : FrontierLines(*item_->frontier))
      rows << line.toHtmlEscaped();
    frontier_->setText(tr("<b>Frontier</b><br>") + rows.join(QStringLiteral("<br>")));
    frontier_->show();
  }
  showCosts(*item_);
}

void SummaryPanel::setComparison(std::shared_ptr<const LoadedItem> a,
                                 std::shared_ptr<const LoadedItem> b) {
  setMessage({});
  if (!a || !b) return;
  item_ = std::move(a);
  other_ = std::move(b);
  title_->setText(
      QStringLiteral("%1\nvs %2")
          .arg(QString::fromStdString(item_->title), QString::fromStdString(other_->title)));
  context_->setText(QString::fromStdString(item_->context));
  context_->setVisible(!item_->context.empty());
  if (item_->figures && other_->figures) {
    const Prediction& fa = *item_->figures;
    const Prediction& fb = *other_->figures;
    figures_->show();
    makespan_->setText(
        QStringLiteral("%1 -> %2 ms%3")
            .arg(FormatMs(fa.makespan), FormatMs(fb.makespan),
                 Delta(static_cast<double>(fa.makespan), static_cast<double>(fb.makespan))));
    bubble_->setText(
        QStringLiteral("%1 -> %2").arg(FormatRate(fa.bubble_rate), FormatRate(fb.bubble_rate)));
    paper_bubble_->setText(
        QStringLiteral("%1 -> %2")
            .arg(FormatRate(fa.paper_bubble_rate), FormatRate(fb.paper_bubble_rate)));
    const auto ra = item_->TOverLb();
    const auto rb = other_->TOverLb();
    lower_bound_->setText(QStringLiteral("%1 -> %2")
                              .arg(ra ? QString::number(*ra, 'f', 3) : QStringLiteral("?"),
                                   rb ? QString::number(*rb, 'f', 3) : QStringLiteral("?")));
    ops_->setText(QStringLiteral("%1 -> %2")
                      .arg(item_->index ? item_->index->num_ops() : 0)
                      .arg(other_->index ? other_->index->num_ops() : 0));
    showMemory(item_.get(), other_.get());
  }
  showCosts(*item_);
}

void SummaryPanel::showMemory(const LoadedItem* a, const LoadedItem* b) {
  const MemoryUnit unit = b ? SharedMemoryUnit(*a, *b) : a->memory_unit;
  memory_caption_->setText(
      tr("Per rank: busy share, peak activation memory, cap (%1)").arg(MemoryUnitName(unit)));
  const Prediction& fa = *a->figures;
  const int ranks = static_cast<int>(
      b ? std::max(fa.peak_memory.size(), b->figures->peak_memory.size()) : fa.peak_memory.size());
  memory_table_->setRowCount(ranks);
  const std::vector<double>& caps = (b && !b->caps.empty()) ? b->caps : a->caps;
  for (int r = 0; r < ranks; ++r) {
    const auto row = static_cast<size_t>(r);
    auto busy = [r](const LoadedItem& item) -> QString {
      if (HasRow(item.rank_busy, r) && item.figures->makespan > 0) {
        return FormatRate(static_cast<double>(item.rank_busy[static_cast<size_t>(r)]) /
                          static_cast<double>(item.figures->makespan));
      }
      return {};
    };
    auto peak_of = [r](const LoadedItem& item) -> std::optional<double> {
      if (!HasRow(item.figures->peak_memory, r)) return std::nullopt;
      return item.figures->peak_memory[static_cast<size_t>(r)];
    };
    const std::optional<double> pa = peak_of(*a);
    const std::optional<double> pb = b ? peak_of(*b) : std::nullopt;
    // NaN when there is no cap: every comparison with it is false.
    const double cap = row < caps.size() ? caps[row] : std::nan("");
    const bool has_cap = std::isfinite(cap);
    QString busy_text = busy(*a);
    QString peak_text = pa ? FormatMemory(*pa, unit) : QString();
    if (b) {
      busy_text += QStringLiteral(" -> ") + busy(*b);
      peak_text += QStringLiteral(" -> ") + (pb ? FormatMemory(*pb, unit) : QString());
    }
    const std::optional<double> shown_peak = b ? pb : pa;
    memory_table_->setItem(r, 0, Cell(QString::number(r)));
    memory_table_->setItem(r, 1, Cell(busy_text));
    memory_table_->setItem(r, 2, Cell(peak_text));
    memory_table_->setItem(r, 3, Cell(has_cap ? FormatMemory(cap, unit) : tr("none")));
    QTableWidgetItem* share = Cell(has_cap && shown_peak && cap > 0
                                       ? QString::number(*shown_peak / cap * 100.0, 'f', 0) + u'%'
                                       : QString());
    if (has_cap && shown_peak && !tuner::FitsCap(*shown_peak, cap)) {
      share->setForeground(OverCapTextColor());
      memory_table_->item(r, 2)->setForeground(OverCapTextColor());
    }
    memory_table_->setItem(r, 4, share);
  }
  memory_caption_->show();
  memory_table_->setVisible(ranks > 0);
}

void SummaryPanel::showCosts(const LoadedItem& item) {
  if (!item.costs) return;
  const CostProfile& costs = *item.costs;
  costs_caption_->setText(tr("Cost profile%1, comm %2 ms per hop")
                              .arg(item.profile ? QString() : tr(" (as scheduled)"))
                              .arg(FormatMs(costs.comm)));
  cost_table_->setRowCount(costs.num_stages());
  for (int s = 0; s < costs.num_stages(); ++s) {
    const StageCost& stage = costs.stages[static_cast<size_t>(s)];
    cost_table_->setItem(s, 0, Cell(QString::number(s)));
    cost_table_->setItem(s, 1, Cell(FormatMs(stage.f)));
    cost_table_->setItem(s, 2, Cell(FormatMs(stage.b)));
    cost_table_->setItem(s, 3, Cell(FormatMs(stage.w)));
    cost_table_->setItem(s, 4, Cell(FormatMemory(stage.m_b, item.memory_unit)));
    cost_table_->setItem(s, 5, Cell(FormatMemory(stage.m_w, item.memory_unit)));
  }
  costs_caption_->show();
  cost_table_->show();
}

void SummaryPanel::setRangeSummary(const std::optional<RangeSummary>& range, int ranks) {
  if (!range || range->t1 <= range->t0) {
    selection_->clear();
    selection_->hide();
    return;
  }
  selection_->setText(tr("<b>Selection</b><br>") + RangeSummaryText(*range, ranks).toHtmlEscaped());
  selection_->show();
}

QString SummaryPanel::titleText() const {
  return title_->text();
}
QString SummaryPanel::makespanText() const {
  return makespan_->text();
}
QString SummaryPanel::bubbleText() const {
  return bubble_->text();
}
QString SummaryPanel::paperBubbleText() const {
  return paper_bubble_->text();
}
QString SummaryPanel::lowerBoundText() const {
  return lower_bound_->text();
}
QString SummaryPanel::selectionText() const {
  return selection_->text();
}
QString SummaryPanel::frontierText() const {
  return frontier_->text();
}

}  // namespace zb::gui
