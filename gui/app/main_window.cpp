// SPDX-License-Identifier: Apache-2.0
#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "details_panel.h"
#include "export.h"
#include "find_bar.h"
#include "item_views.h"
#include "store_browser.h"
#include "summary_panel.h"
#include "timeline_picture.h"
#include "zbkit/gui/compare_view.h"
#include "zbkit/gui/frontier_view.h"
#include "zbkit/gui/legend.h"
#include "zbkit/gui/memory_track.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/timeline_view.h"
#include "zbkit/gui/view_state.h"
#include "zbkit/schemas/timeline_analysis.h"

namespace zb::gui {
namespace {

constexpr const char* kRecentFilesKey = "recentFiles";

QStringList ExistingOnly(const QStringList& files) {
  QStringList kept;
  for (const QString& file : files) {
    if (!file.isEmpty() && QFileInfo::exists(file) && !kept.contains(file)) kept << file;
  }
  return kept;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(QStringLiteral("zbview"));
  resize(1400, 850);

  loader_ = new StoreLoader(this);

  // Centre: an error banner over a stack of placeholder / single timeline / comparison / frontier.
  auto* central = new QWidget(this);
  auto* central_layout = new QVBoxLayout(central);
  central_layout->setContentsMargins(0, 0, 0, 0);
  central_layout->setSpacing(0);
  createBanner(central);
  central_layout->addWidget(banner_);
  createPages(central);
  central_layout->addWidget(stack_, 1);
  setCentralWidget(central);

  createDocks();
  createMenus();

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(220);
  progress_->setTextVisible(true);
  progress_->hide();
  statusBar()->addPermanentWidget(progress_);
  connectSignals();

  showPlaceholder(
      tr("Open a zbkit store with File > Open (Ctrl+O), or pass it on the command "
         "line: zbview STORE.db"));
  updateZoomActions();
}

// The error banner: one line (wrapped) with a dismiss button, hidden until a failure.
void MainWindow::createBanner(QWidget* central) {
  banner_ = new QFrame(central);
  banner_->setObjectName(QStringLiteral("banner"));
  banner_->setStyleSheet(
      QStringLiteral("#banner { background: %1; border-bottom: 1px solid %2; } "
                     "#banner QLabel { color: %3; }")
          .arg(BannerColor().name(), BannerBorderColor().name(), BannerTextColor().name()));
  auto* banner_layout = new QHBoxLayout(banner_);
  banner_layout->setContentsMargins(10, 6, 6, 6);
  banner_label_ = new QLabel(banner_);
  banner_label_->setWordWrap(true);
  banner_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* dismiss = new QToolButton(banner_);
  dismiss->setText(QStringLiteral("x"));
  dismiss->setToolTip(tr("Dismiss"));
  dismiss->setAutoRaise(true);
  connect(dismiss, &QToolButton::clicked, this, &MainWindow::hideBanner);
  banner_layout->addWidget(banner_label_, 1);
  banner_layout->addWidget(dismiss, 0, Qt::AlignTop);
  banner_->hide();
}

// The stack of pages: placeholder, single timeline (legend, timeline over memory), comparison,
// frontier.
void MainWindow::createPages(QWidget* central) {
  stack_ = new QStackedWidget(central);
  placeholder_ = new QLabel(stack_);
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);
  placeholder_->setMargin(24);
  stack_->addWidget(placeholder_);

  single_page_ = new QWidget(stack_);
  auto* single_layout = new QVBoxLayout(single_page_);
  single_layout->setContentsMargins(4, 4, 4, 4);
  single_layout->setSpacing(2);
  legend_ = new LegendWidget(single_page_);
  state_ = new ViewState(this);
  timeline_ = new TimelineView(single_page_);
  timeline_->setViewState(state_);
  memory_ = new MemoryTrack(single_page_);
  memory_->setViewState(state_);
  memory_->setLabelWidth(timeline_->laneLabelWidth());
  // A splitter: how much room the memory rows deserve depends on the question being asked.
  splitter_ = new QSplitter(Qt::Vertical, single_page_);
  splitter_->addWidget(timeline_);
  splitter_->addWidget(memory_);
  splitter_->setChildrenCollapsible(true);
  // What is selected, beside the timeline (not only at the bottom of the summary).
  details_ = new DetailsPanel(single_page_);
  auto* beside = new QSplitter(Qt::Horizontal, single_page_);
  beside->addWidget(splitter_);
  beside->addWidget(details_);
  beside->setStretchFactor(0, 1);
  beside->setStretchFactor(1, 0);
  beside->setSizes({1000, 240});
  find_bar_ = new FindBar(single_page_);
  find_bar_->hide();
  single_layout->addWidget(legend_);
  single_layout->addWidget(find_bar_);
  single_layout->addWidget(beside, 1);
  stack_->addWidget(single_page_);

