// SPDX-License-Identifier: Apache-2.0
// The shared data model of zbkit: cost profiles, schedules and timelines.
//
// Plain value types with no Qt, CUDA or SQLite in them, so that every component (tuner, profiler,
// runtime, GUI) can speak the same language. Times are int64 nanoseconds everywhere inside zbkit
// (exact sums, no drift when a 24-microbatch schedule adds up 72 costs); JSON carries milliseconds.
// Memory is a double in whatever unit the cost profile uses (bytes from a profiler, or the
// relative units of the paper's analytic model); integer-valued inputs stay exact.
#ifndef ZBKIT_SCHEMAS_TYPES_H_
#define ZBKIT_SCHEMAS_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace zb {

using TimeNs = int64_t;
inline constexpr TimeNs kNsPerMs = 1'000'000;

// Milliseconds (JSON) <-> nanoseconds (inside zbkit), rounded to the nearest nanosecond.
TimeNs MsToNs(double ms);
double NsToMs(TimeNs ns);

// F forward; B gradient w.r.t. the stage input; W gradient w.r.t. the weights; BW fused B+W.
// kComm is stage-to-stage communication: it appears only in measured timelines (a schedule orders
// compute ops; its communication follows from the dependencies).
enum class OpKind : uint8_t { kF = 0, kB = 1, kW = 2, kBW = 3, kComm = 4 };
inline constexpr int kNumOpKinds = 5;

const char* OpKindName(OpKind kind);  // "F", "B", "W", "BW", "COMM"
std::optional<OpKind> ParseOpKind(std::string_view name);

// Cost of one pipeline stage (model chunk) for one microbatch.
struct StageCost {
  TimeNs f = 0;
  TimeNs b = 0;
  TimeNs w = 0;
  double m_b = 0;  // activation memory held from F until B
  double m_w = 0;  // part of it still held from B until W
  // The fused backward (B and W in one pass) where it was measured; 0: not measured, b + w.
  // Fusing saves the split's own overhead (a second walk of the graph), which on some hardware
  // makes BW shorter than B + W (docs/cost-model.md §2). Last, so that {f, b, w, m_b, m_w}
  // initializers keep their meaning.
  TimeNs bw = 0;
  // A pipeline inside data parallelism (docs/data-parallel.md §5), all 0 without one:
  // `reduce` the stage's gradient reduction, once per step after its last backward (DDP's
  // all-reduce, FSDP's reduce-scatter: torch's REDUCE_GRAD); `unshard` FSDP's all-gather of the
  // stage's parameters before its first op (UNSHARD); `unsharded` the memory those gathered
  // parameters add while the stage is unsharded (in M_B's unit); `reduced` the gradients its
  // reduction takes in per step (in M_B's unit: a measured figure, which no prediction uses).
  TimeNs reduce = 0;
  TimeNs unshard = 0;
  double unsharded = 0;
  double reduced = 0;

  bool HasDataParallelWork() const { return reduce > 0 || unshard > 0 || unsharded > 0; }

  TimeNs Duration(OpKind kind) const {
    switch (kind) {
      case OpKind::kF:
        return f;
      case OpKind::kB:
        return b;
      case OpKind::kW:
        return w;
      case OpKind::kBW:
        return bw > 0 ? bw : b + w;
      case OpKind::kComm:
        return 0;
    }
    return 0;
  }
  // Activation memory change when an op of this kind completes (docs/cost-model.md §4: F +M_B,
  // B -(M_B - M_W), W -M_W, BW -M_B; the four sum to zero per microbatch).
  double MemoryDelta(OpKind kind) const {
    switch (kind) {
      case OpKind::kF:
        return m_b;
      case OpKind::kB:
        return m_w - m_b;
      case OpKind::kW:
        return -m_w;
      case OpKind::kBW:
        return -m_b;
      case OpKind::kComm:
        return 0;
    }
    return 0;
  }
  bool operator==(const StageCost& other) const {
    return f == other.f && b == other.b && w == other.w && bw == other.bw && m_b == other.m_b &&
           m_w == other.m_w && reduce == other.reduce && unshard == other.unshard &&
           unsharded == other.unsharded && reduced == other.reduced;
  }
};

// How the p*v stages (model chunks) are laid out over p ranks.
//   loop: stage s on rank s mod p (1F1B, interleaved 1F1B, ZB-H1/H2, ZB heuristic).
//   v:    v = 2, rank r holds stages r and 2p-1-r (ZB-V, V-Half, V-Min).
enum class Placement { kLoop, kV };
const char* PlacementName(Placement placement);
std::optional<Placement> ParsePlacement(std::string_view name);

