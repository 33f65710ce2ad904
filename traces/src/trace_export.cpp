// SPDX-License-Identifier: Apache-2.0
// Timelines out (trace_export.h): the shared pieces and the Perfetto-ready Chrome trace; the
// per-rank Kineto documents are kineto_export.cpp, the structural check trace_check.cpp.
#include "zbkit/traces/trace_export.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "trace_export_internal.h"
#include "zbkit/schemas/dependencies.h"
#include "zbkit/schemas/op_text.h"
#include "zbkit/schemas/timeline_analysis.h"
#include "zbkit/schemas/timeline_index.h"

namespace zb::traces {
namespace trace_export_detail {

void AppendMicros(std::string& out, TimeNs ns) {
  if (ns < 0) {
    out += '-';
    // -(INT64_MIN) overflows; no timeline comes near it, but stay defined.
    ns = ns == INT64_MIN ? INT64_MAX : -ns;
  }
  out += std::to_string(ns / 1000);
  const int64_t fraction = ns % 1000;
  out += '.';
  out += static_cast<char>('0' + fraction / 100);
  out += static_cast<char>('0' + fraction / 10 % 10);
  out += static_cast<char>('0' + fraction % 10);
}

std::string JsonString(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string CompleteEvent(std::string_view category, std::string_view name, int64_t pid,
                          int64_t tid, TimeNs start, TimeNs end, const std::string& args) {
  std::string out = R"({"ph":"X","cat":)" + JsonString(category) + R"(,"name":)" +
                    JsonString(name) + R"(,"pid":)" + std::to_string(pid) + R"(,"tid":)" +
                    std::to_string(tid) + R"(,"ts":)";
  AppendMicros(out, start);
  out += R"(,"dur":)";
  AppendMicros(out, std::max<TimeNs>(0, end - start));
  out += R"(,"args":{)" + args + "}}";
  return out;
}

std::string MetadataEvent(std::string_view what, int64_t pid, int64_t tid,
                          const std::string& args) {
  return R"({"ph":"M","name":)" + JsonString(what) + R"(,"pid":)" + std::to_string(pid) +
         R"(,"tid":)" + std::to_string(tid) + R"(,"args":{)" + args + "}}";
}

int64_t TrackOf(const TimelineOp& op) {
  return op.kind == OpKind::kComm ? kCommTrack : kStageTrack + op.stage * TrackAllocator::kOverflow;
}

std::string TrackName(const TrackAllocator::Used& used) {
  std::string name;
  if (used.base == kIterationTrack) {
    name = "iterations";
  } else if (used.base == kBubbleTrack) {
    name = "bubbles (what each rank waited for)";
  } else if (used.base == kCommTrack) {
    name = "comm";
  } else {
    name = "stage " + std::to_string((used.base - kStageTrack) / TrackAllocator::kOverflow);
  }
  if (used.overflow > 0) name += " (overlap " + std::to_string(used.overflow) + ")";
  return name;
}

std::map<std::pair<int32_t, int32_t>, std::pair<TimeNs, TimeNs>> IterationSpans(
    const Timeline& timeline) {
  std::map<std::pair<int32_t, int32_t>, std::pair<TimeNs, TimeNs>> spans;
  for (const TimelineOp& op : timeline.ops) {
    auto [it, inserted] = spans.try_emplace({op.rank, op.iteration}, op.start, op.end);
    if (!inserted) {
      it->second.first = std::min(it->second.first, op.start);
      it->second.second = std::max(it->second.second, op.end);
    }
  }
  return spans;
}

int64_t TrackAllocator::Place(int32_t pid, int64_t base, TimeNs start, TimeNs end) {
  std::vector<TimeNs>& ends = last_end_[{pid, base}];
  for (size_t k = 0; k < ends.size(); ++k) {
    if (ends[k] <= start) {
      ends[k] = std::max(end, start);
      return base + static_cast<int64_t>(k);
    }
  }
  ends.push_back(std::max(end, start));
  return base + static_cast<int64_t>(ends.size() - 1);
}

std::vector<TrackAllocator::Used> TrackAllocator::used() const {
  std::vector<Used> result;
  for (const auto& [key, ends] : last_end_) {
    for (size_t k = 0; k < ends.size(); ++k)
      result.push_back({key.first, key.second, static_cast<int64_t>(k)});
  }
  return result;
}

}  // namespace trace_export_detail

using namespace trace_export_detail;

Expected<Timeline> SelectIteration(const Timeline& timeline, std::optional<int32_t> iteration) {
  if (!iteration) return timeline;
  const TimelineIndex index(timeline);
  const auto& spans = index.iterations();
  if (*iteration < 0 || *iteration >= static_cast<int32_t>(spans.size()) ||
      spans[*iteration].ops == 0) {
    return NotFound("iteration " + std::to_string(*iteration) + ": the timeline has " +
                    std::to_string(spans.size()) + " iteration(s) (0 .. " +
                    std::to_string(static_cast<int64_t>(spans.size()) - 1) + ")");
  }
  return ExtractIteration(index, *iteration);
}

namespace {

// The stages of a timeline: `given` when > 0, else the largest stage of its ops + 1.
int StagesOf(const Timeline& timeline, int given) {
  if (given > 0) return given;
  int stages = 0;
  for (const TimelineOp& op : timeline.ops)
    stages = std::max(stages, op.stage + 1);
  return stages;
}

std::string OpShortName(OpKind kind, int32_t stage, int32_t microbatch) {
  return FormatSliceLabel(kind, stage, microbatch, /*with_stage=*/true);
}

// Writes one trace: the events of every timeline, then the track names.
class PerfettoWriter {
 public:
  void Add(const ExportedTimeline& exported, int k);
  std::string Finish(const std::vector<ExportedTimeline>& timelines);

