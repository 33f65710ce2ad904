// SPDX-License-Identifier: Apache-2.0
// Attribution: from raw traces (one per process) to pipeline ops (kind, stage, microbatch,
// iteration) with their measured times.
//
//  1. Range names are classified by rules (RuleSet): user rules first (a JSON file, regexes),
//     then the built-in families: zbkit's own runtime (`zb:F:s3:mb7`), the zero-bubble Megatron
//     fork (`F7.0.0`, `B7.0.0`, `W7.0.0`, `iter_0_12`, `SEND_FORWARD.7.0.0_...`), PyTorch
//     pipelining (`PP:3I7`), and Kineto's `ProfilerStep#N` iteration marker. profiler/README.md
//     documents every name.
//  2. Each process gets a pipeline rank (RANK, else pid order) and each op a stage: given by the
//     name, or from the name's local chunk through --pp/--layout, or the rank itself.
//  3. GPU time of an op range = the projection of the device activities launched inside it: a
//     kernel belongs to the innermost op range on its launching thread that contains its launch
//     (API entry) time; busy time is the union of those kernels' intervals (overlapping streams
//     count once), span is [first start, last end]. Launches from a thread with no op range open
//     at that time (PyTorch runs backward on an autograd worker thread) go to the innermost op
//     range of another thread of the process that contains them, if exactly one thread has one
//     (AttributionOptions::cross_thread). NCCL kernels ("nccl" in the name) never count as
//     compute: they are communication. In a CPU-only process (no device activity at all) a range
//     takes its own CPU duration; in a process that ran kernels a range that launched none
//     measured nothing (MeasuredOp::timed false). A matched range inside a matched range of the
//     same name and domain on the same thread is part of that op: only the outermost of such a
//     nest is an op, and it owns the kernels launched inside any of them.
//  4. Iterations come from iteration ranges; without any, a rank starts a new iteration when an
//     F of a (stage, microbatch) it already ran in the current iteration comes again. Ops whose
//     name carries no microbatch get one in FIFO order (n-th F of a stage in an iteration is
//     microbatch n; a B/BW takes the oldest F without one, a W the oldest B without one).
//  5. A B of the zero-bubble fork is the input gradient when the rank also ran W ops, otherwise
//     it is the full backward (BW).
#ifndef ZBKIT_PROFILER_ATTRIBUTION_H_
#define ZBKIT_PROFILER_ATTRIBUTION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zbkit/profiler/trace.h"
#include "zbkit/schemas/range_name.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb::profiler {

// What a range is for attribution.
enum class RangeRole : uint8_t {
  kNone,       // not recognized: contributes nothing
  kOp,         // a pipeline op (compute or communication)
  kIteration,  // an iteration (training step) boundary
  kIgnore,     // recognized and deliberately dropped (a user rule with kind IGNORE)
};

// Direction of a communication range, as seen by the stage that runs it: the model's type, shared
// with the range-name contract.
using CommDirection = zb::CommDirection;

struct RangeMatch {
  RangeRole role = RangeRole::kNone;
  OpKind kind = OpKind::kF;
  int32_t stage = -1;       // global stage (model chunk) when the name says it, else -1
  int32_t chunk = -1;       // local chunk on the rank when the name says it, else -1
  int32_t microbatch = -1;  // -1: unknown, assigned in FIFO order
  CommDirection direction = CommDirection::kNone;
  // The zero-bubble fork's `B`: input gradient if the rank has W ops, else full backward.
  bool b_or_bw = false;
  std::string family;  // "zbkit", "zb-fork", "torch-pp", "kineto", "user" (for reports)
};

// One user rule (JSON): a name regex (ECMAScript, searched anywhere in the name: anchor it with
// ^...$ to match whole names), the kind, and where stage, chunk and microbatch come from: a
// number, a capture-group reference "$N", or absent (unknown).
struct UserRule {
  std::string regex;
  std::string domain;  // empty: any domain except "gpu_user_annotation"
  std::string kind;    // F, B, W, BW, COMM, ITER, IGNORE
  std::string stage;
  std::string chunk;
  std::string microbatch;
  std::string direction;  // COMM only: send_forward, recv_forward, send_backward, recv_backward
};

class RuleSet {
 public:
  RuleSet();  // the built-in rules only
  RuleSet(const RuleSet&);
  RuleSet& operator=(const RuleSet&);
  RuleSet(RuleSet&&) noexcept;
  RuleSet& operator=(RuleSet&&) noexcept;
  ~RuleSet();

  // `{"rules": [{"regex": "...", "kind": "F", "stage": "$1", "microbatch": "$2"}, ...]}` or a
  // bare array of rules. Errors name the source and the rule: `r.json: rules[1].kind: ...`.
  static Expected<RuleSet> FromJson(const std::string& text, const std::string& source);
  static Expected<RuleSet> LoadFile(const std::string& path);

