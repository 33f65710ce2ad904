// SPDX-License-Identifier: Apache-2.0
#include "zbkit/doctor/progress.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>
#include <utility>

namespace zb::doctor {
namespace {

namespace fs = std::filesystem;

// The layout zbkit.progress writes (docs/formats.md §7); little-endian, as every host zbkit
// runs on.
constexpr char kMagic[8] = {'Z', 'B', 'P', 'R', 'O', 'G', '0', '1'};
constexpr uint32_t kOldestVersion = 1;  // no history
constexpr uint32_t kVersion = 2;        // the history's size at 148, its offset at 152
constexpr size_t kHeaderSize = 156;
constexpr size_t kSlotOffsets[2] = {256, 320};
constexpr size_t kSlotSize = 56;
constexpr size_t kExitOffset = 512;
constexpr size_t kExitMessageSize = 496;
constexpr size_t kProgramOffset = 1024;
constexpr size_t kOpSize = 8;
constexpr size_t kHistoryEntrySize = 48;
constexpr int32_t kMaxHistory = 4096;

template <typename T>
T Load(const std::string& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

std::string CString(const std::string& bytes, size_t offset, size_t size) {
  const std::string field = bytes.substr(offset, size);
  return field.substr(0, field.find('\0'));
}

struct Slot {
  uint64_t seq = 0;
  int64_t iteration = -1, op_index = -1;
  int32_t phase = 0;
  int64_t since_ns = 0, ops_done = 0;
  bool whole = false;
};

Slot ReadSlot(const std::string& bytes, size_t offset) {
  Slot slot;
  slot.seq = Load<uint64_t>(bytes, offset);
  slot.iteration = Load<int64_t>(bytes, offset + 8);
  slot.op_index = Load<int64_t>(bytes, offset + 16);
  slot.phase = Load<int32_t>(bytes, offset + 24);
  slot.since_ns = Load<int64_t>(bytes, offset + 32);
  slot.ops_done = Load<int64_t>(bytes, offset + 40);
  slot.whole = slot.seq > 0 && slot.seq == Load<uint64_t>(bytes, offset + 48);
  return slot;
}

// The whole history entries of ended ops, oldest first (a writer mid-entry leaves that one out).
std::vector<OpRun> ReadHistory(const std::string& bytes, size_t offset, int32_t entries,
                               int32_t program_length) {
  std::vector<std::pair<uint64_t, OpRun>> whole;
  for (int32_t i = 0; i < entries; ++i) {
    const size_t at = offset + kHistoryEntrySize * static_cast<size_t>(i);
    const auto seq = Load<uint64_t>(bytes, at);
    if (seq == 0 || seq != Load<uint64_t>(bytes, at + 40)) continue;
    OpRun run{Load<int64_t>(bytes, at + 8), Load<int32_t>(bytes, at + 16),
              Load<int64_t>(bytes, at + 24), Load<int64_t>(bytes, at + 32)};
    // An entry a writer made has an op of the program and begin <= end, both after the epoch
    // (anything else is not one: left out, and no time difference of it can overflow).
    if (run.op_index < 0 || run.op_index >= program_length || run.begin_ns <= 0 ||
        run.end_ns < run.begin_ns) {
      continue;
    }
    whole.emplace_back(seq, run);
  }
  // Begin order (the writer's order: ops of one rank run one after another).
  std::sort(whole.begin(), whole.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.begin_ns, a.first) < std::tie(b.second.begin_ns, b.first);
  });
  std::vector<OpRun> history;
  for (const auto& [seq, run] : whole)
    history.push_back(run);
  return history;
}

Expected<std::string> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open: " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return IoError(path + ": read failed");
  return bytes;
}