  compare_page_ = new QWidget(stack_);
  auto* compare_layout = new QVBoxLayout(compare_page_);
  compare_layout->setContentsMargins(4, 4, 4, 4);
  compare_layout->setSpacing(2);
  compare_legend_ = new LegendWidget(compare_page_);
  compare_legend_->setShowMemoryCap(false);
  compare_ = new CompareView(compare_page_);
  auto* compare_header = new QHBoxLayout;
  compare_header->addWidget(compare_legend_, 1);
  iteration_label_ = new QLabel(tr("Measured:"), compare_page_);
  iteration_choice_ = new QComboBox(compare_page_);
  iteration_choice_->setObjectName(QStringLiteral("iterationChoice"));
  iteration_choice_->setToolTip(
      tr("A prediction is one iteration: the measured run is compared one iteration at a time"));
  compare_header->addWidget(iteration_label_);
  compare_header->addWidget(iteration_choice_);
  iteration_label_->hide();
  iteration_choice_->hide();
  compare_layout->addLayout(compare_header);
  compare_layout->addWidget(compare_, 1);
  stack_->addWidget(compare_page_);

  // A frontier: its title and the convention toggle over the plot, which draws its own legend
  // (so an export of the page carries everything).
  frontier_page_ = new QWidget(stack_);
  auto* frontier_layout = new QVBoxLayout(frontier_page_);
  frontier_layout->setContentsMargins(8, 6, 8, 4);
  frontier_layout->setSpacing(4);
  auto* frontier_header = new QHBoxLayout;
  frontier_title_ = new QLabel(frontier_page_);
  QFont title_font = frontier_title_->font();
  title_font.setBold(true);
  frontier_title_->setFont(title_font);
  frontier_title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  makespan_toggle_ =
      new QCheckBox(tr("Also show the bubble from t = 0 (makespan)"), frontier_page_);
  makespan_toggle_->setToolTip(BubbleRatesExplanation());
  frontier_header->addWidget(frontier_title_, 1);
  frontier_header->addWidget(makespan_toggle_);
  frontier_ = new FrontierView(frontier_page_);
  frontier_layout->addLayout(frontier_header);
  frontier_layout->addWidget(frontier_, 1);
  stack_->addWidget(frontier_page_);
}

void MainWindow::connectSignals() {
  connect(loader_, &StoreLoader::busyChanged, this, [this](bool busy) {
    progress_->setVisible(busy);
    if (busy) progress_->setValue(0);
  });
  connect(loader_, &StoreLoader::progressChanged, this, [this](int percent, const QString& text) {
    progress_->setValue(percent);
    if (!text.isEmpty()) statusBar()->showMessage(text + QStringLiteral("..."));
  });
  connect(loader_, &StoreLoader::storeOpened, this, &MainWindow::onStoreOpened);
  connect(loader_, &StoreLoader::itemLoaded, this, &MainWindow::onItemLoaded);
  connect(loader_, &StoreLoader::comparisonLoaded, this, &MainWindow::onComparisonLoaded);
  connect(loader_, &StoreLoader::failed, this, &MainWindow::onFailed);
  connect(browser_, &StoreBrowser::itemActivated, this, &MainWindow::showItem);
  connect(browser_, &StoreBrowser::compareRequested, this, &MainWindow::compareItems);
  connect(makespan_toggle_, &QCheckBox::toggled, frontier_, &FrontierView::setShowMakespanBubble);
  // A point of the plot that names its schedule opens it.
  connect(frontier_, &FrontierView::scheduleActivated, this, [this](int64_t id) {
    showItem({ItemKind::kSchedule, id});
  });

  for (ViewState* state : {state_, compare_->viewState()}) {
    connect(state, &ViewState::historyChanged, this, &MainWindow::updateZoomActions);
    connect(state, &ViewState::selectionChanged, this, [this, state] {
      if (state == activeViewState() && !state->selection()) {
        summary_->setRangeSummary(std::nullopt, 0);
      }
    });
  }
  connect(timeline_, &TimelineView::opSelected, this, [this](int lane, qint64 index) {
    const auto& timeline = timeline_->timeline();
    details_->setOpText(
        timeline && lane >= 0
            ? OpDetailsText(*timeline, lane, static_cast<size_t>(index), timeline_->timeOrigin())
            : QString());
  });
  connect(find_bar_, &FindBar::opFound, this, [this](int lane, qint64 index) {
    timeline_->revealOp(lane, static_cast<size_t>(index));
  });
  connect(state_, &ViewState::selectionChanged, this,
          [this] { details_->setRangeText(timeline_->selectionSummaryText()); });
  connect(iteration_choice_, &QComboBox::currentIndexChanged, this, [this](int row) {
    if (row >= 0 && compared_.first) showComparison(iteration_choice_->itemData(row).toInt());
  });
  connectRangeSelection(timeline_);
  connectRangeSelection(compare_->top());
  connectRangeSelection(compare_->bottom());
}

MainWindow::~MainWindow() {
  // The loader is a child and outlives this part of the window: nothing it still says (its
  // destructor cancels a running load) may reach the half-destroyed window.
  loader_->disconnect(this);
}

void MainWindow::createDocks() {
  browser_ = new StoreBrowser(this);
  browser_dock_ = new QDockWidget(tr("Store"), this);
  browser_dock_->setObjectName(QStringLiteral("storeDock"));
  browser_dock_->setWidget(browser_);
  addDockWidget(Qt::LeftDockWidgetArea, browser_dock_);

  summary_ = new SummaryPanel(this);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(summary_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  summary_dock_ = new QDockWidget(tr("Summary"), this);
  summary_dock_->setObjectName(QStringLiteral("summaryDock"));
  summary_dock_->setWidget(scroll);
  addDockWidget(Qt::RightDockWidgetArea, summary_dock_);
  resizeDocks({browser_dock_, summary_dock_}, {400, 340}, Qt::Horizontal);
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open..."), QKeySequence::Open, this, &MainWindow::openDialog);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
  rebuildRecentMenu();
  file->addSeparator();
  for (const QString& suffix :
       {QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("pdf")}) {
    QAction* action = file->addAction(tr("Export %1...").arg(suffix.toUpper()), this,
                                      [this, suffix] { exportDialog(suffix); });
    action->setEnabled(false);
    export_actions_ << action;
  }
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  // Shortcuts with modifiers only: the timeline itself takes W/S/A/D, F, Home, Backspace, Esc
  // while it has focus, and a menu shortcut would steal them.
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("&Find Op..."), QKeySequence::Find, this, [this] {
    if (stack_->currentWidget() == single_page_) find_bar_->activate();
  });
  view->addAction(tr("&Fit All"), QKeySequence(Qt::CTRL | Qt::Key_0), this,
                  [this] { activeViewState()->fitAll(); });
  zoom_back_action_ = view->addAction(tr("Zoom &Back"), QKeySequence::Back, this,
                                      [this] { activeViewState()->zoomBack(); });
  zoom_forward_action_ = view->addAction(tr("Zoom F&orward"), QKeySequence::Forward, this,
                                         [this] { activeViewState()->zoomForward(); });
  view->addSeparator();
  stage_lanes_action_ = view->addAction(tr("Show &Stage Lanes"));
  stage_lanes_action_->setCheckable(true);
  stage_lanes_action_->setChecked(true);
  stage_lanes_action_->setToolTip(
      tr("One extra lane per stage for ranks that hold several stages (interleaved, V)."));
  wait_links_action_ = view->addAction(tr("Show &Wait Links"));
  wait_links_action_->setCheckable(true);
  wait_links_action_->setChecked(true);
  wait_links_action_->setToolTip(
      tr("A thin line from each op that waited to the op it waited for: why a bubble is there."));
  connect(stage_lanes_action_, &QAction::toggled, this, &MainWindow::applyViewOptions);
  connect(wait_links_action_, &QAction::toggled, this, &MainWindow::applyViewOptions);
  memory_action_ = view->addAction(tr("Show &Memory Track"));
  memory_action_->setCheckable(true);
  memory_action_->setChecked(true);
  memory_action_->setToolTip(tr("Activation memory per rank under the timeline."));
  connect(memory_action_, &QAction::toggled, this, [this](bool shown) {
    memory_->setVisible(shown && shown_ && shown_->index && shown_->index->has_memory());
  });
  fold_action_ = view->addAction(tr("F&old All Stage Lanes"));
  fold_action_->setCheckable(true);
  fold_action_->setToolTip(tr("Only one lane per rank; a click on a rank's label unfolds it."));
  connect(fold_action_, &QAction::toggled, this, [this](bool folded) {
    for (TimelineView* pane : {timeline_, compare_->top(), compare_->bottom()})
      pane->setAllRanksCollapsed(folded);
  });
  // Lane height: fit the window, or a fixed height with vertical scrolling (docs/zbview.md §9).
  QMenu* heights = view->addMenu(tr("Lane &Height"));
  auto* height_group = new QActionGroup(this);
  const std::pair<QString, int> choices[] = {{tr("&Fit the Window"), 0},
                                             {tr("&Small (12 px)"), 12},
                                             {tr("&Medium (24 px)"), 24},
                                             {tr("&Large (40 px)"), 40}};
  for (const auto& [text, pixels] : choices) {
    QAction* action = heights->addAction(text);
    action->setCheckable(true);
    action->setChecked(pixels == 0);
    action->setData(pixels);
    height_group->addAction(action);
  }
  connect(height_group, &QActionGroup::triggered, this, [this](QAction* action) {
    lane_height_ = action->data().toInt();
    applyViewOptions();
  });
  view->addSeparator();
  view->addAction(browser_dock_->toggleViewAction());
  view->addAction(summary_dock_->toggleViewAction());
}

void MainWindow::applyViewOptions() {
  for (TimelineView* view : {timeline_, compare_->top(), compare_->bottom()}) {
    view->setShowStageLanes(stage_lanes_action_->isChecked());
    view->setShowWaitLinks(wait_links_action_->isChecked());
    view->setLaneHeight(lane_height_);
  }
}

void MainWindow::connectRangeSelection(TimelineView* view) {
  connect(view, &TimelineView::rangeSelected, this, [this, view](TimeRange range) {
    const std::shared_ptr<const TimelineIndex>& index = view->timeline();
    if (!index || range.t1 <= range.t0) {
      summary_->setRangeSummary(std::nullopt, 0);
      return;
    }
    summary_->setRangeSummary(index->Summarize(range.t0, range.t1), index->num_ranks());
  });
}

ViewState* MainWindow::activeViewState() const {
  return stack_->currentWidget() == compare_page_ ? compare_->viewState() : state_;
}

void MainWindow::updateZoomActions() {
  ViewState* state = activeViewState();
  zoom_back_action_->setEnabled(state->canZoomBack());
  zoom_forward_action_->setEnabled(state->canZoomForward());
}

// ---- Opening and showing -------------------------------------------------------------------

void MainWindow::openStore(const QString& path, std::optional<ItemRef> show,
                           std::optional<ItemRef> compare_with) {
  store_path_ = path;
  opening_ = true;
  pending_show_ = show;
  pending_compare_ = compare_with;
  hideBanner();
  setWindowTitle(QStringLiteral("zbview - %1").arg(QFileInfo(path).fileName()));
  statusBar()->showMessage(tr("Opening %1...").arg(path));
  loader_->openStore(path);
}

void MainWindow::showItem(const ItemRef& ref) {
  // Re-selecting what is already on screen (the browser echoes the window's own choice) is a
  // no-op; the same id in another store is not the same item.
  const auto listing = loader_->listing();
  if (shown_ && !shown_other_ && shown_->ref == ref && listing &&
      shown_->store_path == listing->path && !loader_->isBusy()) {
    return;
  }
  loader_->loadItem(ref);
}

void MainWindow::compareItems(const ItemRef& a, const ItemRef& b) {
  if (a.kind == ItemKind::kCostProfile || b.kind == ItemKind::kCostProfile) {
    showBanner(tr("Only schedules and timelines can be compared, not cost profiles."));
    return;
  }
  if (a.kind == ItemKind::kFrontier || b.kind == ItemKind::kFrontier) {
    showBanner(tr("Only schedules and timelines can be compared, not frontiers."));
    return;
  }
  loader_->loadComparison(a, b);
}

void MainWindow::onStoreOpened(std::shared_ptr<const StoreListing> listing) {
  opening_ = false;
  addRecentFile(store_path_);
  browser_->setListing(listing);
  if (listing->empty()) {
    showPlaceholder(QString::fromStdString(EmptyStoreMessage(listing->path)));
    summary_->setMessage(
        tr("Nothing to show: the store holds no schedules, timelines or frontiers."));
    return;
  }
  std::optional<ItemRef> first = pending_show_;
  if (first && !listing->Contains(*first)) {
    showBanner(tr("%1: no %2 in the store; showing the most recent item instead")
                   .arg(QString::fromStdString(listing->path), DescribeRef(*first)));
    first.reset();
  }
  if (!first) first = listing->MostRecent(/*with_frontiers=*/!pending_compare_);
  if (pending_compare_ && first) {
    if (listing->Contains(*pending_compare_)) {
      compareItems(*first, *pending_compare_);
    } else {
      showBanner(tr("%1: no %2 in the store to compare with")
                     .arg(QString::fromStdString(listing->path), DescribeRef(*pending_compare_)));
      showItem(*first);
    }
  } else if (first) {
    showItem(*first);
  }
  pending_show_.reset();
  pending_compare_.reset();
}

void MainWindow::onItemLoaded(std::shared_ptr<const LoadedItem> item) {
  shown_ = item;
  shown_other_.reset();
  if (item->index) {
    ShowItemInViews(*item, legend_, timeline_, memory_, state_);
    find_bar_->setTimeline(item->index);
    details_->setOpText({});
    details_->setRangeText({});
    // The timeline's lanes stop growing at 40 px (its size hint counts 28 px a lane plus 48 px of
    // ruler): past that, the room goes to the memory rows, which get at least their smallest
    // readable height (18 px + gap each) and at most half again their size hint.
    const int total = std::max(splitter_->height(), 400);
    const int timeline_useful = 56 + (timeline_->sizeHint().height() - 48) * 10 / 7;
    const int memory_min = std::min(2 + item->index->num_ranks() * 21, total / 2);
    const int memory_max = std::max(memory_min, memory_->sizeHint().height() * 3 / 2);
    const int memory =
        item->index->has_memory() ? std::clamp(total - timeline_useful, memory_min, memory_max) : 0;
    splitter_->setSizes({total - memory, memory});
    memory_->setVisible(memory_action_->isChecked());
    stack_->setCurrentWidget(single_page_);
    timeline_->setFocus(Qt::OtherFocusReason);
  } else if (item->frontier) {
    frontier_title_->setText(QString::fromStdString(item->title));
    frontier_->setFrontier(item->frontier);
    stack_->setCurrentWidget(frontier_page_);
    frontier_->setFocus(Qt::OtherFocusReason);
  } else {
    showPlaceholder(tr("%1 has no timeline; its per-stage costs are in the summary.")
                        .arg(QString::fromStdString(item->title)));
  }
  summary_->setItem(item);
  browser_->setShownItems({item->ref});
  for (QAction* action : export_actions_)
    action->setEnabled(item->index != nullptr || item->frontier != nullptr);
  updateZoomActions();
  statusBar()->showMessage(
      tr("%1 loaded in %2 ms").arg(DescribeRef(item->ref)).arg(item->load_ms, 0, 'f', 1), 8000);
  emit itemShown();
}

void MainWindow::onComparisonLoaded(std::shared_ptr<const LoadedItem> a,
                                    std::shared_ptr<const LoadedItem> b) {
  if (!a->index || !b->index) {
    showBanner(tr("Only schedules and timelines can be compared."));
    return;
  }
  compared_ = {a, b};
  fillIterationChoice();
  showComparison(kMedianIteration);
}

// The iteration chooser of a comparison: shown when one side is a measured run of several
// iterations and the other a prediction (ComparedSides); the median one first.
void MainWindow::fillIterationChoice() {
  const QSignalBlocker blocker(iteration_choice_);
  iteration_choice_->clear();
  const LoadedItem* measured = IterationSide(*compared_.first, *compared_.second);
  iteration_label_->setVisible(measured != nullptr);
  iteration_choice_->setVisible(measured != nullptr);
  if (!measured) return;
  const auto& spans = measured->index->iterations();
  const int32_t median = MedianIteration(*measured->index);
  auto describe = [&](int32_t i) {
    return tr("iteration %1 (%2 ms)").arg(i).arg(FormatMs(spans[i].end - spans[i].start));
  };
  iteration_choice_->addItem(tr("median: %1").arg(describe(median)), kMedianIteration);
  for (int32_t i = 0; i < static_cast<int32_t>(spans.size()); ++i) {
    if (spans[i].ops > 0) iteration_choice_->addItem(describe(i), i);
  }
  iteration_choice_->addItem(tr("the whole run (%1 iterations)").arg(spans.size()), kWholeRun);
}

void MainWindow::showComparison(int iteration) {
  const auto [a, b] = ComparedSides(compared_.first, compared_.second, iteration);
  shown_ = a;
  shown_other_ = b;
  compare_->setTimelines(a->index, PaneLabel(*a, 'A'), b->index, PaneLabel(*b, 'B'));
  const TimeRange ra = FullRange(*a->index);
  const TimeRange rb = FullRange(*b->index);
  compare_->viewState()->setTraceRange({std::min(ra.t0, rb.t0), std::max(ra.t1, rb.t1)});
  applyViewOptions();
  compare_legend_->setKinds(KindsIn(*a->index) | KindsIn(*b->index));
  compare_legend_->setShowDeviceIdle(a->index->has_op_detail() || b->index->has_op_detail());
  stack_->setCurrentWidget(compare_page_);
  compare_->top()->setFocus(Qt::OtherFocusReason);
  summary_->setComparison(a, b);
  browser_->setShownItems({a->ref, b->ref});
  for (QAction* action : export_actions_)
    action->setEnabled(true);
  updateZoomActions();
  statusBar()->showMessage(tr("comparing %1 with %2").arg(DescribeRef(a->ref), DescribeRef(b->ref)),
                           8000);
  emit comparisonShown();
}

void MainWindow::onFailed(const QString& message) {
  showBanner(message);
  statusBar()->showMessage(message, 8000);
  if (opening_ && loader_->listing() && shown_) {
    // The store did not open but another one is: keep it, and say so (File -> Open of a wrong
    // file must not lose what was on screen).
    opening_ = false;
    store_path_ = QString::fromStdString(loader_->listing()->path);
    setWindowTitle(QStringLiteral("zbview - %1").arg(QFileInfo(store_path_).fileName()));
    showBanner(tr("%1 (still showing %2)").arg(message, store_path_));
    return;
  }
  if (opening_) {
    // The store did not open and none was open before: show nothing.
    opening_ = false;
    browser_->clear();
    shown_.reset();
    shown_other_.reset();
    summary_->setMessage(tr("No store open."));
    showPlaceholder(message);
    for (QAction* action : export_actions_)
      action->setEnabled(false);
  }
}

void MainWindow::showBanner(const QString& text) {
  banner_label_->setText(text);
  banner_->show();
}

void MainWindow::hideBanner() {
  banner_label_->clear();
  banner_->hide();
}

QString MainWindow::bannerText() const {
  return banner_label_->text();
}
bool MainWindow::isBannerShown() const {
  return !banner_->isHidden();
}
bool MainWindow::isComparing() const {
  return stack_->currentWidget() == compare_page_;
}
bool MainWindow::isShowingFrontier() const {
  return stack_->currentWidget() == frontier_page_;
}

void MainWindow::showPlaceholder(const QString& text) {
  placeholder_->setText(text);
  stack_->setCurrentWidget(placeholder_);
}

QWidget* MainWindow::centralView() const {
  QWidget* current = stack_->currentWidget();
  return current == placeholder_ ? nullptr : current;
}

// ---- Files ---------------------------------------------------------------------------------

void MainWindow::openDialog() {
  const QStringList recent = recentFiles();
  const QString start = recent.isEmpty() ? QString() : QFileInfo(recent.front()).absolutePath();
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open zbkit store"), start,
                                   tr("zbkit stores (*.db *.sqlite *.sqlite3);;All files (*)"));
  if (!path.isEmpty()) openStore(path);
}

