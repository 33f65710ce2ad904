// SPDX-License-Identifier: Apache-2.0
#include "zbkit/cli/stall_supervision.h"

#include <filesystem>

#include "zbkit/cli/output.h"
#include "zbkit/doctor/progress.h"

namespace zb::cli {

namespace fs = std::filesystem;

void AddStallOptions(po::options_description& options) {
  options.add_options()("run-dir", po::value<std::string>(),
                        "where each rank keeps its progress record for zb doctor (default: a "
                        "fresh directory under $TMPDIR, kept only when the job stalls or fails)")(
      "stall-timeout", po::value<double>()->default_value(30.0),
      "seconds without progress, ranks inside a step, before the job is diagnosed as stalled "
      "(0: no live watch)")("on-stall", po::value<std::string>()->default_value("report"),
                            "report: print the diagnosis and keep waiting; kill: print it and end "
                            "the job");
}

StallSupervision::StallSupervision(bool made, doctor::StallWatchOptions options)
    : made_(made), watch_(std::move(options)) {}

Expected<std::unique_ptr<StallSupervision>> StallSupervision::Start(const std::string& who,
                                                                    const po::variables_map& values,
                                                                    EnvironmentOverrides& env) {
  const double timeout = values["stall-timeout"].as<double>();
  if (!(timeout >= 0)) return UsageError("--stall-timeout must be >= 0 seconds (0: no watch)");
  auto on_stall = doctor::ParseOnStall(values["on-stall"].as<std::string>());
  if (!on_stall.ok()) return on_stall.status();
  std::string directory;
  bool made = false;
  std::error_code error;
  if (values.count("run-dir")) {
    directory = values["run-dir"].as<std::string>();
    fs::create_directories(directory, error);
    if (error) return IoError("--run-dir " + directory + ": " + error.message());
    // Records of an earlier run in the same directory would mix with this one's.
    for (const auto& entry : fs::directory_iterator(directory, error)) {
      const bool ours =
          entry.path().extension() == ".progress" || entry.path().filename() == "diagnosis.json";
      if (ours) fs::remove(entry.path(), error);
    }
  } else {
    auto temporary = MakeTemporaryDirectory("zbkit-run", "run directory");
    if (!temporary.ok()) return temporary.status();
    directory = *temporary;
    made = true;
  }
  directory = fs::absolute(directory, error).string();
  env.emplace_back("ZBKIT_PROGRESS_DIR", directory);
  // No job id of zb's own: the ranks take torchrun's run id and rendezvous address, the same on
  // every host of one launch (zbkit.progress.job_id), so that every host's records read as one
  // job; this directory's records of an earlier run were removed above.
  doctor::StallWatchOptions options;
  options.who = who;
  options.directory = directory;
  options.timeout_s = timeout;
  options.on_stall = *on_stall;
  return std::unique_ptr<StallSupervision>(new StallSupervision(made, std::move(options)));
}

const ChildWatch* StallSupervision::Watch(std::ostream& err) {
  child_watch_.interval_s = 1.0;
  child_watch_.tick = [this, &err] { return watch_.Check(err, doctor::NowNs()); };
  return &child_watch_;
}

StallSupervision::~StallSupervision() {
  std::error_code error;
  if (made_ && !finished_) fs::remove_all(watch_.options().directory, error);
}

void StallSupervision::Finish(int exit_code, std::ostream& err) {
  finished_ = true;
  std::error_code error;
  bool has_records = false;
  const std::string& directory = watch_.options().directory;
  for (const auto& entry : fs::directory_iterator(directory, error))
    has_records = has_records || entry.path().extension() == ".progress";
  const bool keep = has_records && (exit_code != 0 || watch_.stalled());
  if (keep) {
    if (exit_code != 0) watch_.AfterFailure(err, doctor::NowNs());
    err << "zb " << watch_.options().who << ": the ranks' progress records are in " << directory
        << " (zb doctor " << directory << ")\n";
  } else if (made_) {
    // Nothing to diagnose: a job that went well, or one with no rank under zbkit.
    fs::remove_all(watch_.options().directory, error);
  }
}

}  // namespace zb::cli
