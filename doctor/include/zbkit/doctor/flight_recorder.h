// SPDX-License-Identifier: Apache-2.0
// torch's flight recorder dumps, read beside zbkit's progress records (docs/stalls.md §4). A job
// with TORCH_FR_BUFFER_SIZE set keeps, per rank, its last collectives and point-to-point ops;
// NCCL jobs dump them on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT) to TORCH_FR_DUMP_TEMP_FILE<rank>
// (default /tmp/nccl_trace_rank_<rank>), a Python pickle. zb doctor reads those files and says,
// per process group, which rank never joined the collective the others wait in, and which ops a
// rank started and never finished: what zbkit's record does not see (data-parallel all-reduces,
// the optimizer's collectives, NCCL sends and receives).
#ifndef ZBKIT_DOCTOR_FLIGHT_RECORDER_H_
#define ZBKIT_DOCTOR_FLIGHT_RECORDER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "zbkit/schemas/status.h"

namespace zb::doctor {

struct FlightRecorderEntry {
  std::string group;  // the process group's id and name ("0 default_pg")
  int64_t collective_seq = 0;
  int64_t p2p_seq = 0;
  bool p2p = false;
  std::string name;   // "nccl:all_reduce", "gloo:send"
  std::string state;  // "scheduled", "started", "completed"
  bool retired = false;
};

struct FlightRecorderGroupStatus {
  int64_t last_enqueued = -1;
  int64_t last_started = -1;
  int64_t last_completed = -1;
};

struct FlightRecorderDump {
  int rank = 0;  // from the file name's last digits, as torch names the dumps
  std::string path;
  std::string version;
  std::vector<FlightRecorderEntry> entries;
  std::map<std::string, FlightRecorderGroupStatus> groups;  // by process group id
};

// Every dump of `where`: a directory (each file whose name ends in a rank number) or a prefix
// (`/tmp/nccl_trace_rank_`: every `<prefix><rank>`). InvalidInput naming the file and what is
// wrong for one that is not a flight-recorder pickle; NotFound when there is none.
Expected<std::vector<FlightRecorderDump>> ReadFlightRecorderDumps(const std::string& where);

// What the dumps say, one line each: per process group, the ranks that never enqueued the
// collective the others have (and whether those wait in it), and per rank the ops it started and
// did not complete. `culprit_rank` is the first rank that never joined (-1 if none).
std::vector<std::string> AnalyzeFlightRecorder(const std::vector<FlightRecorderDump>& dumps,
                                               int& culprit_rank);

}  // namespace zb::doctor

#endif  // ZBKIT_DOCTOR_FLIGHT_RECORDER_H_
