// SPDX-License-Identifier: Apache-2.0
// Timelines out (trace_export.h): one Kineto-style document per rank, as the PyTorch profiler
// writes them, so that Holistic Trace Analysis loads a zbkit run as a distributed trace and
// `zb import` reads it back (docs/trace-export.md §3).
//
// Per op: a `PP:<action>` user annotation on a CPU thread of its own track, and per kernel a
// `cudaLaunchKernel` inside it joined by correlation id to the kernel on device 0 (compute on
// streams from 7, NCCL on streams from 1000: a stream runs one kernel at a time, so kernels that
// overlap in time, as measured ops of one rank can, go on the next stream). The kernels reproduce
// the op's span and busy time exactly: one kernel over the span when the whole span was busy, else
// one of the busy length at the start and an empty one at the end; none for an op that measured no
// device time. Iterations are `ProfilerStep#N` annotations around each iteration's ops.
#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>

#include "trace_export_internal.h"
#include "zbkit/profiler/attribution.h"
#include "zbkit/schemas/range_name.h"
#include "zbkit/traces/trace_export.h"

namespace zb::traces {
using namespace trace_export_detail;
namespace {

using profiler::MatchBuiltIn;  // the profiler's range rules: which names zb import reads back
using profiler::RangeMatch;
using profiler::RangeRole;

// A plausible epoch (2023-11-14) so that every kernel time is far from 0 (CUPTI's "untimed").
constexpr TimeNs kBaseTimeNs = 1700000000000000000LL;
constexpr int32_t kDevicePid = 0;
// The first stream of each kind; overlapping kernels take the next ones (TrackAllocator), far
// apart so that the two kinds never share one.
constexpr int64_t kComputeStream = 7;
constexpr int64_t kCommStream = 1000;
constexpr int64_t kStepThread = 1;

int32_t CpuPid(int32_t rank) {
  return 100000 + rank;
}

std::string KernelName(OpKind kind) {
  // HTA's kernel types: "nccl" in the name is communication, anything else computation.
  if (kind == OpKind::kComm)
    return "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)";
  return std::string("zbkit::") + OpKindName(kind) + "_kernel";
}

// A transfer's measured range name where zb import reads its direction from it, else "".
std::string DirectionalName(const Timeline& timeline, const TimelineOp& op) {
  if (op.name < 0 || op.name >= static_cast<int32_t>(timeline.names.size())) return "";
  const std::string& name = timeline.names[op.name];
  const RangeMatch match = MatchBuiltIn(name, "user_annotation");
  const bool directed = match.role == RangeRole::kOp && match.kind == OpKind::kComm &&
                        match.direction != CommDirection::kNone;
  return directed ? name : "";
}

// The kernels that give back the op's span and busy time (see the file comment).
std::vector<std::pair<TimeNs, TimeNs>> KernelsOf(const TimelineOp& op) {
  const TimeNs span = op.end - op.start;
  if (op.busy < 0 || op.busy >= span) return {{op.start, op.end}};
  if (op.busy == 0) return {};
  return {{op.start, op.start + op.busy}, {op.end, op.end}};
}

class KinetoWriter {
 public:
  using Spans = std::map<std::pair<int32_t, int32_t>, std::pair<TimeNs, TimeNs>>;
  KinetoWriter(const ExportedTimeline& exported, const Spans& iterations, int32_t rank,
               int32_t world)
      : exported_(exported), iterations_(iterations), rank_(rank), world_(world) {}
  std::string Write(const std::vector<const TimelineOp*>& ops);

 private:
  void Event(const std::string& json) {
    events_ += events_.empty() ? "\n" : ",\n";
    events_ += json;
  }
  // Where an op's kernels are launched from: its annotation's thread, at its middle.
  struct Launcher {
    int64_t tid = 0;
    TimeNs at = 0;
    std::string external_arg;
  };
  void Steps();
  void Kernels(const TimelineOp& op, int64_t tid, TimeNs launch, const std::string& external_arg);
  Launcher Annotated(const TimelineOp& op, const std::string& name);
  void Transfer(const TimelineOp& op);