Expected<RankProgress> Decode(const std::string& path, const std::string& bytes) {
  auto bad = [&](const std::string& what) { return InvalidInput(path + ": " + what); };
  if (bytes.size() < kProgramOffset) {
    return bad("not a zbkit progress record (" + std::to_string(bytes.size()) +
               " bytes, at least " + std::to_string(kProgramOffset) + " expected)");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return bad("not a zbkit progress record (no ZBPROG01 magic)");
  }
  const auto version = Load<uint32_t>(bytes, 8);
  if (version < kOldestVersion || version > kVersion) {
    return bad("progress record version " + std::to_string(version) + ", this zb reads " +
               std::to_string(kOldestVersion) + " to " + std::to_string(kVersion));
  }
  static_assert(kHeaderSize <= kSlotOffsets[0]);
  RankProgress rank;
  rank.path = path;
  rank.version = static_cast<int>(version);
  rank.rank = Load<int32_t>(bytes, 12);
  rank.world = Load<int32_t>(bytes, 16);
  rank.pid = Load<int32_t>(bytes, 20);
  rank.started_ns = Load<int64_t>(bytes, 24);
  rank.job = CString(bytes, 32, 32);
  rank.host = CString(bytes, 64, 64);
  const int32_t length = Load<int32_t>(bytes, 128);
  rank.microbatches = Load<int32_t>(bytes, 132);
  const int32_t source = Load<int32_t>(bytes, 136);
  rank.stages = Load<int32_t>(bytes, 140);
  rank.local_world = Load<int32_t>(bytes, 144);
  if (rank.world < 1 || rank.rank < 0 || rank.rank >= rank.world) {
    return bad("rank " + std::to_string(rank.rank) + " of world " + std::to_string(rank.world));
  }
  if (length < 0 || kProgramOffset + kOpSize * static_cast<size_t>(length) > bytes.size()) {
    return bad("a program of " + std::to_string(length) + " ops does not fit in " +
               std::to_string(bytes.size()) + " bytes (torn or truncated)");
  }
  if (source != 0 && source != 1) return bad("unknown program source " + std::to_string(source));
  rank.source = static_cast<ProgramSource>(source);
  for (int32_t i = 0; i < length; ++i) {
    const size_t at = kProgramOffset + kOpSize * static_cast<size_t>(i);
    const auto kind = Load<int8_t>(bytes, at);
    if (kind < 0 || kind >= kNumActionKinds) {
      return bad("op " + std::to_string(i) + ": unknown kind " + std::to_string(kind));
    }
    rank.program.push_back({static_cast<ActionKind>(kind), Load<int16_t>(bytes, at + 2),
                            Load<int32_t>(bytes, at + 4)});
  }
  Slot best;
  for (size_t offset : kSlotOffsets) {
    const Slot slot = ReadSlot(bytes, offset);
    if (slot.whole && slot.seq > best.seq) best = slot;
  }
  if (!best.whole) return bad("no whole state slot (torn while being written, or zeroed)");
  if (best.phase < 0 || best.phase > static_cast<int32_t>(Phase::kRaised)) {
    return bad("unknown phase " + std::to_string(best.phase));
  }
  if (best.op_index >= length) {
    return bad("op " + std::to_string(best.op_index) + " of a " + std::to_string(length) +
               "-op program");
  }
  rank.seq = best.seq;
  rank.iteration = best.iteration;
  rank.op_index = best.op_index;
  rank.phase = static_cast<Phase>(best.phase);
  rank.since_ns = best.since_ns;
  rank.ops_done = best.ops_done;
  if (version >= 2) {
    const int32_t entries = Load<int32_t>(bytes, 148);
    const int32_t offset = Load<int32_t>(bytes, 152);
    const size_t program_end = kProgramOffset + kOpSize * static_cast<size_t>(length);
    if (entries < 0 || entries > kMaxHistory || offset < 0 ||
        static_cast<size_t>(offset) < program_end ||
        static_cast<size_t>(offset) + kHistoryEntrySize * static_cast<size_t>(entries) >
            bytes.size()) {
      return bad("a history of " + std::to_string(entries) + " entries at byte " +
                 std::to_string(offset) + " does not fit after the program in " +
                 std::to_string(bytes.size()) + " bytes");
    }
    rank.history = ReadHistory(bytes, static_cast<size_t>(offset), entries, length);
  }
  const int32_t message_length = std::clamp<int32_t>(Load<int32_t>(bytes, kExitOffset + 4), 0,
                                                     static_cast<int32_t>(kExitMessageSize));
  rank.exit_message = bytes.substr(kExitOffset + 16, static_cast<size_t>(message_length));
  return rank;
}

std::string LocalHost() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// The state letter and start time (seconds since boot x clock ticks) of /proc/<pid>/stat.
bool ReadProcStat(int pid, char& state, uint64_t& start_ticks) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return false;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  // Fields after the command: 3 state ... 22 starttime.
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 3) state = field.empty() ? '?' : field[0];
    if (index == 22) start_ticks = std::stoull(field);
  }
  return true;
}

int64_t BootTimeNs() {
  std::ifstream in("/proc/stat");
  std::string key;
  int64_t value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value * 1000000000LL;
  }
  return 0;
}

}  // namespace

bool InsideOp(const RankProgress& rank) {
  return rank.op_index >= 0 && (rank.phase == Phase::kInOp || rank.phase == Phase::kRaised);
}

std::string OpText(const ProgramOp& op) {
  return FormatAction(op.kind, op.stage, op.microbatch);
}

const char* PhaseName(Phase phase) {
  static const char* const kNames[] = {"starting",      "in-op",  "op-done",
                                       "between-steps", "exited", "raised"};
  return kNames[static_cast<int>(phase)];
}

const char* ProcessStateName(ProcessState state) {
  switch (state) {
    case ProcessState::kAlive:
      return "alive";
    case ProcessState::kStopped:
      return "stopped";
    case ProcessState::kDead:
      return "dead";
    case ProcessState::kUnknown:
      break;
  }
  return "unknown";
}

