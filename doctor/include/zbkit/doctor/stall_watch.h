// SPDX-License-Identifier: Apache-2.0
// The live stall watch of `zb replay` and `zb profile` (docs/stalls.md §4): while the job runs,
// read the ranks' progress records in the run directory; when the ranks are inside a step and
// none marked anything for the stall timeout, print the diagnosis, and end the job if asked.
// After a job that failed, the same diagnosis post mortem.
#ifndef ZBKIT_DOCTOR_STALL_WATCH_H_
#define ZBKIT_DOCTOR_STALL_WATCH_H_

#include <ostream>
#include <string>

#include "zbkit/doctor/diagnosis.h"
#include "zbkit/schemas/status.h"

namespace zb::doctor {

enum class OnStall { kReport, kKill };
// "report" or "kill"; UsageError otherwise.
Expected<OnStall> ParseOnStall(const std::string& text);

struct StallWatchOptions {
  std::string who;        // "replay", for the message prefix "zb replay: "
  std::string directory;  // where the ranks keep their records
  double timeout_s = 30;  // 0: no live watch
  OnStall on_stall = OnStall::kReport;
};

class StallWatch {
 public:
  explicit StallWatch(StallWatchOptions options) : options_(std::move(options)) {}

  // One look at the records now. Prints the diagnosis to `err` when the job is stalled (once per
  // culprit: a changed diagnosis is printed again) and keeps it as <directory>/diagnosis.json.
  // Returns true when the job must end
  // (--on-stall kill): its ranks on this host are then SIGKILLed already.
  bool Check(std::ostream& err, int64_t now_ns);

  // After the job ended with `exit_code` != 0: the diagnosis of what the records show, if any
  // (printed, and kept as diagnosis.json).
  void AfterFailure(std::ostream& err, int64_t now_ns);

  const StallWatchOptions& options() const { return options_; }
  bool stalled() const { return reported_; }
  bool ended_job() const { return ended_; }

 private:
  StallWatchOptions options_;
  std::string last_headline_;
  bool reported_ = false;
  bool ended_ = false;
};

}  // namespace zb::doctor

#endif  // ZBKIT_DOCTOR_STALL_WATCH_H_
