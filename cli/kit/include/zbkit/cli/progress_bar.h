// SPDX-License-Identifier: Apache-2.0
// A one-line progress bar on a terminal, redrawn in place: "search [#####.....]  50% best ...".
// Inactive (draws nothing) unless the stream is the process's standard error and that is a
// terminal, so piped output, logs and tests never see control characters.
#ifndef ZBKIT_CLI_PROGRESS_BAR_H_
#define ZBKIT_CLI_PROGRESS_BAR_H_

#include <ostream>
#include <string>

namespace zb::cli {

class ProgressBar {
 public:
  ProgressBar(std::ostream& err, std::string label);
  bool active() const { return active_; }
  // `done` in 0..1; `detail` follows the percentage.
  void Show(double done, const std::string& detail);
  // Clears the line, if anything was drawn.
  void Finish();

 private:
  std::ostream& err_;
  std::string label_;
  bool active_ = false;
  bool drawn_ = false;
};

}  // namespace zb::cli

#endif  // ZBKIT_CLI_PROGRESS_BAR_H_