Expected<RankProgress> ReadProgressFile(const std::string& path) {
  // A reader may catch the writer between the two ends of a slot; the other slot is whole then,
  // but read again once in case both were caught (a rank writing very fast).
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto bytes = ReadBytes(path);
    if (!bytes.ok()) return bytes.status();
    auto rank = Decode(path, *bytes);
    if (rank.ok()) return rank;
    last = rank.status();
  }
  return last;
}

namespace {

// The records of one directory, by file; what cannot be read goes to `problems`.
Status ReadDirectory(const std::string& directory, std::vector<RankProgress>& read,
                     std::vector<std::string>& problems) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) {
    return NotFound(directory + ": no such run directory");
  }
  static const std::regex kName(R"(rank(\d+)\.progress)");
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, kName)) continue;
    auto rank = ReadProgressFile(entry.path().string());
    if (!rank.ok()) {
      problems.push_back(rank.status().message());
    } else if (std::to_string(rank->rank) != match[1].str()) {
      problems.push_back(entry.path().string() + ": holds rank " + std::to_string(rank->rank) +
                         ", left out");
    } else {
      read.push_back(std::move(*rank));
    }
  }
  return Status::Ok();
}

// "no record of ranks 1, 3 of 4 (...)" for the ranks of 0..world-1 that `run` lacks.
void NameMissingRanks(RunProgress& run) {
  std::vector<int> missing;
  for (int r = 0, i = 0; r < run.world; ++r) {
    if (i < static_cast<int>(run.ranks.size()) && run.ranks[static_cast<size_t>(i)].rank == r) {
      ++i;
    } else {
      missing.push_back(r);
    }
  }
  if (missing.empty()) return;
  std::string list;
  for (int r : missing)
    list += (list.empty() ? "" : ", ") + std::to_string(r);
  const bool spread = std::any_of(run.ranks.begin(), run.ranks.end(), [&](const RankProgress& r) {
    return r.local_world > 0 && r.local_world < run.world;
  });
  run.problems.push_back(
      run.directory + ": no record of rank" + (missing.size() > 1 ? "s " : " ") + list + " of " +
      std::to_string(run.world) +
      (spread ? " (the job spans hosts, each keeping its own ranks' records: give zb doctor every "
                "host's run directory)"
              : " (never started, or its directory is on another host)"));
}

}  // namespace

Expected<RunProgress> ReadRunProgress(const std::string& directory) {
  return ReadRunProgress(std::vector<std::string>{directory});
}

Expected<RunProgress> ReadRunProgress(const std::vector<std::string>& directories) {
  RunProgress run;
  std::vector<RankProgress> read;
  for (const std::string& directory : directories) {
    run.directory += (run.directory.empty() ? "" : ", ") + directory;
    Status status = ReadDirectory(directory, read, run.problems);
    if (!status.ok()) return status;
  }
  if (read.empty()) {
    std::string message = run.directory + ": no readable rank<R>.progress record";
    if (!run.problems.empty()) message += " (" + run.problems.front() + ")";
    return NotFound(message);
  }
  std::map<std::string, int> jobs;
  for (const RankProgress& rank : read)
    ++jobs[rank.job];
  run.job = std::max_element(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) {
              return a.second < b.second;
            })->first;
  std::map<int, std::string> seen;  // rank -> its file
  for (RankProgress& rank : read) {
    if (rank.job != run.job) {
      run.problems.push_back(rank.path + ": from another job (" + rank.job + ", not " + run.job +
                             "), left out");
      continue;
    }
    if (!seen.emplace(rank.rank, rank.path).second) {
      run.problems.push_back(rank.path + ": rank " + std::to_string(rank.rank) + " again (also " +
                             seen[rank.rank] + "), left out");
      continue;
    }
    run.world = std::max(run.world, rank.world);
    run.ranks.push_back(std::move(rank));
  }
  std::sort(run.ranks.begin(), run.ranks.end(),
            [](const RankProgress& a, const RankProgress& b) { return a.rank < b.rank; });
  NameMissingRanks(run);
  return run;
}

ProcessState ProbeProcess(const RankProgress& rank) {
  static const std::string local = LocalHost();
  if (!rank.host.empty() && rank.host != local) return ProcessState::kUnknown;
  char state = '?';
  uint64_t start_ticks = 0;
  if (rank.pid <= 0 || !ReadProcStat(rank.pid, state, start_ticks)) return ProcessState::kDead;
  if (state == 'Z' || state == 'X' || state == 'x') return ProcessState::kDead;
  // A pid reused by a process that started after the record was made is not the rank.
  const int64_t boot = BootTimeNs();
  const long ticks = sysconf(_SC_CLK_TCK);
  if (boot > 0 && ticks > 0) {
    const int64_t started = boot + static_cast<int64_t>(start_ticks) * (1000000000LL / ticks);
    if (started > rank.started_ns + 2000000000LL) return ProcessState::kDead;
  }
  if (state == 'T' || state == 't') return ProcessState::kStopped;
  return ProcessState::kAlive;
}

int64_t NowNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

}  // namespace zb::doctor