// The stage layout a job was built with: what it can replay without being edited (a script with
// one stage per rank cannot run an interleaved order). "loop:1" (one stage per rank, e.g.
// Schedule1F1B), "loop:V" (V stages per rank, Interleaved1F1B), "v" (two stages per rank in V
// placement, ZBVZeroBubble). docs/formats.md §1 (the `layout` of zb-costs/1).
struct JobLayout {
  Placement placement = Placement::kLoop;
  int chunks = 1;  // stages per rank
  bool operator==(const JobLayout& other) const = default;
};
std::optional<JobLayout> ParseJobLayout(std::string_view text);  // nullopt: not one of the forms
std::string JobLayoutName(const JobLayout& layout);              // "loop:1", "loop:2", "v"
// What a job of `layout` builds, in words: "2 stages per rank, interleaved (loop placement)".
std::string JobLayoutDescription(const JobLayout& layout);

// How a job checkpoints its activations (docs/activation-checkpointing.md §1): per block "none",
// "full" (torch's non-reentrant checkpoint of the whole block), "op" (per-op selective),
// "reentrant"; for a job also "layer" (some blocks full, the others none: torchtitan's every-k-th
// layer) and "mixed" (any other combination).
bool IsCheckpointingMode(std::string_view mode);
// The modes, for messages: "none, full, op, reentrant, layer, mixed".
const char* CheckpointingModeList();
// One block's modes: none, full, op, reentrant.
bool IsBlockCheckpointingMode(std::string_view mode);

// When a rank waits for a stage's gradient reduction (docs/data-parallel.md §5): kInPlace where
// torch's runtime issues it (REDUCE_GRAD: the rank's next op waits for it, torch 2.13), kStepEnd
// only at the end of the step (the deferred wait of pytorch PR #196725: the reduction overlaps the
// rank's later ops). The step ends when every reduction has, either way.
enum class ReduceWait { kInPlace, kStepEnd };
const char* ReduceWaitName(ReduceWait wait);  // "in_place", "step_end"
std::optional<ReduceWait> ParseReduceWait(std::string_view name);

// Per-stage costs of a pipeline plus the latency of one stage-to-stage hop.
struct CostProfile {
  std::vector<StageCost> stages;
  TimeNs comm = 0;

  int num_stages() const { return static_cast<int>(stages.size()); }
  bool IsUniform() const;
  // Splits every stage into `parts` consecutive equal sub-stages, in model order, so that a
  // profile measured on p stages can drive an interleaved or V schedule of p*parts chunks.
  // (The split profile records no layout: it is no longer one profiled job's.)
  CostProfile SplitStages(int parts) const;
  // The costs alone, without what the profiled job was (layout, schedule_class): what a schedule
  // carries as its costs. The job's checkpointing stays: it says what B and W hold.
  CostProfile CostsOnly() const;

  // What the profiled job was, where the profiler saw it (docs/formats.md §1): its stage layout
  // and the torch schedule class it ran ("" unknown; only with a layout). The stages above stay
  // one per rank whatever the layout. zb tune proposes by default only orders of this layout.
  std::optional<JobLayout> layout;
  std::string schedule_class;
  // How the job checkpointed its activations (IsCheckpointingMode; "" unknown). Under "full",
  // "op" and "layer", B holds one recomputation of each checkpointed block and M_W may exceed
  // M_B (docs/activation-checkpointing.md §2); zb export refuses a split order for torch alone
  // where torch's own split would fail ("op", "mixed").
  std::string checkpointing;
  // How many data-parallel replicas of each pipeline rank the profiled job ran, their ops folded
  // into these costs (docs/data-parallel.md §3); 0: not known. What the job was, like layout.
  int data_parallel = 0;
  // When the ranks wait for their stages' reductions (only matters where a stage has `reduce`).
  ReduceWait reduce_wait = ReduceWait::kInPlace;

  // Whether any stage reduces gradients or gathers parameters (StageCost::HasDataParallelWork).
  bool HasDataParallelWork() const;
  // These costs without the data-parallel work: what a DP-oblivious tuner sees.
  CostProfile WithoutDataParallelWork() const;

  bool operator==(const CostProfile& other) const {
    return stages == other.stages && comm == other.comm && layout == other.layout &&
           schedule_class == other.schedule_class && checkpointing == other.checkpointing &&
           data_parallel == other.data_parallel && reduce_wait == other.reduce_wait;
  }
};

// The one-way time of a message between two neighbouring ranks, as a rehearsal measured it.
struct MeasuredHop {
  int32_t from_rank = 0;
  int32_t to_rank = 0;
  TimeNs time = 0;
  bool operator==(const MeasuredHop&) const = default;
};

// One measurement of a cluster's hops (`zb rehearse --store`): the message size it used, what
// measured it and the median time of each hop. `zb tune --comm cluster` uses MedianTime().
struct HopMeasurement {
  int64_t id = 0;
  std::string cluster;
  int64_t message_bytes = 0;
  std::string source;       // e.g. "zb rehearse"
  std::string measured_at;  // UTC, ISO 8601; set by the store
  std::vector<MeasuredHop> hops;
  // The median over the hops (the mean of the two middle ones for an even count); 0 for none.
  TimeNs MedianTime() const;
};

// Stage id of local chunk `chunk` on `rank`.
int StageOfChunk(Placement placement, int ranks, int rank, int chunk);
// Rank that holds `stage`.
int RankOfStage(Placement placement, int ranks, int stage);

