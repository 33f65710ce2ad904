// SPDX-License-Identifier: Apache-2.0
#include "loader.h"

#include <QEventLoop>
#include <QPromise>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <filesystem>

namespace zb::gui {

// ---- StoreLoader ---------------------------------------------------------------------------

struct StoreLoader::Result {
  enum class Kind { kListing, kItem, kComparison };
  Kind kind = Kind::kListing;
  Status status;
  std::shared_ptr<const StoreListing> listing;
  std::shared_ptr<const LoadedItem> a;
  std::shared_ptr<const LoadedItem> b;
};

StoreLoader::StoreLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<ItemRef>();
  qRegisterMetaType<std::shared_ptr<const StoreListing>>();
  qRegisterMetaType<std::shared_ptr<const LoadedItem>>();
  // Two threads: a superseded load may still be finishing a SQLite read while the next starts.
  pool_.setMaxThreadCount(2);
}

StoreLoader::~StoreLoader() {
  // Quietly: whoever listens may be half destroyed already.
  if (watcher_ != nullptr) {
    watcher_->disconnect(this);
    watcher_->cancel();
  }
  pool_.waitForDone();
}

void StoreLoader::openStore(const QString& path) {
  const std::string store_path = path.toStdString();
  start([store_path](QPromise<ResultPtr>& promise) {
    auto result = std::make_shared<Result>();
    result->kind = Result::Kind::kListing;
    promise.setProgressRange(0, 100);
    promise.setProgressValueAndText(
        5, QStringLiteral("opening %1")
               .arg(QString::fromStdString(std::filesystem::path(store_path).filename().string())));
    auto listing = ReadListing(store_path);
    if (listing.ok()) {
      result->listing = std::make_shared<const StoreListing>(std::move(listing).value());
    } else {
      result->status = listing.status();
    }
    promise.setProgressValue(100);
    promise.addResult(std::move(result));
  });
}

void StoreLoader::loadItem(const ItemRef& ref) {
  if (!listing_) {
    emit failed(tr("no store is open"));
    return;
  }
  std::shared_ptr<const StoreListing> listing = listing_;
  start([listing, ref](QPromise<ResultPtr>& promise) {
    auto result = std::make_shared<Result>();
    result->kind = Result::Kind::kItem;
    promise.setProgressRange(0, 100);
    auto item = LoadItem(*listing, ref, [&promise](int percent, const std::string& text) {
      promise.setProgressValueAndText(percent, QString::fromStdString(text));
      return !promise.isCanceled();
    });
    if (item.ok()) {
      result->a = std::make_shared<const LoadedItem>(std::move(item).value());
    } else {
      result->status = item.status();
    }
    promise.addResult(std::move(result));
  });
}

void StoreLoader::loadComparison(const ItemRef& a, const ItemRef& b) {
  if (!listing_) {
    emit failed(tr("no store is open"));
    return;
  }
  std::shared_ptr<const StoreListing> listing = listing_;
  start([listing, a, b](QPromise<ResultPtr>& promise) {
    auto result = std::make_shared<Result>();
    result->kind = Result::Kind::kComparison;
    promise.setProgressRange(0, 100);
    // Each side reports into its half of the bar.
    auto half = [&promise](int offset) {
      return [&promise, offset](int percent, const std::string& text) {
        promise.setProgressValueAndText(offset + percent / 2, QString::fromStdString(text));
        return !promise.isCanceled();
      };
    };
    auto first = LoadItem(*listing, a, half(0));
    if (!first.ok()) {
      result->status = first.status();
      promise.addResult(std::move(result));
      return;
    }
    auto second = LoadItem(*listing, b, half(50));
    if (!second.ok()) {
      result->status = second.status();
      promise.addResult(std::move(result));
      return;
    }
    result->a = std::make_shared<const LoadedItem>(std::move(first).value());
    result->b = std::make_shared<const LoadedItem>(std::move(second).value());
    promise.addResult(std::move(result));
  });
}

void StoreLoader::start(Task task) {
  const bool was_busy = isBusy();
  if (watcher_ != nullptr) {
    // Superseded: the task stops at its next progress report; its watcher goes with it, so
    // nothing it produces is ever delivered.
    watcher_->disconnect(this);
    watcher_->cancel();
    watcher_->deleteLater();
    watcher_ = nullptr;
  }
  auto* watcher = new QFutureWatcher<ResultPtr>(this);
  watcher_ = watcher;
  connect(watcher, &QFutureWatcherBase::progressValueChanged, this, [this, watcher](int value) {
    if (watcher == watcher_) emit progressChanged(value, watcher->progressText());
  });
  connect(watcher, &QFutureWatcherBase::progressTextChanged, this,
          [this, watcher](const QString& text) {
            if (watcher == watcher_) emit progressChanged(watcher->progressValue(), text);
          });
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
    if (watcher == watcher_) finish();
  });
  if (!was_busy) emit busyChanged(true);
  watcher->setFuture(QtConcurrent::run(&pool_, std::move(task)));
}

void StoreLoader::cancel() {
  if (watcher_ == nullptr) return;
  watcher_->disconnect(this);
  watcher_->cancel();
  watcher_->deleteLater();
  watcher_ = nullptr;
  emit busyChanged(false);
}

void StoreLoader::finish() {
  QFuture<ResultPtr> future = watcher_->future();
  watcher_->deleteLater();
  watcher_ = nullptr;
  if (!future.isCanceled() && future.resultCount() > 0) {
    const ResultPtr result = future.result();
    if (!result->status.ok()) {
      if (!IsCancelledLoad(result->status)) {
        emit failed(QString::fromStdString(result->status.message()));
      }
    } else {
      switch (result->kind) {
        case Result::Kind::kListing:
          listing_ = result->listing;
          emit storeOpened(listing_);
          if (listing_->empty())
            emit failed(QString::fromStdString(EmptyStoreMessage(listing_->path)));
          break;
        case Result::Kind::kItem:
          emit itemLoaded(result->a);
          break;
        case Result::Kind::kComparison:
          emit comparisonLoaded(result->a, result->b);
          break;
      }
    }
  }
  // A handler above may have started the next load (the window opens the most recent item as
  // soon as the listing arrives); then the loader is still busy.
  if (!isBusy()) emit busyChanged(false);
}

bool StoreLoader::waitForIdle(int timeout_ms) {
  if (!isBusy()) return true;
  QEventLoop loop;
  QTimer timer;
  timer.setSingleShot(true);
  connect(&timer, &QTimer::timeout, &loop, &QEventLoop::quit);
  connect(this, &StoreLoader::busyChanged, &loop, [&loop](bool busy) {
    if (!busy) loop.quit();
  });
  timer.start(timeout_ms);
  loop.exec();
  return !isBusy();
}

}  // namespace zb::gui