  const ExportedTimeline& exported_;
  const Spans& iterations_;  // IterationSpans of the whole timeline
  int32_t rank_;
  int32_t world_;
  std::string events_;
  TrackAllocator tracks_;
  TrackAllocator streams_;  // device streams: one kernel at a time on each
  // The first compute op of each (iteration, microbatch): where unnamed transfers launch from.
  std::map<std::pair<int32_t, int32_t>, Launcher> owners_;
  // Kineto's ids are large; HTA (0.5.0 under pandas 3) narrows small ones to int8 and then cannot
  // store its own row indices beside them.
  int64_t next_id_ = 1 << 20;
};

// One `ProfilerStep#N` per iteration of the rank, around its ops of that iteration.
void KinetoWriter::Steps() {
  for (auto it = iterations_.lower_bound({rank_, INT32_MIN});
       it != iterations_.end() && it->first.first == rank_; ++it) {
    const auto& [key, span] = *it;
    const int64_t id = next_id_++;
    Event(CompleteEvent("user_annotation", "ProfilerStep#" + std::to_string(key.second),
                        CpuPid(rank_), kStepThread, span.first, span.second,
                        R"("External id":)" + std::to_string(id)));
  }
}

void KinetoWriter::Kernels(const TimelineOp& op, int64_t tid, TimeNs launch,
                           const std::string& external_arg) {
  const int64_t first_stream = op.kind == OpKind::kComm ? kCommStream : kComputeStream;
  for (const auto& [start, end] : KernelsOf(op)) {
    const int64_t stream = streams_.Place(kDevicePid, first_stream, start, end);
    const std::string correlation = std::to_string(next_id_++);
    Event(CompleteEvent("cuda_runtime", "cudaLaunchKernel", CpuPid(rank_), tid, launch, launch,
                        R"("correlation":)" + correlation + "," + external_arg));
    Event(CompleteEvent("kernel", KernelName(op.kind), kDevicePid, stream, start, end,
                        R"("device":0,"stream":)" + std::to_string(stream) + R"(,"correlation":)" +
                            correlation + "," + external_arg));
  }
}

KinetoWriter::Launcher KinetoWriter::Annotated(const TimelineOp& op, const std::string& name) {
  Launcher launcher;
  launcher.tid = tracks_.Place(CpuPid(rank_), TrackOf(op), op.start, op.end);
  launcher.external_arg = R"("External id":)" + std::to_string(next_id_++);
  Event(CompleteEvent("user_annotation", name, CpuPid(rank_), launcher.tid, op.start, op.end,
                      launcher.external_arg));
  // Launched from the middle of the op: an op of the same track may start or end at the op's
  // own start (back to back, or an op of no duration), and a launch there would be ambiguous.
  launcher.at = op.start + (op.end - op.start) / 2;
  Kernels(op, launcher.tid, launcher.at, launcher.external_arg);
  return launcher;
}

// A transfer whose range said its direction keeps that range. One that came from NCCL kernels no
// range named (a data-parallel all-reduce during a backward) goes back the way it came: its
// kernels launched from inside the compute op of its rank, iteration and microbatch, which is
// how zb import gave it that microbatch (attribution.h, bare NCCL kernels).
void KinetoWriter::Transfer(const TimelineOp& op) {
  const std::string name = DirectionalName(*exported_.timeline, op);
  const auto owner = owners_.find({op.iteration, op.microbatch});
  if (name.empty() && owner != owners_.end()) {
    Kernels(op, owner->second.tid, owner->second.at, owner->second.external_arg);
    return;
  }
  Annotated(op, name.empty() ? "nccl:send_recv s" + std::to_string(op.stage) + " mb" +
                                   std::to_string(op.microbatch)
                             : name);
}

std::string KinetoWriter::Write(const std::vector<const TimelineOp*>& ops) {
  Steps();
  for (const TimelineOp* op : ops) {
    if (op->kind == OpKind::kComm) continue;
    const Launcher launcher =
        Annotated(*op, FormatTorchActionName(op->kind, op->stage, op->microbatch));
    owners_.try_emplace({op->iteration, op->microbatch}, launcher);
  }
  for (const TimelineOp* op : ops) {
    if (op->kind == OpKind::kComm) Transfer(*op);
  }
  std::string meta;
  auto name = [&](const char* what, int32_t pid, int64_t tid, const std::string& value) {
    meta += ",\n" + MetadataEvent(what, pid, tid, R"("name":)" + JsonString(value));
  };
  name("process_name", CpuPid(rank_), 0, "rank " + std::to_string(rank_) + " (CPU)");
  name("process_name", kDevicePid, 0, "rank " + std::to_string(rank_) + " GPU 0");
  name("thread_name", CpuPid(rank_), kStepThread, "steps");
  for (const TrackAllocator::Used& used : tracks_.used())
    name("thread_name", used.pid, used.base + used.overflow, TrackName(used));
  for (const TrackAllocator::Used& used : streams_.used()) {
    const int64_t stream = used.base + used.overflow;
    name("thread_name", kDevicePid, stream,
         "stream " + std::to_string(stream) + (used.base == kCommStream ? " (NCCL)" : ""));
  }
  // HTA finds the rank with the regex "rank":\s+(\d+): keep the space after the colon.
  return "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n"
         "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " +
         std::to_string(rank_) + ", \"world_size\": " + std::to_string(world_) +
         "},\n  \"baseTimeNanoseconds\": " + std::to_string(kBaseTimeNs) +
         ",\n  \"displayTimeUnit\": \"ms\",\n  \"traceName\": " +
         JsonString("zbkit " + exported_.label + " rank " + std::to_string(rank_)) +
         ",\n  \"zbkit_source\": " + JsonString(exported_.source) + ",\n  \"traceEvents\": [" +
         events_ + meta + "\n]}\n";
}

}  // namespace

Expected<std::vector<std::pair<int32_t, std::string>>> WriteKinetoTraces(
    const ExportedTimeline& exported) {
  if (exported.timeline == nullptr || exported.timeline->ops.empty()) {
    return InvalidInput(exported.source + ": the timeline has no ops");
  }
  std::map<int32_t, std::vector<const TimelineOp*>> by_rank;
  for (const TimelineOp& op : exported.timeline->ops)
    by_rank[op.rank].push_back(&op);
  const int32_t world = by_rank.rbegin()->first + 1;
  const KinetoWriter::Spans iterations = IterationSpans(*exported.timeline);
  std::vector<std::pair<int32_t, std::string>> documents;
  for (auto& [rank, ops] : by_rank) {
    std::stable_sort(ops.begin(), ops.end(), [](const TimelineOp* a, const TimelineOp* b) {
      return std::tie(a->start, a->end) < std::tie(b->start, b->end);
    });
    documents.emplace_back(rank, KinetoWriter(exported, iterations, rank, world).Write(ops));
  }
  return documents;
}

}  // namespace zb::traces