// One op in a rank's program. start/end are the predicted (or measured) times, 0 if unknown.
struct Op {
  OpKind kind = OpKind::kF;
  int32_t chunk = 0;  // local chunk index on the rank (index into RankProgram::stages)
  int32_t microbatch = 0;
  TimeNs start = 0;
  TimeNs end = 0;

  bool operator==(const Op& other) const {
    return kind == other.kind && chunk == other.chunk && microbatch == other.microbatch &&
           start == other.start && end == other.end;
  }
};

struct RankProgram {
  std::vector<int32_t> stages;  // stage id of each local chunk
  std::vector<Op> ops;          // in execution order
  bool operator==(const RankProgram& other) const {
    return stages == other.stages && ops == other.ops;
  }
};

// Summary figures of a simulated or measured schedule.
struct Prediction {
  TimeNs makespan = 0;              // max over ranks of the last op's end, from t = 0
  TimeNs span = 0;                  // max over ranks of (last end - start of the rank's first F)
  double bubble_rate = 0;           // (makespan - heaviest rank's busy time) / makespan
  double paper_bubble_rate = 0;     // (span - heaviest rank's busy time) / span, the paper's
  std::vector<double> peak_memory;  // per rank, activation memory
  bool operator==(const Prediction& other) const {
    return makespan == other.makespan && span == other.span && bubble_rate == other.bubble_rate &&
           paper_bubble_rate == other.paper_bubble_rate && peak_memory == other.peak_memory;
  }
};

// A pipeline schedule: placement, microbatch count and each rank's ordered op list.
struct Schedule {
  int ranks = 0;         // p, the "stages" field of zb-schedule/1
  int microbatches = 0;  // m
  int chunks = 1;        // v, stages per rank
  Placement placement = Placement::kLoop;
  std::string family;  // the generator that produced it ("zb-auto", "1f1b", ...), may be empty
  CostProfile costs;   // p*v entries, per stage as scheduled
  std::vector<RankProgram> programs;  // index = rank
  std::optional<Prediction> predicted;

  int num_stages() const { return ranks * chunks; }
  int64_t num_ops() const;
  bool operator==(const Schedule& other) const;
};

// A flat list of timed ops, predicted or measured; what the store keeps and the GUI draws.
struct TimelineOp {
  int32_t rank = 0;
  int32_t stage = 0;
  OpKind kind = OpKind::kF;
  int32_t microbatch = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  // The iteration (training step) of a measured op, from 0; 0 in a predicted timeline.
  int32_t iteration = 0;
  // A measured op's device busy time inside [start, end): the union of its kernels' intervals
  // (docs/zbview.md §6). -1 when nothing is known apart from the span (predicted
  // ops, ranges without kernels): then the whole span is busy. See BusyTime().
  TimeNs busy = -1;
  int32_t kernels = 0;  // device activities attributed to the op (measured timelines)
  int32_t name = -1;    // index into Timeline::names: the range it was recognized from; -1 none

  // The busy time: `busy` when measured (at most the span), else the span.
  TimeNs BusyTime() const {
    const TimeNs span = end - start;
    return busy >= 0 && busy < span ? busy : span;
  }
  bool operator==(const TimelineOp& other) const {
    return rank == other.rank && stage == other.stage && kind == other.kind &&
           microbatch == other.microbatch && start == other.start && end == other.end &&
           iteration == other.iteration && busy == other.busy && kernels == other.kernels &&
           name == other.name;
  }
};

struct MemorySample {
  int32_t rank = 0;
  TimeNs time = 0;
  double memory = 0;  // activation memory held on the rank from this time on
  bool operator==(const MemorySample& other) const {
    return rank == other.rank && time == other.time && memory == other.memory;
  }
};

enum class TimelineKind { kPredicted, kMeasured };
const char* TimelineKindName(TimelineKind kind);

struct Timeline {
  TimelineKind kind = TimelineKind::kPredicted;
  std::vector<TimelineOp> ops;
  std::vector<MemorySample> memory;
  // The range names ops refer to (TimelineOp::name), each once; empty for a prediction.
  std::vector<std::string> names;
  bool operator==(const Timeline& other) const {
    return kind == other.kind && ops == other.ops && memory == other.memory && names == other.names;
  }
};

// Fills a Timeline's `names` for TimelineOp::name, each name once: the store's reader, the
// profiler's measured timeline and ExtractIteration all name ops through it.
class TimelineNameTable {
 public:
  explicit TimelineNameTable(std::vector<std::string>& names) : names_(names) {}
  // The id of `name` in `names`, appending it the first time.
  int32_t Intern(std::string_view name);

 private:
  std::vector<std::string>& names_;
  std::unordered_map<std::string, int32_t> ids_;
};

// The predicted timeline of a schedule whose ops carry start/end: every op, plus one memory
// sample per op end (activation changes are accounted when an op completes).
Timeline TimelineFromSchedule(const Schedule& schedule);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_TYPES_H_
