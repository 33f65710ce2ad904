// SPDX-License-Identifier: Apache-2.0
// The diagnosis as a person reads it (FormatDiagnosis and its parts); the diagnosis itself is
// diagnosis.cpp, its JSON diagnosis_json.cpp.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "zbkit/doctor/diagnosis.h"
#include "zbkit/schemas/time_text.h"

namespace zb::doctor {

std::string RecentOpsText(const RankFinding& f, size_t shown) {
  std::vector<const RecentOp*> ended;
  for (const RecentOp& op : f.recent) {
    if (op.ms >= 0) ended.push_back(&op);
  }
  if (ended.empty() || shown == 0) return "";
  std::string text;
  const size_t first = ended.size() > shown ? ended.size() - shown : 0;
  for (size_t i = first; i < ended.size(); ++i) {
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.1f ms", ended[i]->ms);
    text += (i == first ? "" : ", ") + ended[i]->op + " " + ms;
  }
  const RecentOp& last = *ended.back();
  return text + "; the last ended " + FormatSeconds(std::max(0.0, last.began_s - last.ms / 1000)) +
         " ago";
}

std::string FormatDiagnosis(const Diagnosis& d) {
  std::string text =
      d.directory + ": " + std::to_string(d.world) + " ranks (job " + d.job + "): " + d.state;
  if (d.state == "stalled" || d.state == "failed") {
    text += ", no progress for " + FormatSeconds(d.quiet_s);
  }
  text += "\n";
  if (!d.ended_by.empty()) {
    text += d.ended_by +
            " ended this job at the stall; what it found then, while the ranks were "
            "there to probe:\n";
  }
  if (!d.headline.empty()) {
    // A healthy run has no culprit to name.
    text += (d.culprit == Culprit::kFinished ? "no culprit: " : "culprit: ") + d.headline + "\n";
  }
  for (const std::string& chain : d.chain)
    text += "chain: " + chain + "\n";
  if (!d.advice.empty()) text += "what to do: " + d.advice + "\n";
  for (const RankFinding& f : d.ranks) {
    text += "  rank " + std::to_string(f.rank) + " (pid " + std::to_string(f.pid) + ", " +
            ProcessStateName(f.process) + "): " + PhaseName(f.phase);
    if (!f.op.empty()) text += " " + f.op + " (op " + std::to_string(f.op_index) + ")";
    text += ", step " + std::to_string(f.iteration) + ", for " + FormatSeconds(f.for_s);
    if (f.waits_for >= 0) {
      text += "; waits " + f.message + " from rank " + std::to_string(f.waits_for);
      text += f.producer.empty() ? " (no op of its program sends it)" : " (its " + f.producer + ")";
    }
    text += "\n";
    // What the culprit and the ranks waiting for it did last (every rank's is in --json and
    // --trace-out; a 64-rank text stays one line per rank elsewhere).
    const bool near_culprit =
        d.culprit_rank >= 0 && (f.rank == d.culprit_rank || f.waits_for == d.culprit_rank);
    if (const std::string before = near_culprit ? RecentOpsText(f) : ""; !before.empty()) {
      text += "    before: " + before + "\n";
    }
  }
  text += FormatFlightRecorder(d);
  for (const std::string& problem : d.problems)
    text += "problem: " + problem + "\n";
  return text;
}

std::string FormatFlightRecorder(const Diagnosis& d) {
  std::string text;
  for (const std::string& line : d.flight_recorder)
    text += "flight recorder: " + line + "\n";
  return text;
}

}  // namespace zb::doctor
