// SPDX-License-Identifier: Apache-2.0
#include "details_panel.h"

#include <QLabel>
#include <QVBoxLayout>

#include "item_views.h"

namespace zb::gui {
namespace {

QLabel* Body(QWidget* parent) {
  auto* label = new QLabel(parent);
  label->setWordWrap(true);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  label->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  return label;
}

}  // namespace

DetailsPanel::DetailsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 4, 6, 4);
  layout->addWidget(BoldLabel(tr("Selected op"), this));
  op_ = Body(this);
  op_->setObjectName(QStringLiteral("selectedOp"));
  layout->addWidget(op_);
  layout->addSpacing(8);
  layout->addWidget(BoldLabel(tr("Selected range"), this));
  range_ = Body(this);
  range_->setObjectName(QStringLiteral("selectedRange"));
  layout->addWidget(range_);
  layout->addStretch(1);
  setOpText({});
  setRangeText({});
  setMinimumWidth(220);
}

void DetailsPanel::setOpText(const QString& text) {
  op_->setText(text.isEmpty() ? tr("Click an op to see its details; Ctrl+F finds ops.") : text);
}

void DetailsPanel::setRangeText(const QString& text) {
  range_->setText(text.isEmpty() ? tr("Shift+drag (or right-drag) over the timeline to see what a "
                                      "time range holds.")
                                 : text);
}

QString DetailsPanel::opText() const {
  return op_->text();
}

QString DetailsPanel::rangeText() const {
  return range_->text();
}

}  // namespace zb::gui
