// SPDX-License-Identifier: Apache-2.0
#include "find_bar.h"

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QToolButton>

#include "zbkit/schemas/timeline_find.h"

namespace zb::gui {

FindBar::FindBar(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->addWidget(new QLabel(tr("Find:"), this));
  query_ = new QLineEdit(this);
  query_->setObjectName(QStringLiteral("findQuery"));
  query_->setClearButtonEnabled(true);
  query_->setPlaceholderText(tr("kind, stage N, mb N, rank N, iter N, range name: B stage 3 mb 5"));
  layout->addWidget(query_, 1);
  auto* previous = new QToolButton(this);
  previous->setArrowType(Qt::UpArrow);
  previous->setToolTip(tr("Previous match (Shift+Enter)"));
  auto* next = new QToolButton(this);
  next->setArrowType(Qt::DownArrow);
  next->setToolTip(tr("Next match (Enter)"));
  layout->addWidget(previous);
  layout->addWidget(next);
  status_ = new QLabel(this);
  status_->setMinimumWidth(120);
  layout->addWidget(status_);
  auto* close = new QToolButton(this);
  close->setText(QStringLiteral("\u00D7"));
  close->setToolTip(tr("Close (Esc)"));
  layout->addWidget(close);

  connect(query_, &QLineEdit::textChanged, this, &FindBar::search);
  connect(query_, &QLineEdit::returnPressed, this, &FindBar::next);
  connect(previous, &QToolButton::clicked, this, &FindBar::previous);
  connect(next, &QToolButton::clicked, this, &FindBar::next);
  connect(close, &QToolButton::clicked, this, &QWidget::hide);
  showStatus();
}

void FindBar::setTimeline(std::shared_ptr<const TimelineIndex> index) {
  index_ = std::move(index);
  search();
}

void FindBar::activate() {
  show();
  query_->setFocus();
  query_->selectAll();
}

void FindBar::setQuery(const QString& text) {
  query_->setText(text);
}

void FindBar::next() {
  go(1);
}

void FindBar::previous() {
  go(-1);
}

QString FindBar::statusText() const {
  return status_->text();
}

void FindBar::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Escape) {
    hide();
  } else if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) &&
             (event->modifiers() & Qt::ShiftModifier)) {
    previous();
  } else if (event->key() == Qt::Key_F3) {
    (event->modifiers() & Qt::ShiftModifier) ? previous() : next();
  } else {
    QWidget::keyPressEvent(event);
    return;
  }
  event->accept();
}

void FindBar::search() {
  matches_.clear();
  current_ = -1;
  error_.clear();
  const std::string text = query_->text().toStdString();
  const auto query = ParseOpQuery(text);
  if (!query.ok()) {
    error_ = QString::fromStdString(query.status().message());
  } else if (index_) {
    matches_ = FindOps(*index_, *query);
  }
  showStatus();
}

void FindBar::go(int step) {
  if (matches_.empty()) return;
  const int n = static_cast<int>(matches_.size());
  current_ = current_ < 0 ? (step > 0 ? 0 : n - 1) : ((current_ + step) % n + n) % n;
  showStatus();
  emit opFound(matches_[current_].first, static_cast<qint64>(matches_[current_].second));
}

void FindBar::showStatus() {
  if (!error_.isEmpty()) {
    status_->setText(error_);
  } else if (query_->text().trimmed().isEmpty()) {
    status_->setText(QString());
  } else if (matches_.empty()) {
    status_->setText(tr("no match"));
  } else if (current_ < 0) {
    status_->setText(matches_.size() == 1 ? tr("1 match") : tr("%1 matches").arg(matches_.size()));
  } else {
    status_->setText(tr("%1 of %2").arg(current_ + 1).arg(matches_.size()));
  }
}

}  // namespace zb::gui