  // User rules first, in file order; then the built-ins.
  RangeMatch Match(std::string_view name, std::string_view domain) const;
  int num_user_rules() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The built-in classification alone (no user rules).
RangeMatch MatchBuiltIn(std::string_view name, std::string_view domain);

// A data-parallel collective of a stage (docs/data-parallel.md §5): its gradient reduction or
// FSDP's all-gather of its parameters.
enum class CollectiveKind : uint8_t { kReduce, kUnshard };
// What a range name says of it: FSDP2's own record_function names (torch 2.13,
// `_fsdp_param_group.py`): "FSDP::post_backward_reduce" (the reduce-scatter, once per step) and
// "FSDP::all_gather" (an unshard); nullopt for anything else.
std::optional<CollectiveKind> DataParallelCollectiveOf(std::string_view range_name);
// What an NCCL kernel's name says of it, for a process whose traces hold none of those ranges (a
// DDP job, whose all-reduce runs in the hooks of the last backward; a trace without
// torch.profiler's ranges): AllReduce and ReduceScatter kernels reduce, AllGather kernels
// unshard; nullopt for the rest (the pipeline's SendRecv, Broadcast, AllToAll, non-NCCL kernels).
std::optional<CollectiveKind> NcclCollectiveOf(std::string_view kernel_name);

// One such collective as measured, in a pipeline rank's iteration.
struct MeasuredCollective {
  CollectiveKind kind = CollectiveKind::kReduce;
  int32_t rank = 0;
  int32_t replica = 0;
  int32_t iteration = 0;  // that of the process's last op that started before it
  TimeNs start = 0;       // the range
  TimeNs end = 0;
  // The kernels launched inside it (NCCL's included), or its CPU duration in a process that ran
  // none (gloo: the collective runs inside the range).
  TimeNs busy = 0;
};

struct AttributionOptions {
  int pp = 0;                              // pipeline ranks P; 0: inferred from the traces
  Placement placement = Placement::kLoop;  // how local chunks map to stages
  bool cross_thread = true;                // see step 3 above
};

// A pipeline op as measured.
struct MeasuredOp {
  int32_t rank = 0;     // pipeline rank
  int32_t replica = 0;  // > 0: another data-parallel copy of this pipeline rank (see --pp)
  int32_t stage = 0;    // global stage
  OpKind kind = OpKind::kF;
  int32_t microbatch = 0;
  int32_t iteration = 0;
  TimeNs cpu_start = 0;  // the range
  TimeNs cpu_end = 0;
  TimeNs gpu_start = 0;  // projection span; equal to the CPU range when no kernels
  TimeNs gpu_end = 0;
  TimeNs busy = 0;      // union of the kernels' intervals; the CPU duration when no kernels
  int32_t kernels = 0;  // device activities attributed
  // False for a range that launched no kernels in a process that ran kernels: it measured no
  // device time (busy 0), and the costs leave it out (step 3 above).
  bool timed = true;
  int32_t peer_stage = -1;  // COMM: the other end of the hop, -1 unknown
  CommDirection direction = CommDirection::kNone;
  bool has_memory = false;  // allocation records fell inside the range
  int64_t memory_net = 0;   // bytes allocated minus released inside the range
  std::string name;         // the range name (or the kernel's, for bare NCCL kernels)
  std::string family;

  TimeNs start() const { return kernels > 0 ? gpu_start : cpu_start; }
  TimeNs end() const { return kernels > 0 ? gpu_end : cpu_end; }
};

struct Attribution {
  std::vector<MeasuredOp> ops;  // by rank, then start
  // The data-parallel collectives of the processes with ops (DataParallelCollectiveOf).
  std::vector<MeasuredCollective> collectives;
  // Per pipeline rank, the bytes FSDP's all-gathers add there (RawTrace::unsharded_bytes; the
  // largest of its replicas'), where the traces say.
  std::map<int32_t, int64_t> unsharded_bytes;
  // Per pipeline rank, the gradient bytes its reductions take in per step (RawTrace::reduced_bytes,
  // the largest of its replicas'), where the traces say.
  std::map<int32_t, int64_t> reduced_bytes;
  int ranks = 0;   // P
  int chunks = 1;  // stages per rank
  int num_stages = 0;
  // How stages map to ranks: inferred from the global stages the ops name, else the caller's
  // (AttributionOptions::placement). layout_known is false when the stages fit neither placement.
  Placement placement = Placement::kLoop;
  bool layout_known = true;
  std::string schedule_class;  // the torch class the traces name (RawTrace::schedule_class)
  std::string checkpointing;   // the job's activation checkpointing (CheckpointingOf)
  // Data-parallel replicas of each pipeline rank folded into the ops (MeasuredOp::replica), where
  // the traces say (the shim's pipeline groups, --pp over a larger world, ranks that only meet in
  // collectives); 0: not known.
  int data_parallel = 0;
  bool split = false;       // some rank ran W ops
  bool has_memory = false;  // some process recorded allocations
  int64_t kernels_total = 0;
  int64_t kernels_attributed = 0;    // to compute or comm ops
  int64_t kernels_cross_thread = 0;  // of those, through the cross-thread fallback
  std::map<std::string, int64_t> ops_by_family;
  std::vector<std::string> notes;  // one line each, for the user
};

Expected<Attribution> Attribute(const std::vector<RawTrace>& traces, const RuleSet& rules,
                                const AttributionOptions& options = {});

// Projection of the kernels launched inside given ranges of one process (step 3), for callers
// and tests that want it without the pipeline interpretation. `op_ranges` indexes
// trace.ranges; `is_comm[i]` says range i is communication (NCCL kernels count for it). Returns
// one entry per op range.
struct Projection {
  TimeNs busy = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  int32_t kernels = 0;
  int32_t cross_thread = 0;
};
std::vector<Projection> ProjectRanges(const RawTrace& trace, const std::vector<size_t>& op_ranges,
                                      const std::vector<bool>& is_comm, bool cross_thread);

// True for NCCL kernel names (substring "nccl", any case).
bool IsNcclKernel(std::string_view name);

}  // namespace zb::profiler

#endif  // ZBKIT_PROFILER_ATTRIBUTION_H_
