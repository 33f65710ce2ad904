// SPDX-License-Identifier: Apache-2.0
// MainWindow: zbview's window. The store browser (left dock) lists what a store holds; the
// centre shows one timeline over its memory track (one shared ViewState), a comparison of two, or
// a memory-vs-bubble frontier plot; the summary (right dock) gives the figures. Loading runs in
// StoreLoader's worker threads with progress in the status bar, so a 1M-op store never freezes the
// window; every error becomes one line in a banner above the view (never a modal box: the window
// stays usable, and headless tests never block on it).
#ifndef ZBKIT_GUI_APP_MAIN_WINDOW_H_
#define ZBKIT_GUI_APP_MAIN_WINDOW_H_

#include <QMainWindow>
#include <QStringList>
#include <memory>
#include <optional>

#include "loader.h"
#include "zbkit/schemas/status.h"

class QAction;
class QCheckBox;
class QComboBox;
class QDockWidget;
class QFrame;
class QLabel;
class QMenu;
class QProgressBar;
class QSplitter;
class QStackedWidget;

namespace zb::gui {

class CompareView;
class DetailsPanel;
class FindBar;
class FrontierView;
class LegendWidget;
class MemoryTrack;
class StoreBrowser;
class SummaryPanel;
class TimelineView;
class ViewState;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  static constexpr int kMaxRecentFiles = 8;

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens `path` in the background and then shows `show` (or, without it, the most recent
  // schedule or run); with `compare_with`, the comparison of the two.
  void openStore(const QString& path, std::optional<ItemRef> show = std::nullopt,
                 std::optional<ItemRef> compare_with = std::nullopt);
  void showItem(const ItemRef& ref);
  void compareItems(const ItemRef& a, const ItemRef& b);
  // Renders the central view (timeline and memory, both compare panes, or the frontier plot) by
  // extension.
  Status exportView(const QString& path);

  // Most recent first, files that no longer exist pruned (QSettings "recentFiles").
  QStringList recentFiles() const;

  // State, for tests and the status bar.
  QString storePath() const { return store_path_; }
  QString bannerText() const;
  bool isBannerShown() const;
  bool isComparing() const;
  std::shared_ptr<const LoadedItem> shownItem() const { return shown_; }
  QWidget* centralView() const;  // what exportView() renders
  StoreLoader* loader() const { return loader_; }
  StoreBrowser* browser() const { return browser_; }
  SummaryPanel* summary() const { return summary_; }
  DetailsPanel* details() const { return details_; }
  FindBar* findBar() const { return find_bar_; }
  TimelineView* timelineView() const { return timeline_; }
  MemoryTrack* memoryTrack() const { return memory_; }
  CompareView* compareView() const { return compare_; }
  FrontierView* frontierView() const { return frontier_; }
  // The frontier page's toggle for the makespan-convention bubble.
  QCheckBox* makespanBubbleToggle() const { return makespan_toggle_; }
  // The compare page's choice of the measured iteration (hidden unless it applies).
  QComboBox* iterationChoice() const { return iteration_choice_; }
  bool isShowingFrontier() const;
  ViewState* viewState() const { return state_; }
  QProgressBar* progressBar() const { return progress_; }
  QAction* showStageLanesAction() const { return stage_lanes_action_; }
  QAction* showWaitLinksAction() const { return wait_links_action_; }
  QAction* showMemoryTrackAction() const { return memory_action_; }

 signals:
  void itemShown();        // a new item (or its cost profile) is on screen
  void comparisonShown();  // a new comparison is on screen

 private:
  void createMenus();
  void createBanner(QWidget* central);
  void createPages(QWidget* central);
  void connectSignals();
  void createDocks();
  void addRecentFile(const QString& path);
  void rebuildRecentMenu();
  void openDialog();
  void exportDialog(const QString& suffix);
  void showBanner(const QString& text);
  void hideBanner();
  void showPlaceholder(const QString& text);
  ViewState* activeViewState() const;
  void updateZoomActions();
  void applyViewOptions();
  void connectRangeSelection(TimelineView* view);

  void onStoreOpened(std::shared_ptr<const StoreListing> listing);
  void onItemLoaded(std::shared_ptr<const LoadedItem> item);
  void onComparisonLoaded(std::shared_ptr<const LoadedItem> a, std::shared_ptr<const LoadedItem> b);
  void onFailed(const QString& message);
  void fillIterationChoice();
  void showComparison(int iteration);

  StoreLoader* loader_ = nullptr;
  StoreBrowser* browser_ = nullptr;
  SummaryPanel* summary_ = nullptr;
  QDockWidget* browser_dock_ = nullptr;
  QDockWidget* summary_dock_ = nullptr;

  QFrame* banner_ = nullptr;
  QLabel* banner_label_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QLabel* placeholder_ = nullptr;
  QWidget* single_page_ = nullptr;
  LegendWidget* legend_ = nullptr;
  QSplitter* splitter_ = nullptr;
  ViewState* state_ = nullptr;
  TimelineView* timeline_ = nullptr;
  DetailsPanel* details_ = nullptr;
  FindBar* find_bar_ = nullptr;
  MemoryTrack* memory_ = nullptr;
  QWidget* compare_page_ = nullptr;
  LegendWidget* compare_legend_ = nullptr;
  CompareView* compare_ = nullptr;
  QLabel* iteration_label_ = nullptr;
  QComboBox* iteration_choice_ = nullptr;
  // The two items of the comparison as loaded (whole runs); what is shown may be one iteration.
  std::pair<std::shared_ptr<const LoadedItem>, std::shared_ptr<const LoadedItem>> compared_;
  QWidget* frontier_page_ = nullptr;
  QLabel* frontier_title_ = nullptr;
  QCheckBox* makespan_toggle_ = nullptr;
  FrontierView* frontier_ = nullptr;

  QProgressBar* progress_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QAction* zoom_back_action_ = nullptr;
  QAction* zoom_forward_action_ = nullptr;
  QAction* stage_lanes_action_ = nullptr;
  QAction* wait_links_action_ = nullptr;
  QAction* fold_action_ = nullptr;
  QAction* memory_action_ = nullptr;
  int lane_height_ = 0;  // View -> Lane Height: 0 fits the window
  QList<QAction*> export_actions_;

  QString store_path_;
  bool opening_ = false;
  std::optional<ItemRef> pending_show_;
  std::optional<ItemRef> pending_compare_;
  std::shared_ptr<const LoadedItem> shown_;
  std::shared_ptr<const LoadedItem> shown_other_;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_MAIN_WINDOW_H_
