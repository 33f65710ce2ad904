// SPDX-License-Identifier: Apache-2.0
// What `zb replay` and `zb profile` share to watch their job for stalls (docs/stalls.md §4): the
// options (--run-dir, --stall-timeout, --on-stall), the run directory and the environment that
// turns the ranks' progress records on, the watch while the job runs, and the post-mortem after
// a job that failed.
#ifndef ZBKIT_CLI_STALL_SUPERVISION_H_
#define ZBKIT_CLI_STALL_SUPERVISION_H_

#include <memory>
#include <ostream>
#include <string>

#include "zbkit/cli/child_process.h"
#include "zbkit/cli/options.h"
#include "zbkit/doctor/stall_watch.h"

namespace zb::cli {

void AddStallOptions(po::options_description& options);

class StallSupervision {
 public:
  // Reads the options; makes the run directory (--run-dir, else a fresh one under $TMPDIR) and
  // adds ZBKIT_PROGRESS_DIR to `env`.
  static Expected<std::unique_ptr<StallSupervision>> Start(const std::string& who,
                                                           const po::variables_map& values,
                                                           EnvironmentOverrides& env);
  // The watch to hand RunChildCommand; its messages go to `err`.
  const ChildWatch* Watch(std::ostream& err);
  // After the job: the post-mortem when it failed; a run directory zb made is removed after a
  // job that succeeded without a stall, kept (and named) otherwise.
  void Finish(int exit_code, std::ostream& err);
  // A run directory zb made is removed if the job never ran (an error before it).
  ~StallSupervision();

 private:
  StallSupervision(bool made, doctor::StallWatchOptions options);
  bool made_ = false;
  bool finished_ = false;
  doctor::StallWatch watch_;
  ChildWatch child_watch_;
};

}  // namespace zb::cli

#endif  // ZBKIT_CLI_STALL_SUPERVISION_H_
