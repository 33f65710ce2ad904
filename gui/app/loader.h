// SPDX-License-Identifier: Apache-2.0
// Loading what zbview shows from a store, off the UI thread: StoreLoader runs the GUI model's
// synchronous loads (zbkit/gui/store_model.h: ReadListing, LoadItem, which never touch a widget)
// on its own thread pool and hands the results to the UI thread. Every task opens its own read-only
// connection, so a SQLite handle is only ever used on the thread that opened it (store.h: one
// Store per thread). A newer request cancels the older one; a cancelled or superseded task never
// delivers anything.
#ifndef ZBKIT_GUI_APP_LOADER_H_
#define ZBKIT_GUI_APP_LOADER_H_

#include <QFutureWatcher>
#include <QMetaType>
#include <QObject>
#include <QPromise>
#include <QString>
#include <QThreadPool>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zbkit/gui/store_model.h"

namespace zb::gui {

// The Qt spellings of the model's item names (zbkit/gui/store_model.h), for the widgets' text.
inline QString DescribeRef(const ItemRef& ref) {
  return QString::fromStdString(ItemName(ref));
}
inline std::optional<ItemRef> ParseItemSpec(const QString& text) {
  return ParseItemSpec(std::string_view(text.toStdString()));
}

// Runs the loads on a worker pool; results arrive on the thread that owns the loader.
class StoreLoader : public QObject {
  Q_OBJECT

 public:
  explicit StoreLoader(QObject* parent = nullptr);
  ~StoreLoader() override;  // cancels what runs and waits for it

  // Each call supersedes the request before it.
  void openStore(const QString& path);
  void loadItem(const ItemRef& ref);
  void loadComparison(const ItemRef& a, const ItemRef& b);
  void cancel();

  bool isBusy() const { return watcher_ != nullptr; }
  // The listing of the last store opened successfully (null before).
  std::shared_ptr<const StoreListing> listing() const { return listing_; }
  // Blocks (processing events) until idle or `timeout_ms` passed; true when idle. For headless
  // use and tests; the window itself never waits.
  bool waitForIdle(int timeout_ms);

 signals:
  void busyChanged(bool busy);
  void progressChanged(int percent, const QString& text);
  void storeOpened(std::shared_ptr<const zb::gui::StoreListing> listing);
  void itemLoaded(std::shared_ptr<const zb::gui::LoadedItem> item);
  void comparisonLoaded(std::shared_ptr<const zb::gui::LoadedItem> a,
                        std::shared_ptr<const zb::gui::LoadedItem> b);
  // One line, ready to show; the store path is part of it.
  void failed(const QString& message);

 private:
  struct Result;
  using ResultPtr = std::shared_ptr<Result>;
  using Task = std::function<void(QPromise<ResultPtr>&)>;
  void start(Task task);
  void finish();

  QThreadPool pool_;
  QFutureWatcher<ResultPtr>* watcher_ = nullptr;
  std::shared_ptr<const StoreListing> listing_;
};

}  // namespace zb::gui

Q_DECLARE_METATYPE(zb::gui::ItemRef)
Q_DECLARE_METATYPE(std::shared_ptr<const zb::gui::StoreListing>)
Q_DECLARE_METATYPE(std::shared_ptr<const zb::gui::LoadedItem>)

#endif  // ZBKIT_GUI_APP_LOADER_H_
