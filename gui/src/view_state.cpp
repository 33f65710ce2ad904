// SPDX-License-Identifier: Apache-2.0
#include "zbkit/gui/view_state.h"

#include <algorithm>
#include <cmath>

namespace zb::gui {
namespace {

// Enough to go back through a long session; bounded so that a scripted zoom loop cannot grow it.
constexpr size_t kMaxHistory = 200;

void PushBounded(std::vector<TimeRange>& stack, TimeRange range) {
  if (stack.size() >= kMaxHistory) stack.erase(stack.begin());
  stack.push_back(range);
}

}  // namespace

ViewState::ViewState(QObject* parent) : QObject(parent) {
  trace_ = {0, kMinimumSpan};
  visible_ = trace_;
}

TimeRange ViewState::Clamp(TimeRange range) const {
  if (range.t1 < range.t0) std::swap(range.t0, range.t1);
  const TimeNs trace_span = trace_.length();
  TimeNs span = std::clamp(range.length(), kMinimumSpan, std::max(trace_span, kMinimumSpan));
  // Keep the centre where the caller asked when the span had to grow or shrink.
  if (span != range.length()) {
    const TimeNs centre = range.t0 + range.length() / 2;
    range.t0 = centre - span / 2;
  }
  range.t0 = std::clamp(range.t0, trace_.t0, std::max(trace_.t0, trace_.t1 - span));
  range.t1 = range.t0 + span;
  return range;
}

void ViewState::setTraceRange(TimeRange range) {
  if (range.t1 < range.t0) std::swap(range.t0, range.t1);
  // An empty or tiny trace still gets a drawable window (the span floor applies to it too).
  if (range.length() < kMinimumSpan) range.t1 = range.t0 + kMinimumSpan;
  trace_ = range;
  visible_ = trace_;
  back_.clear();
  forward_.clear();
  const bool had_selection = selection_.has_value();
  selection_.reset();
  emit visibleRangeChanged(visible_);
  if (had_selection) emit selectionChanged();
  emit historyChanged();
}

void ViewState::setVisibleRange(TimeRange range, bool record) {
  const TimeRange clamped = Clamp(range);
  if (clamped == visible_) return;
  if (record) {
    PushBounded(back_, visible_);
    forward_.clear();
  }
  visible_ = clamped;
  emit visibleRangeChanged(visible_);
  if (record) emit historyChanged();
}

void ViewState::zoomAt(TimeNs anchor, double factor, bool record) {
  if (!(factor > 0) || !std::isfinite(factor)) return;
  const double span = static_cast<double>(visible_.length());
  const double new_span = std::max(span * factor, static_cast<double>(kMinimumSpan));
  // The anchor keeps its fraction of the window, i.e. its screen position.
  const double fraction = (static_cast<double>(anchor - visible_.t0)) / span;
  const double t0 = static_cast<double>(anchor) - fraction * new_span;
  TimeRange range;
  range.t0 = static_cast<TimeNs>(std::llround(t0));
  range.t1 = range.t0 + static_cast<TimeNs>(std::llround(new_span));
  setVisibleRange(range, record);
}

void ViewState::pan(TimeNs delta) {
  setVisibleRange({visible_.t0 + delta, visible_.t1 + delta}, false);
}

void ViewState::commitGesture(TimeRange before) {
  if (before == visible_) return;
  PushBounded(back_, before);
  forward_.clear();
  emit historyChanged();
}

void ViewState::fitAll() {
  setVisibleRange(trace_, true);
}

bool ViewState::canZoomBack() const {
  return !back_.empty();
}
bool ViewState::canZoomForward() const {
  return !forward_.empty();
}

void ViewState::zoomBack() {
  if (back_.empty()) return;
  PushBounded(forward_, visible_);
  visible_ = Clamp(back_.back());
  back_.pop_back();
  emit visibleRangeChanged(visible_);
  emit historyChanged();
}

void ViewState::zoomForward() {
  if (forward_.empty()) return;
  PushBounded(back_, visible_);
  visible_ = Clamp(forward_.back());
  forward_.pop_back();
  emit visibleRangeChanged(visible_);
  emit historyChanged();
}

void ViewState::setSelection(std::optional<TimeRange> selection) {
  if (selection && selection->t1 < selection->t0) std::swap(selection->t0, selection->t1);
  if (selection == selection_) return;
  selection_ = selection;
  emit selectionChanged();
}

void ViewState::setHoverTime(std::optional<TimeNs> time) {
  if (time == hover_) return;
  hover_ = time;
  emit hoverTimeChanged();
}

}  // namespace zb::gui