void MainWindow::exportDialog(const QString& suffix) {
  QString suggested = QFileInfo(store_path_).completeBaseName();
  if (shown_) suggested += QStringLiteral("-") + DescribeRef(shown_->ref).replace(u' ', u'-');
  if (shown_other_) suggested += QStringLiteral("-vs-%1").arg(shown_other_->ref.id);
  suggested = QFileInfo(store_path_).absolutePath() + u'/' + suggested + u'.' + suffix;
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export %1").arg(suffix.toUpper()), suggested,
                                   tr("%1 files (*.%2)").arg(suffix.toUpper(), suffix));
  if (path.isEmpty()) return;
  const Status status = exportView(path);
  if (status.ok()) {
    statusBar()->showMessage(tr("exported %1").arg(path), 8000);
  } else {
    showBanner(QString::fromStdString(status.message()));
  }
}

Status MainWindow::exportView(const QString& path) {
  QWidget* view = centralView();
  if (view == nullptr) return UsageError(path.toStdString() + ": nothing to export yet");
  // A timeline or a comparison: the whole of it, every lane, under titles naming each side.
  const bool single = view == single_page_ && shown_ && shown_->index;
  const bool comparing =
      view == compare_page_ && shown_ && shown_->index && shown_other_ && shown_other_->index;
  if (!single && !comparing) return ExportWidget(view, path);
  PictureOptions options;
  options.width = std::max(view->width(), 800);
  options.lane_height = lane_height_ > 0 ? lane_height_ : 24;
  options.stage_lanes = stage_lanes_action_->isChecked();
  options.fold_all = fold_action_->isChecked();
  options.wait_links = wait_links_action_->isChecked();
  const std::unique_ptr<QWidget> picture =
      WholeTimelinePicture(*shown_, comparing ? shown_other_.get() : nullptr, options);
  return ExportWidget(picture.get(), path);
}

QStringList MainWindow::recentFiles() const {
  QSettings settings;
  const QStringList stored = settings.value(kRecentFilesKey).toStringList();
  const QStringList kept = ExistingOnly(stored).mid(0, kMaxRecentFiles);
  if (kept != stored) settings.setValue(kRecentFilesKey, kept);
  return kept;
}

void MainWindow::addRecentFile(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList files = recentFiles();
  files.removeAll(absolute);
  files.prepend(absolute);
  while (files.size() > kMaxRecentFiles)
    files.removeLast();
  QSettings settings;
  settings.setValue(kRecentFilesKey, files);
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList files = recentFiles();
  for (int i = 0; i < files.size(); ++i) {
    const QString& file = files[i];
    QAction* action =
        recent_menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(file).fileName()),
                                this, [this, file] { openStore(file); });
    action->setToolTip(file);
    action->setStatusTip(file);
  }
  if (files.isEmpty()) {
    recent_menu_->addAction(tr("(none)"))->setEnabled(false);
  } else {
    recent_menu_->addSeparator();
    recent_menu_->addAction(tr("Clear List"), this, [this] {
      QSettings settings;
      settings.remove(kRecentFilesKey);
      rebuildRecentMenu();
    });
  }
}

}  // namespace zb::gui