 private:
  struct Placed {
    const TimelineOp* op = nullptr;
    int32_t pid = 0;
    int64_t tid = 0;
  };
  void Slice(int32_t pid, int64_t tid, TimeNs start, TimeNs end, const std::string& name,
             const std::string& category, const std::string& args);
  void OpSlices(const ExportedTimeline& exported, int k, std::vector<Placed>& placed);
  void Flows(const std::vector<Placed>& placed, int num_stages);
  void IterationMarkers(const Timeline& timeline, int k);
  void Bubbles(const TimelineIndex& index, int k);
  void Memory(const ExportedTimeline& exported, const TimelineIndex& index, int k);
  int32_t Pid(int k, int32_t rank) const { return k * kPidStride + rank + 1; }

  std::string events_;
  TrackAllocator tracks_;
  std::map<int32_t, std::pair<int32_t, std::string>> processes_;  // pid -> (sort, name)
  int64_t next_flow_ = 1;
};

void PerfettoWriter::Slice(int32_t pid, int64_t tid, TimeNs start, TimeNs end,
                           const std::string& name, const std::string& category,
                           const std::string& args) {
  events_ += events_.empty() ? "\n" : ",\n";
  events_ += CompleteEvent(category, name, pid, tid, start, end, args);
}

void PerfettoWriter::OpSlices(const ExportedTimeline& exported, int k,
                              std::vector<Placed>& placed) {
  const Timeline& timeline = *exported.timeline;
  std::vector<const TimelineOp*> ops;
  for (const TimelineOp& op : timeline.ops)
    ops.push_back(&op);
  std::stable_sort(ops.begin(), ops.end(), [](const TimelineOp* a, const TimelineOp* b) {
    return std::tie(a->rank, a->start, a->end) < std::tie(b->rank, b->start, b->end);
  });
  for (const TimelineOp* op : ops) {
    const int32_t pid = Pid(k, op->rank);
    const int64_t tid = tracks_.Place(pid, TrackOf(*op), op->start, op->end);
    std::string args = R"("kind":")" + std::string(OpKindName(op->kind)) + R"(","stage":)" +
                       std::to_string(op->stage) + R"(,"microbatch":)" +
                       std::to_string(op->microbatch) + R"(,"iteration":)" +
                       std::to_string(op->iteration);
    if (op->busy >= 0) {
      args += R"(,"busy_us":)";
      AppendMicros(args, op->BusyTime());
      args += R"(,"kernels":)" + std::to_string(op->kernels);
    }
    if (op->name >= 0 && op->name < static_cast<int32_t>(timeline.names.size())) {
      args += R"(,"range":)" + JsonString(timeline.names[op->name]);
    }
    const std::string name = FormatSliceLabel(op->kind, op->stage, op->microbatch, false);
    Slice(pid, tid, op->start, op->end, name, "zb.op", args);
    placed.push_back({op, pid, tid});
  }
}

// A send -> receive arrow for every dependency between ranks (dependencies.h): from the producing
// op's slice to the waiting op's.
void PerfettoWriter::Flows(const std::vector<Placed>& placed, int num_stages) {
  std::map<std::tuple<int32_t, OpKind, int32_t, int32_t>, const Placed*> by_key;
  for (const Placed& p : placed) {
    if (p.op->kind == OpKind::kComm) continue;
    by_key.emplace(std::make_tuple(p.op->iteration, p.op->kind, p.op->stage, p.op->microbatch), &p);
  }
  const DependencyRule rule{num_stages, 0};
  for (const Placed& consumer : placed) {
    const TimelineOp& op = *consumer.op;
    if (op.kind == OpKind::kComm) continue;
    const auto dependency = WaitsFor(op.kind, op.stage, op.microbatch, rule);
    if (!dependency) continue;
    auto it =
        by_key.find({op.iteration, dependency->kind, dependency->stage, dependency->microbatch});
    if (it == by_key.end() && dependency->or_fused_backward) {
      it = by_key.find({op.iteration, OpKind::kBW, dependency->stage, dependency->microbatch});
    }
    if (it == by_key.end() || it->second->op->rank == op.rank) continue;
    const Placed& producer = *it->second;
    const std::string name = op.kind == OpKind::kF ? "activation" : "gradient";
    const std::string id = std::to_string(next_flow_++);
    events_ += R"(,
{"ph":"s","id":)" +
               id + R"(,"pid":)" + std::to_string(producer.pid) + R"(,"tid":)" +
               std::to_string(producer.tid) + R"(,"ts":)";
    AppendMicros(events_, producer.op->start);
    events_ += R"(,"name":")" + name + R"(","cat":"zb.p2p"})";
    events_ += R"(,
{"ph":"f","bp":"e","id":)" +
               id + R"(,"pid":)" + std::to_string(consumer.pid) + R"(,"tid":)" +
               std::to_string(consumer.tid) + R"(,"ts":)";
    AppendMicros(events_, op.start);
    events_ += R"(,"name":")" + name + R"(","cat":"zb.p2p"})";
  }
}

void PerfettoWriter::IterationMarkers(const Timeline& timeline, int k) {
  for (const auto& [key, span] : IterationSpans(timeline)) {
    const int32_t pid = Pid(k, key.first);
    const int64_t tid = tracks_.Place(pid, kIterationTrack, span.first, span.second);
    Slice(pid, tid, span.first, span.second, "iteration " + std::to_string(key.second),
          "zb.iteration", R"("iteration":)" + std::to_string(key.second));
  }
}

// Every idle stretch of a rank, named by the op it waited for where the timeline shows one
// (TimelineIndex::WaitedFor), else by the op it came before.
void PerfettoWriter::Bubbles(const TimelineIndex& index, int k) {
  for (int l = 0; l < static_cast<int>(index.lanes().size()); ++l) {
    const TimelineLane& lane = index.lane(l);
    if (lane.kind != LaneKind::kRank) continue;
    for (size_t i = 0; i < lane.size(); ++i) {
      const Bubble bubble = IdleBefore(index, l, i);
      if (bubble.length() <= 0) continue;
      const std::string before = OpShortName(lane.kind_of[i], lane.stage_of[i], lane.microbatch[i]);
      std::string name = "idle before " + before;
      std::string args = R"("before":)" + JsonString(before);
      if (const auto cause = index.WaitedFor(l, i)) {
        const TimelineLane& from = index.lane(cause->lane);
        const std::string waited = OpShortName(
            from.kind_of[cause->index], from.stage_of[cause->index], from.microbatch[cause->index]);
        name = "waits " + waited + " (rank " + std::to_string(from.rank) + ")";
        args += R"(,"waited_for":)" + JsonString(waited) + R"(,"waited_rank":)" +
                std::to_string(from.rank);
      }
      const int32_t pid = Pid(k, lane.rank);
      const int64_t tid = tracks_.Place(pid, kBubbleTrack, bubble.start, bubble.end);
      Slice(pid, tid, bubble.start, bubble.end, name, "zb.bubble", args);
    }
  }
}

void PerfettoWriter::Memory(const ExportedTimeline& exported, const TimelineIndex& index, int k) {
  if (!index.has_memory()) return;
  for (int32_t rank = 0; rank < index.num_ranks(); ++rank) {
    for (const auto& [time, held] : index.MemorySamples(rank)) {
      events_ += R"(,
{"ph":"C","pid":)" +
                 std::to_string(Pid(k, rank)) + R"(,"tid":0,"name":"activation memory","ts":)";
      AppendMicros(events_, time);
      events_ += R"(,"args":{"held":)" + nlohmann::json(held).dump();
      if (exported.cap) events_ += R"(,"cap":)" + nlohmann::json(*exported.cap).dump();
      events_ += "}}";
    }
  }
}

void PerfettoWriter::Add(const ExportedTimeline& exported, int k) {
  const Timeline& timeline = *exported.timeline;
  const int stages = StagesOf(timeline, exported.num_stages);
  const TimelineIndex index(timeline, exported.comm, stages);
  std::set<int32_t> ranks;
  for (const TimelineOp& op : timeline.ops)
    ranks.insert(op.rank);
  for (int32_t rank : ranks) {
    processes_[Pid(k, rank)] = {rank * 16 + k,
                                "rank " + std::to_string(rank) + " · " + exported.label};
  }
  std::vector<Placed> placed;
  placed.reserve(timeline.ops.size());
  IterationMarkers(timeline, k);
  OpSlices(exported, k, placed);
  Flows(placed, stages);
  Bubbles(index, k);
  Memory(exported, index, k);
}

std::string PerfettoWriter::Finish(const std::vector<ExportedTimeline>& timelines) {
  std::string meta;
  auto metadata = [&](const char* what, int32_t pid, int64_t tid, const std::string& args) {
    meta += ",\n" + MetadataEvent(what, pid, tid, args);
  };
  for (const auto& [pid, process] : processes_) {
    metadata("process_name", pid, 0, R"("name":)" + JsonString(process.second));
    metadata("process_sort_index", pid, 0, R"("sort_index":)" + std::to_string(process.first));
  }
  for (const TrackAllocator::Used& used : tracks_.used()) {
    const int64_t tid = used.base + used.overflow;
    metadata("thread_name", used.pid, tid, R"("name":)" + JsonString(TrackName(used)));
    metadata("thread_sort_index", used.pid, tid, R"("sort_index":)" + std::to_string(tid));
  }
  nlohmann::json other = nlohmann::json::array();
  for (const ExportedTimeline& exported : timelines) {
    other.push_back({{"label", exported.label},
                     {"kind", TimelineKindName(exported.timeline->kind)},
                     {"source", exported.source},
                     {"ops", exported.timeline->ops.size()}});
  }
  return R"({"displayTimeUnit":"ns","otherData":{"generator":"zbkit zb trace","timelines":)" +
         other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         R"(},"traceEvents":[)" + events_ + meta + "\n]}\n";
}

}  // namespace

Expected<std::string> WritePerfettoTrace(const std::vector<ExportedTimeline>& timelines) {
  if (timelines.empty()) return UsageError("no timeline to write");
  PerfettoWriter writer;
  for (size_t k = 0; k < timelines.size(); ++k) {
    const ExportedTimeline& exported = timelines[k];
    if (exported.timeline == nullptr || exported.timeline->ops.empty()) {
      return InvalidInput(exported.source + ": the timeline has no ops");
    }
    writer.Add(exported, static_cast<int>(k));
  }
  return writer.Finish(timelines);
}

}  // namespace zb::traces
