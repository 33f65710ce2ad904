// SPDX-License-Identifier: Apache-2.0
// Reading the ranks' progress records (zb-progress/1 and /2, docs/formats.md §7): the small file
// each rank of a job run under zbkit keeps in place, `<dir>/rank<R>.progress`, with its program
// (the ordered ops it runs), where it is in it and (version 2) the last ops it ended, with times.
// The writer is zbkit.progress (Python); readers are `zb doctor` and the stall watch of `zb replay`
// / `zb profile` (docs/stalls.md).
#ifndef ZBKIT_DOCTOR_PROGRESS_H_
#define ZBKIT_DOCTOR_PROGRESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "zbkit/schemas/op_text.h"
#include "zbkit/schemas/status.h"

namespace zb::doctor {

// An op of a rank's program, in the one vocabulary (zbkit/schemas/op_text.h): zbkit's F/B/W/BW,
// and torch's runtime's transfers, unshards, reshards and gradient reductions. In words:
// FormatAction(op.kind, op.stage, op.microbatch), "F stage 1 mb 5", "SEND_B stage 2 mb 0".
struct ProgramOp {
  ActionKind kind = ActionKind::kOther;
  int stage = -1;
  int microbatch = -1;
};
// FormatAction of a program op.
std::string OpText(const ProgramOp& op);

enum class Phase : int32_t {
  kStarting = 0,       // a step began, no op yet (or the record was just made)
  kInOp = 1,           // op_index began, not ended
  kOpDone = 2,         // op_index ended, the next not begun
  kIterationDone = 3,  // the step returned: the rank is outside the pipeline
  kExited = 4,         // the process left normally
  kRaised = 5,         // the step raised (exit_message says what)
};
const char* PhaseName(Phase phase);

// Who wrote the program: zbkit's executor (F/B/W/BW, receives inside the op that needs them) or
// torch's runtime through the shim (its actions, sends and receives their own ops).
enum class ProgramSource : int32_t { kExecutor = 0, kTorchRuntime = 1 };

// One op the rank ran: a history entry of a version-2 record.
struct OpRun {
  int64_t iteration = -1;
  int64_t op_index = -1;  // into the program
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

struct RankProgress {
  std::string path;
  int version = 1;  // of the record: 2 keeps a history
  int rank = 0;
  int world = 0;
  int pid = 0;
  int64_t started_ns = 0;
  std::string job;
  std::string host;
  int microbatches = 0;
  int stages = 0;       // of the whole pipeline
  int local_world = 0;  // ranks on the record's host (torchrun's LOCAL_WORLD_SIZE)
  ProgramSource source = ProgramSource::kExecutor;
  std::vector<ProgramOp> program;
  // The state, from the newer whole slot.
  uint64_t seq = 0;
  int64_t iteration = -1;
  int64_t op_index = -1;
  Phase phase = Phase::kStarting;
  int64_t since_ns = 0;  // when the phase began (the last write)
  int64_t ops_done = 0;
  std::string exit_message;  // for kRaised
  // The last ops it ended (up to the writer's history size), oldest first; half-written entries
  // left out. Empty for a version-1 record. The op it is in is the state's (op_index, since_ns).
  std::vector<OpRun> history;
};

// Whether the rank is inside its op `op_index` now: begun and not ended (running, or its step
// raised in it). The diagnosis and the history timeline end a rank's history with that op.
bool InsideOp(const RankProgress& rank);

// One rank's file. InvalidInput (naming the file and what is wrong) for a file that is not a
// whole zb-progress record: wrong magic or version, too short, a program or history that does not
// fit, no consistent state slot.
Expected<RankProgress> ReadProgressFile(const std::string& path);

// Every rank<R>.progress of a directory (or of several: a multi-host job keeps one per host), by
// rank. Files that cannot be read, ranks missing from 0..world-1, a rank in two directories, and
// files of another job (its id differs from the most common one) are left out and named in
// `problems`, one line each. NotFound when a directory does not exist or none holds a readable
// record.
struct RunProgress {
  std::string directory;  // the directories, joined by ", "
  std::string job;
  int world = 0;
  std::vector<RankProgress> ranks;  // by rank, only those read
  std::vector<std::string> problems;
};
Expected<RunProgress> ReadRunProgress(const std::string& directory);
Expected<RunProgress> ReadRunProgress(const std::vector<std::string>& directories);

// What a record's process is doing now, as this machine sees it.
enum class ProcessState {
  kAlive,    // running or sleeping
  kStopped,  // stopped by a signal (SIGSTOP, SIGTSTP) or traced
  kDead,     // gone (or a zombie, or its pid now belongs to a younger process)
  kUnknown,  // on another host
};
const char* ProcessStateName(ProcessState state);
ProcessState ProbeProcess(const RankProgress& rank);

// The epoch time now (CLOCK_REALTIME, the writer's clock).
int64_t NowNs();

}  // namespace zb::doctor

#endif  // ZBKIT_DOCTOR_PROGRESS_H_
