// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>

namespace zb::cli {

ProgressBar::ProgressBar(std::ostream& err, std::string label)
    : err_(err), label_(std::move(label)), active_(&err == &std::cerr && isatty(2) == 1) {}

void ProgressBar::Show(double done, const std::string& detail) {
  if (!active_) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(std::clamp(done, 0.0, 1.0) * kWidth);
  const int percent = static_cast<int>(std::clamp(done, 0.0, 1.0) * 100);
  err_ << "\r\033[K" << label_ << " [" << std::string(filled, '#')
       << std::string(kWidth - filled, '.') << "] " << percent << "% " << detail << std::flush;
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (drawn_) err_ << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace zb::cli
