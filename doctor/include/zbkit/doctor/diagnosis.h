// SPDX-License-Identifier: Apache-2.0
// The diagnosis of a job that stopped making progress: from the ranks' progress records (their
// programs and where each is) the wait-for graph, the culprit (a rank that raised, died, is
// frozen or slow; two ranks whose orders cross; a peer whose program never sends what another
// waits for), the chain of waits that leads to it, and what to do (docs/stalls.md).
#ifndef ZBKIT_DOCTOR_DIAGNOSIS_H_
#define ZBKIT_DOCTOR_DIAGNOSIS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "zbkit/doctor/progress.h"

namespace zb::doctor {

enum class Culprit {
  kNone,             // progressing, or nothing to blame
  kRaised,           // a rank's step raised an exception
  kDied,             // a rank's process is gone without exiting normally
  kFrozen,           // a rank's process is stopped (SIGSTOP, a debugger)
  kDeadlock,         // ranks wait for each other in a cycle
  kUnrunnable,       // a rank waits for a message no op of its peer's program sends
  kSlow,             // a rank others wait for is inside an op (a straggler, or hung in it)
  kOutsidePipeline,  // a rank others wait for is between steps, or no rank is in an op
  kNoRecord,         // a rank others wait for left no progress record (it never got to a step)
  kFinished,         // every rank exited normally
};
const char* CulpritName(Culprit culprit);

// An op a rank ran before the diagnosis (its record's history), as a person reads it.
struct RecentOp {
  std::string op;  // OpText
  int64_t iteration = -1;
  int64_t op_index = -1;
  double began_s = 0;  // seconds before the diagnosis
  double ms = -1;      // how long it took; -1: not ended (running, or where the rank stopped)
};

// What one rank is doing, as the diagnosis reads it.
struct RankFinding {
  int rank = 0;
  int pid = 0;
  std::string host;
  ProcessState process = ProcessState::kUnknown;
  Phase phase = Phase::kStarting;
  int64_t iteration = -1;
  int64_t op_index = -1;
  std::string op;                // OpText of the current op, "" outside ops
  double for_s = 0;              // seconds since the rank's last mark
  int waits_for = -1;            // the peer whose message it waits for, -1 if none
  std::string message;           // "RECV_F stage 2 mb 5": what it waits for
  std::string producer;          // the peer's op that sends it, "" when its program has none
  int producer_index = -1;       // its index in the peer's program
  std::vector<RecentOp> recent;  // its last ops, oldest first (none from a version-1 record)
};

struct Diagnosis {
  std::string directory;
  std::string job;
  int world = 0;
  std::string state;   // "progressing", "stalled", "failed", "finished"
  double quiet_s = 0;  // seconds since the last mark of any rank
  Culprit culprit = Culprit::kNone;
  int culprit_rank = -1;
  std::string headline;            // one line: the culprit
  std::vector<std::string> chain;  // the waits that lead to it, first waiter first
  std::string advice;
  std::vector<RankFinding> ranks;
  std::vector<std::string> problems;  // the records that were missing or unreadable
  // Who ended the job at this diagnosis ("zb replay --on-stall kill"), "" when no one did: the
  // ranks it SIGKILLed read dead afterwards, and this diagnosis says why they were ended.
  std::string ended_by;
  // What torch's flight-recorder dumps say, when zb doctor was given them (flight_recorder.h).
  std::vector<std::string> flight_recorder;
};

struct DiagnoseOptions {
  int64_t now_ns = 0;
  // A job whose ranks are inside a step and none of which marked anything for this long is
  // stalled.
  double stall_timeout_s = 30;
  std::function<ProcessState(const RankProgress&)> probe = ProbeProcess;
};

Diagnosis Diagnose(const RunProgress& run, const DiagnoseOptions& options);

// The last ops a rank ended, as one line for a person: "F stage 1 mb 0 12.0 ms, BW stage 1 mb 0
// 25.0 ms; the last ended 40.9 s ago" (the last `shown` of them); "" when its record kept none.
std::string RecentOpsText(const RankFinding& rank, size_t shown = 6);
// A few lines for a person: state, culprit, chain, advice, then one line per rank, and for the
// culprit and the ranks that wait for it one more with the ops they ended last (RecentOpsText).
std::string FormatDiagnosis(const Diagnosis& diagnosis);
// Its flight-recorder lines alone ("flight recorder: ..."), for a job without zbkit's records.
std::string FormatFlightRecorder(const Diagnosis& diagnosis);
// zb-diagnosis/1 (docs/formats.md §7).
std::string DiagnosisJson(const Diagnosis& diagnosis);
// Reads it back (what zb replay kept as <run dir>/diagnosis.json when the job stalled, while its
// processes were there to probe). InvalidInput naming the file and field when it is not one.
Expected<Diagnosis> ReadDiagnosisJson(const std::string& path);

}  // namespace zb::doctor

#endif  // ZBKIT_DOCTOR_DIAGNOSIS_H_
