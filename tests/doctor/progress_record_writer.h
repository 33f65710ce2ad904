// SPDX-License-Identifier: Apache-2.0
// Writes zb-progress/1 and /2 records (docs/formats.md §7) for the doctor's tests: the states a
// rank leaves, set field by field. The real writer is zbkit.progress (Python); the Python fault
// suite (adapters/pytorch/tests/library/test_stalls.py) checks that zb doctor reads what it writes.
#ifndef ZBKIT_TESTS_DOCTOR_PROGRESS_RECORD_WRITER_H_
#define ZBKIT_TESTS_DOCTOR_PROGRESS_RECORD_WRITER_H_

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "zbkit/doctor/progress.h"

namespace zb::doctor::testing {

struct RecordSpec {
  int rank = 0;
  int world = 2;
  int pid = 0;
  int64_t started_ns = 0;
  std::string job = "job1";
  std::string host;  // "" = this host
  int microbatches = 4;
  int stages = 2;
  int local_world = 0;  // 0: the world
  int source = 0;
  std::vector<ProgramOp> program;
  uint64_t seq = 5;
  int64_t iteration = 0;
  int64_t op_index = -1;
  Phase phase = Phase::kStarting;
  int64_t since_ns = 0;
  int64_t ops_done = 0;
  std::string exit_message;
  bool tear_newer_slot = false;  // the newer slot's closing sequence number left unwritten
  // Version 2: a history of `history_capacity` entries after the program, `history` written into
  // its first entries in turn (entry i with sequence number 100 + i); `torn_history_entry` gets
  // a closing sequence number that differs.
  int history_capacity = 0;
  std::vector<OpRun> history;
  int torn_history_entry = -1;
};

// Where RecordBytes puts the history: after the program, 64-byte aligned, as zbkit.progress does.
inline size_t HistoryOffset(const RecordSpec& spec) {
  return (1024 + 8 * std::max<size_t>(1, spec.program.size()) + 63) / 64 * 64;
}

template <typename T>
void Put(std::string& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

inline std::string RecordBytes(const RecordSpec& spec) {
  std::string bytes(4096, '\0');
  std::memcpy(bytes.data(), "ZBPROG01", 8);
  Put<uint32_t>(bytes, 8, spec.history_capacity > 0 ? 2 : 1);
  Put<int32_t>(bytes, 12, spec.rank);
  Put<int32_t>(bytes, 16, spec.world);
  Put<int32_t>(bytes, 20, spec.pid);
  Put<int64_t>(bytes, 24, spec.started_ns);
  std::memcpy(bytes.data() + 32, spec.job.data(), std::min<size_t>(spec.job.size(), 31));
  char host[256] = {};
  if (spec.host.empty()) gethostname(host, sizeof(host) - 1);
  const std::string host_name = spec.host.empty() ? std::string(host) : spec.host;
  std::memcpy(bytes.data() + 64, host_name.data(), std::min<size_t>(host_name.size(), 63));
  Put<int32_t>(bytes, 128, static_cast<int32_t>(spec.program.size()));
  Put<int32_t>(bytes, 132, spec.microbatches);
  Put<int32_t>(bytes, 136, spec.source);
  Put<int32_t>(bytes, 140, spec.stages);
  Put<int32_t>(bytes, 144, spec.local_world > 0 ? spec.local_world : spec.world);
  if (spec.history_capacity > 0) {
    Put<int32_t>(bytes, 148, spec.history_capacity);
    Put<int32_t>(bytes, 152, static_cast<int32_t>(HistoryOffset(spec)));
    for (size_t i = 0; i < spec.history.size(); ++i) {
      const size_t at = HistoryOffset(spec) + 48 * i;
      const uint64_t seq = 100 + i;
      Put<uint64_t>(bytes, at, seq);
      Put<int64_t>(bytes, at + 8, spec.history[i].iteration);
      Put<int32_t>(bytes, at + 16, static_cast<int32_t>(spec.history[i].op_index));
      Put<int64_t>(bytes, at + 24, spec.history[i].begin_ns);
      Put<int64_t>(bytes, at + 32, spec.history[i].end_ns);
      Put<uint64_t>(bytes, at + 40, static_cast<int>(i) == spec.torn_history_entry ? seq + 1 : seq);
    }
  }
  // The older slot holds the write before (a step starting), the newer one this state.
  auto slot = [&](size_t offset, uint64_t seq, int64_t op, Phase phase, bool torn) {
    Put<uint64_t>(bytes, offset, seq);
    Put<int64_t>(bytes, offset + 8, spec.iteration);
    Put<int64_t>(bytes, offset + 16, op);
    Put<int32_t>(bytes, offset + 24, static_cast<int32_t>(phase));
    Put<int64_t>(bytes, offset + 32, spec.since_ns);
    Put<int64_t>(bytes, offset + 40, spec.ops_done);
    Put<uint64_t>(bytes, offset + 48, torn ? seq + 1 : seq);
  };
  const size_t newer = (spec.seq & 1) ? 320 : 256, older = (spec.seq & 1) ? 256 : 320;
  slot(older, spec.seq - 1, -1, Phase::kStarting, false);
  slot(newer, spec.seq, spec.op_index, spec.phase, spec.tear_newer_slot);
  Put<int32_t>(bytes, 512, spec.phase == Phase::kRaised ? 5 : 0);
  Put<int32_t>(bytes, 516, static_cast<int32_t>(spec.exit_message.size()));
  std::memcpy(bytes.data() + 528, spec.exit_message.data(), spec.exit_message.size());
  for (size_t i = 0; i < spec.program.size(); ++i) {
    const size_t at = 1024 + 8 * i;
    Put<int8_t>(bytes, at, static_cast<int8_t>(spec.program[i].kind));
    Put<int16_t>(bytes, at + 2, static_cast<int16_t>(spec.program[i].stage));
    Put<int32_t>(bytes, at + 4, spec.program[i].microbatch);
  }
  return bytes;
}

inline void WriteRecord(const std::string& directory, const RecordSpec& spec) {
  std::ofstream out(directory + "/rank" + std::to_string(spec.rank) + ".progress",
                    std::ios::binary);
  out << RecordBytes(spec);
}

}  // namespace zb::doctor::testing

#endif  // ZBKIT_TESTS_DOCTOR_PROGRESS_RECORD_WRITER_H_
