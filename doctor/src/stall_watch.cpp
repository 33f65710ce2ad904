// SPDX-License-Identifier: Apache-2.0
#include "zbkit/doctor/stall_watch.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace zb::doctor {
namespace {

// Each line of `text` prefixed with "zb <who>: ".
std::string Prefixed(const std::string& who, const std::string& text) {
  std::istringstream lines(text);
  std::string line, out;
  while (std::getline(lines, line))
    out += "zb " + who + ": " + line + "\n";
  return out;
}

// Keeps the diagnosis beside the records (diagnosis.json, zb-diagnosis/1), written whole: the
// job's processes may be gone when someone looks, and with them what made it.
void KeepDiagnosis(const std::string& directory, const Diagnosis& d) {
  const std::string path = directory + "/diagnosis.json";
  const std::string staging = path + ".tmp";
  {
    std::ofstream out(staging);
    out << DiagnosisJson(d);
    if (!out) return;
  }
  std::error_code error;
  std::filesystem::rename(staging, path, error);
}

}  // namespace

Expected<OnStall> ParseOnStall(const std::string& text) {
  if (text == "report") return OnStall::kReport;
  if (text == "kill") return OnStall::kKill;
  return UsageError("--on-stall: \"" + text + "\" is not one of report, kill");
}

bool StallWatch::Check(std::ostream& err, int64_t now_ns) {
  if (options_.timeout_s <= 0 || ended_) return false;
  auto run = ReadRunProgress(options_.directory);
  if (!run.ok()) return false;  // no rank has reached its first step yet
  DiagnoseOptions diagnose;
  diagnose.now_ns = now_ns;
  diagnose.stall_timeout_s = options_.timeout_s;
  const Diagnosis d = Diagnose(*run, diagnose);
  const bool stalled =
      d.state == "stalled" || (d.state == "failed" && d.quiet_s >= options_.timeout_s);
  if (!stalled) return false;
  const std::string key = std::string(CulpritName(d.culprit)) + " " + d.headline.substr(0, 40);
  if (key != last_headline_) {
    last_headline_ = key;
    reported_ = true;
    KeepDiagnosis(options_.directory, d);
    err << Prefixed(options_.who, "no progress for " + std::to_string(static_cast<int>(d.quiet_s)) +
                                      " s (stall timeout " +
                                      std::to_string(static_cast<int>(options_.timeout_s)) +
                                      " s); zb doctor " + options_.directory + " says:")
        << Prefixed(options_.who, FormatDiagnosis(d));
  }
  if (options_.on_stall != OnStall::kKill) return false;
  for (const RankProgress& rank : run->ranks) {
    const ProcessState state = ProbeProcess(rank);
    if (state == ProcessState::kAlive || state == ProcessState::kStopped) kill(rank.pid, SIGKILL);
  }
  // Kept with who ended it: afterwards the ranks read dead, and zb doctor says why they are.
  Diagnosis ended = d;
  ended.ended_by = "zb " + options_.who + " --on-stall kill";
  KeepDiagnosis(options_.directory, ended);
  err << Prefixed(options_.who,
                  "ending the job (--on-stall kill): its ranks are SIGKILLed, so the launcher's "
                  "report of them (torchrun: 'Signal 9 (SIGKILL) received', a traceback) that "
                  "follows is this, not another failure");
  ended_ = true;
  return true;
}

void StallWatch::AfterFailure(std::ostream& err, int64_t now_ns) {
  if (reported_) return;  // the live diagnosis said it already
  auto run = ReadRunProgress(options_.directory);
  if (!run.ok()) return;
  DiagnoseOptions diagnose;
  diagnose.now_ns = now_ns;
  diagnose.stall_timeout_s = options_.timeout_s > 0 ? options_.timeout_s : 30;
  const Diagnosis d = Diagnose(*run, diagnose);
  KeepDiagnosis(options_.directory, d);
  err << Prefixed(options_.who, "the job failed; zb doctor " + options_.directory + " says:")
      << Prefixed(options_.who, FormatDiagnosis(d));
}

}  // namespace zb::doctor
