// SPDX-License-Identifier: Apache-2.0
// Attribution, passes 2 and 3 (attribution_internal.h): the pipeline rank of each process, then
// per op its stage, B vs BW, iteration and microbatch; the layout and schedule class the traces
// show; the note on nested ranges.
#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "attribution_internal.h"
#include "zbkit/schemas/op_text.h"

namespace zb::profiler::attribution_detail {
namespace {

int32_t PeerStage(int32_t stage, CommDirection direction) {
  switch (direction) {
    case CommDirection::kSendForward:
      return stage + 1;
    case CommDirection::kRecvForward:
      return stage - 1;
    case CommDirection::kSendBackward:
      return stage - 1;
    case CommDirection::kRecvBackward:
      return stage + 1;
    case CommDirection::kNone:
      return -1;
  }
  return -1;
}

// What a process's ranges say of its communication. torch.profiler records c10d's dispatcher op
// for every call into a process group, whatever the backend: c10d::send, c10d::recv_ and
// c10d::recv_any_source_ are point-to-point, every other c10d:: op (allreduce_, broadcast_,
// _allgather_base_, alltoall_base_, barrier, ...) a collective. Kernel names cannot tell: NCCL
// runs all_to_all as SendRecv kernels (docs/range-names.md §6).
struct CommunicationSeen {
  bool point_to_point = false;
  std::string collective;  // the first collective's name, "" for none
};

CommunicationSeen CommunicationOf(const RawTrace& trace) {
  constexpr std::string_view kDispatcher = "c10d::";
  CommunicationSeen seen;
  for (const TraceRange& range : trace.ranges) {
    const std::string_view name = range.name;
    if (name.substr(0, kDispatcher.size()) != kDispatcher) continue;
    const std::string_view op = name.substr(kDispatcher.size());
    if (op.substr(0, 4) == "send" || op.substr(0, 4) == "recv") {
      seen.point_to_point = true;
    } else if (seen.collective.empty()) {
      seen.collective = name;
    }
  }
  return seen;
}

// Several ranks whose ops name no stage, whose traces show collectives and not one send or
// receive between any of them, are data-parallel (or sharded) copies of one stage, not a
// pipeline: a pipeline's ranks pass activations point to point. Reads them as --pp 1 does.
bool ReadAsReplicas(const std::vector<ProcessOps*>& with_ops, const std::set<int32_t>& present,
                    Attribution& result) {
  if (present.size() < 2) return false;
  std::string collective;
  for (const ProcessOps* proc : with_ops) {
    const CommunicationSeen seen = CommunicationOf(*proc->trace);
    if (seen.point_to_point) return false;
    if (collective.empty()) collective = seen.collective;
  }
  if (collective.empty()) return false;  // no communication recorded: nothing to tell by
  std::map<int32_t, int32_t> replica;
  for (int32_t rank : present)
    replica.emplace(rank, static_cast<int32_t>(replica.size()));
  for (ProcessOps* proc : with_ops) {
    proc->replica = replica[proc->rank];
    proc->rank = 0;
  }
  result.data_parallel = static_cast<int>(replica.size());
  result.notes.push_back("the traces hold " + std::to_string(present.size()) +
                         " ranks whose ops name no stage and which never send to one another (" +
                         collective +
                         " and other collectives only): read as data-parallel replicas of a "
                         "one-rank pipeline (--pp P reads them as a pipeline)");
  return true;
}

// Without --pp, a process's global rank is its pipeline rank only where its ops name global
// stages (then rank and stage must agree: InferLayout). Ops that name no stage take their stage
// from the pipeline rank, so the pipeline is the ranks the traces hold, numbered in order: one
// data-parallel rank 3 of 8 is a pipeline of one rank, not rank 3 of four with three empty; ranks
// that only ever meet in collectives are replicas of one (ReadAsReplicas).
void DensePipelineRanks(const std::vector<ProcessOps*>& with_ops, Attribution& result) {
  for (const ProcessOps* proc : with_ops) {
    for (const RangeMatch& match : proc->matches) {
      if (match.stage >= 0) return;
    }
  }
  std::set<int32_t> present;
  for (const ProcessOps* proc : with_ops)
    present.insert(proc->rank);
  if (ReadAsReplicas(with_ops, present, result)) return;
  std::map<int32_t, int32_t> pipeline_rank;
  std::string global_ranks;
  std::string pipeline_ranks;
  for (int32_t rank : present) {
    const int32_t dense = static_cast<int32_t>(pipeline_rank.size());
    pipeline_rank[rank] = dense;
    if (rank != dense && global_ranks.size() < 120) {
      global_ranks += (global_ranks.empty() ? "" : ", ") + std::to_string(rank);
      pipeline_ranks += (pipeline_ranks.empty() ? "" : ", ") + std::to_string(dense);
    }
  }
  if (global_ranks.empty()) return;
  for (ProcessOps* proc : with_ops)
    proc->rank = pipeline_rank[proc->rank];
  result.notes.push_back("the traces hold " + std::to_string(present.size()) +
                         " rank(s) and their ops name no stage: global rank(s) " + global_ranks +
                         " read as pipeline rank(s) " + pipeline_ranks +
                         " (--pp P places them in a larger pipeline)");
}

// Where the shim recorded each process's pipeline group (RawTrace::pipeline), that is the truth
// whatever the order of the job's device mesh: the pipeline rank is the rank in the stages'
// group, and the processes of different groups (told apart by the group's lowest global rank)
// are data-parallel replicas of one pipeline, numbered in that order. False, and nothing
// changed, where a process has none, the groups differ in size, or --pp says another size.
bool FromPipelineGroups(const std::vector<ProcessOps*>& with_ops, const AttributionOptions& options,
                        Attribution& result, int32_t& ranks) {
  int32_t size = 0;
  std::map<int32_t, int32_t> replica_of;  // the group's lowest global rank -> replica
  for (const ProcessOps* proc : with_ops) {
    const RawTrace::PipelineGroup& group = proc->trace->pipeline;
    if (group.size <= 0 || (size > 0 && group.size != size)) return false;
    size = group.size;
    replica_of.emplace(group.first, 0);
  }
  if (options.pp != 0 && options.pp != size) {
    result.notes.push_back("--pp " + std::to_string(options.pp) +
                           " differs from the pipeline group the stages were built on (" +
                           std::to_string(size) + " ranks): --pp is used");
    return false;
  }
  int32_t next = 0;
  for (auto& [first, replica] : replica_of)
    replica = next++;
  for (ProcessOps* proc : with_ops) {
    proc->rank = proc->trace->pipeline.rank;
    proc->replica = replica_of[proc->trace->pipeline.first];
  }
  if (replica_of.size() > 1) {
    result.notes.push_back(std::to_string(with_ops.size()) +
                           " processes: " + std::to_string(replica_of.size()) +
                           " data-parallel replicas of a " + std::to_string(size) +
                           "-rank pipeline, from the process groups its stages were built on "
                           "(every replica's ops count in the costs; the first's timeline is "
                           "recorded)");
  }
  ranks = size;
  result.data_parallel = static_cast<int>(replica_of.size());
  return true;
}

}  // namespace

// Pass 2: pipeline ranks of the processes with recognized ops. Returns those processes (those
// outside --pp dropped) and sets result.ranks; empty when no process has any.
Expected<std::vector<ProcessOps*>> AssignPipelineRanks(std::vector<ProcessOps>& processes,
                                                       const AttributionOptions& options,
                                                       Attribution& result) {
  std::vector<ProcessOps*> with_ops;
  for (ProcessOps& proc : processes) {
    if (proc.recognized > 0) with_ops.push_back(&proc);
  }
  if (with_ops.empty()) return with_ops;
  int32_t max_rank = -1;
  for (ProcessOps* proc : with_ops)
    max_rank = std::max(max_rank, proc->trace->process.rank);
  std::vector<ProcessOps*> unranked;
  for (ProcessOps* proc : with_ops) {
    if (proc->trace->process.rank < 0) unranked.push_back(proc);
  }
  std::sort(unranked.begin(), unranked.end(), [](const ProcessOps* a, const ProcessOps* b) {
    return a->trace->process.pid < b->trace->process.pid;
  });
  int32_t next = max_rank + 1;
  for (ProcessOps* proc : unranked)
    proc->rank = next++;
  for (ProcessOps* proc : with_ops) {
    if (proc->trace->process.rank >= 0) proc->rank = proc->trace->process.rank;
  }
  if (!unranked.empty() && with_ops.size() > 1) {
    result.notes.push_back(std::to_string(unranked.size()) +
                           " processes had no RANK; ranked in process-id order");
  }
  int32_t ranks = options.pp;
  if (FromPipelineGroups(with_ops, options, result, ranks)) {
    // the stages' own groups placed every process
  } else if (ranks == 0) {
    DensePipelineRanks(with_ops, result);
    for (ProcessOps* proc : with_ops)
      ranks = std::max(ranks, proc->rank + 1);
  } else {
    // Pipeline parallelism is the outermost dimension in Megatron and torchtitan: with
    // WORLD_SIZE = P * D, global rank g is pipeline rank g / D.
    std::vector<ProcessOps*> kept;
    for (ProcessOps* proc : with_ops) {
      const int32_t world = proc->trace->process.world_size;
      if (world > ranks && world % ranks != 0) {
        // Not P pipeline ranks times D replicas: no rank can be placed (docs/data-parallel.md §3).
        return InvalidInput("--pp " + std::to_string(ranks) + " does not divide the job's " +
                            std::to_string(world) +
                            " processes (WORLD_SIZE): a pipeline inside data parallelism runs "
                            "pipeline ranks x replicas of them");
      }
      if (world > ranks && world % ranks == 0) {
        const int32_t group = world / ranks;
        proc->replica = proc->rank % group;
        proc->rank = proc->rank / group;
        result.data_parallel = group;
      }
      if (proc->rank >= ranks) {
        result.notes.push_back("rank " + std::to_string(proc->rank) + " is outside --pp " +
                               std::to_string(ranks) + "; its ops were skipped");
        continue;
      }
      kept.push_back(proc);
    }
    with_ops = std::move(kept);
  }
  result.ranks = std::max(ranks, 1);
  return with_ops;
}

// The layout the ranks ran, from the global stages the ops name (PyTorch's `PP:<stage>F<mb>`):
// loop where every stage s ran on rank s mod p, else V where rank r ran stages r and 2p-1-r.
// Names that give only a local chunk (or none) cannot tell: then the placement is the one the
// caller gave (--layout). Anything else is recorded as no layout, with a note.
void InferLayout(const PassThreeCounts& counts, Attribution& result) {
  if (counts.local_chunks || counts.rank_stage.empty()) return;
  const int p = result.ranks;
  auto all_on = [&](Placement placement) {
    for (const auto& [rank, stage] : counts.rank_stage) {
      if (placement == Placement::kV && stage >= 2 * p) return false;
      if (RankOfStage(placement, p, stage) != rank) return false;
    }
    return true;
  };
  if (all_on(Placement::kLoop)) {
    result.placement = Placement::kLoop;
  } else if (all_on(Placement::kV)) {
    result.placement = Placement::kV;
  } else {
    result.layout_known = false;
    result.notes.push_back(
        "the traces' stages lie on their ranks in neither the loop nor the V "
        "placement: the profile records no layout");
  }
}

// The schedule class the traces name (the shim's metadata), "" when none or when they disagree.
std::string ScheduleClassOf(const std::vector<RawTrace>& traces, Attribution& result) {
  std::set<std::string> named;
  for (const RawTrace& trace : traces) {
    if (!trace.schedule_class.empty()) named.insert(trace.schedule_class);
  }
  if (named.size() > 1) {
    std::string list;
    for (const std::string& name : named)
      list += (list.empty() ? "" : ", ") + name;
    result.notes.push_back("the traces name different schedule classes (" + list +
                           "): the profile records none");
    return "";
  }
  return named.empty() ? "" : *named.begin();
}

std::string CheckpointingOf(const std::vector<RawTrace>& traces, Attribution& result) {
  std::set<std::string> named;
  for (const RawTrace& trace : traces) {
    if (trace.checkpointing.empty()) continue;
    if (!IsCheckpointingMode(trace.checkpointing)) {
      result.notes.push_back("a trace names an unknown activation checkpointing mode '" +
                             trace.checkpointing + "': the profile records none");
      return "";
    }
    named.insert(trace.checkpointing);
  }
  if (named.empty()) return "";
  // Ranks that checkpoint differently make a mixed job; one with full blocks and one without,
  // torchtitan's every-k-th layer seen rank by rank.
  if (named.size() == 1) return *named.begin();
  if (named == std::set<std::string>{"none", "full"} ||
      named == std::set<std::string>{"none", "full", "layer"} ||
      named == std::set<std::string>{"none", "layer"} ||
      named == std::set<std::string>{"full", "layer"}) {
    return "layer";
  }
  return "mixed";
}

namespace {

// Pass 3a: ranks, stages and B vs BW of one process's ops; ops on chunks the placement lacks are
// dropped, and the owner indices of bare NCCL ops are renumbered accordingly.
void AssignStages(ProcessOps& proc, const AttributionOptions& options, Attribution& result,
                  PassThreeCounts& counts) {
  bool has_w = false;
  for (const MeasuredOp& op : proc.ops)
    has_w = has_w || op.kind == OpKind::kW;
  bool any_b_or_bw = false;
  std::vector<MeasuredOp> kept;
  std::vector<RangeMatch> kept_matches;
  std::vector<int64_t> new_index(proc.ops.size(), -1);
  for (size_t i = 0; i < proc.ops.size(); ++i) {
    MeasuredOp& op = proc.ops[i];
    const RangeMatch& match = proc.matches[i];
    op.rank = proc.rank;
    op.replica = proc.replica;
    if (match.b_or_bw && !has_w) {
      op.kind = OpKind::kBW;
      any_b_or_bw = true;
    }
    if (match.stage >= 0) {
      op.stage = match.stage;
      counts.rank_stage.insert({proc.rank, op.stage});
    } else if (match.chunk >= 0) {
      if (options.placement == Placement::kV && match.chunk > 1) {
        result.notes.push_back("chunk " + std::to_string(match.chunk) + " of '" + op.name +
                               "' does not exist in the V placement (2 chunks); skipped");
        continue;
      }
      op.stage = StageOfChunk(options.placement, result.ranks, proc.rank, match.chunk);
      counts.max_chunk = std::max(counts.max_chunk, match.chunk);
      counts.local_chunks = true;
    } else {
      op.stage = StageOfChunk(options.placement, result.ranks, proc.rank, 0);
      counts.local_chunks = true;
    }
    op.peer_stage = PeerStage(op.stage, op.direction);
    counts.max_stage = std::max(counts.max_stage, op.stage);
    new_index[i] = static_cast<int64_t>(kept.size());
    kept.push_back(std::move(op));
    kept_matches.push_back(match);
  }
  if (any_b_or_bw) ++counts.b_as_bw_ranks;
  proc.ops = std::move(kept);
  proc.matches = std::move(kept_matches);
  for (MeasuredOp& op : proc.ops) {
    if (op.microbatch <= -2) {  // a bare NCCL op's owner, renumbered
      const int64_t owner = new_index[static_cast<size_t>(-2 - op.microbatch)];
      op.microbatch = owner >= 0 ? static_cast<int32_t>(-2 - owner) : -1;
    }
  }
}

// Pass 3b: iterations, from iteration ranges where there are any, else a new iteration starts
// when a (stage, microbatch) forward repeats. `order` is the ops' time order. Ops after the end of
// the last iteration range that repeat an op of that iteration (same kind, stage, microbatch)
// form one more iteration with the others after it: the one a job stopped in, whose own range
// never ended (the costs leave it out when it is short of ops).
void AssignIterations(ProcessOps& proc, const std::vector<size_t>& order) {
  if (!proc.iteration_starts.empty()) {
    bool any_before = false;
    for (MeasuredOp& op : proc.ops) {
      const auto& starts = proc.iteration_starts;
      op.iteration =
          static_cast<int32_t>(std::upper_bound(starts.begin(), starts.end(), op.cpu_start) -
                               starts.begin()) -
          1;
      any_before = any_before || op.iteration < 0;
    }
    const int32_t last = static_cast<int32_t>(proc.iteration_starts.size()) - 1;
    std::set<std::tuple<OpKind, int32_t, int32_t>> in_last;
    bool repeated = false;
    for (const MeasuredOp& op : proc.ops) {
      if (op.iteration == last && op.cpu_start < proc.last_iteration_end && op.microbatch >= 0) {
        in_last.emplace(op.kind, op.stage, op.microbatch);
      }
    }
    for (const MeasuredOp& op : proc.ops) {
      repeated = repeated || (op.cpu_start >= proc.last_iteration_end && op.microbatch >= 0 &&
                              in_last.count({op.kind, op.stage, op.microbatch}) > 0);
    }
    for (MeasuredOp& op : proc.ops) {
      if (repeated && op.cpu_start >= proc.last_iteration_end) op.iteration = last + 1;
      if (any_before) ++op.iteration;
    }
    return;
  }
  int32_t iteration = 0;
  std::set<std::pair<int32_t, int32_t>> seen;  // (stage, mb) of F in this iteration
  for (size_t i : order) {
    MeasuredOp& op = proc.ops[i];
    if (op.kind == OpKind::kF && op.microbatch >= 0) {
      if (!seen.emplace(op.stage, op.microbatch).second) {
        ++iteration;
        seen.clear();
        seen.emplace(op.stage, op.microbatch);
      }
    }
    op.iteration = iteration;
  }
}

// Pass 3c: microbatches in FIFO order where the name carries none; then bare NCCL ops take the
// microbatch of the op that launched them.
void AssignMicrobatches(ProcessOps& proc, const std::vector<size_t>& order,
                        PassThreeCounts& counts) {
  std::map<std::tuple<int32_t, int32_t>, int32_t> forwards;  // (stage, iter) -> F count
  std::map<std::tuple<int32_t, int32_t>, std::deque<int32_t>> awaiting_b;  // F mbs
  std::map<std::tuple<int32_t, int32_t>, std::deque<int32_t>> awaiting_w;  // B mbs
  auto take = [](std::deque<int32_t>& queue, int32_t mb) {
    if (mb < 0) {
      if (queue.empty()) return int32_t{-1};
      const int32_t front = queue.front();
      queue.pop_front();
      return front;
    }
    auto it = std::find(queue.begin(), queue.end(), mb);
    if (it != queue.end()) queue.erase(it);
    return mb;
  };
  for (size_t i : order) {
    MeasuredOp& op = proc.ops[i];
    const auto key = std::make_tuple(op.stage, op.iteration);
    switch (op.kind) {
      case OpKind::kF: {
        int32_t& count = forwards[key];
        if (op.microbatch < 0) op.microbatch = count;
        ++count;
        awaiting_b[key].push_back(op.microbatch);
        break;
      }
      case OpKind::kB:
      case OpKind::kBW: {
        op.microbatch = take(awaiting_b[key], op.microbatch);
        if (op.kind == OpKind::kB && op.microbatch >= 0) awaiting_w[key].push_back(op.microbatch);
        break;
      }
      case OpKind::kW:
        op.microbatch = take(awaiting_w[key], op.microbatch);
        break;
      case OpKind::kComm:
        break;
    }
    if (op.kind != OpKind::kComm && op.microbatch < 0) {
      ++counts.fifo_fallbacks;
      op.microbatch = 0;
    }
  }
  for (MeasuredOp& op : proc.ops) {
    if (op.kind != OpKind::kComm) continue;
    if (op.microbatch <= -2) {
      const size_t owner = static_cast<size_t>(-2 - op.microbatch);
      op.microbatch = owner < proc.ops.size() ? std::max(proc.ops[owner].microbatch, 0) : 0;
    } else if (op.microbatch < 0) {
      op.microbatch = 0;
    }
  }
}

}  // namespace

// Pass 3 for one process: stages, B vs BW, iterations, microbatches.
void AssignOpIdentities(ProcessOps& proc, const AttributionOptions& options, Attribution& result,
                        PassThreeCounts& counts) {
  AssignStages(proc, options, result, counts);
  // Time order (CPU start); bare NCCL ops remember their owner by index, so map first.
  std::vector<size_t> order(proc.ops.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return proc.ops[a].cpu_start < proc.ops[b].cpu_start;
  });
  AssignIterations(proc, order);
  AssignMicrobatches(proc, order, counts);
}

// Matched ranges inside other matched ranges of the same process (a rule for "ProfilerStep#"
// around "## forward ##"): each kernel counts once, for the innermost range that launched it, so
// the outer op's gpu time leaves out the inner ones' kernels and its span covers theirs. Said in
// one note with the first example, since the outer op's figures read differently.
void NoteNestedRanges(const std::vector<ProcessOps*>& processes, Attribution& result) {
  int64_t nested = 0;
  std::string example;
  for (const ProcessOps* proc : processes) {
    std::vector<size_t> compute;
    for (size_t i = 0; i < proc->ops.size(); ++i) {
      if (proc->ops[i].kind != OpKind::kComm) compute.push_back(i);
    }
    std::stable_sort(compute.begin(), compute.end(), [&](size_t a, size_t b) {
      const MeasuredOp& x = proc->ops[a];
      const MeasuredOp& y = proc->ops[b];
      return x.cpu_start < y.cpu_start || (x.cpu_start == y.cpu_start && x.cpu_end > y.cpu_end);
    });
    const MeasuredOp* outer = nullptr;  // the op reaching furthest so far
    for (size_t i : compute) {
      const MeasuredOp& op = proc->ops[i];
      if (outer != nullptr && op.cpu_end <= outer->cpu_end && op.cpu_end > op.cpu_start) {
        if (nested++ == 0) example = "'" + op.name + "' inside '" + outer->name + "'";
        continue;
      }
      outer = &op;
    }
  }
  if (nested > 0) {
    result.notes.push_back(std::to_string(nested) + " matched range(s) nest inside others (" +
                           example +
                           "): each kernel counts once, for the innermost range, so an outer "
                           "op's gpu_ms leaves out the inner ones' kernels");
  }
}

Status CheckReplicasAgree(const std::vector<ProcessOps*>& processes) {
  using OpKey = std::tuple<int32_t, OpKind, int32_t>;         // (stage, kind, microbatch)
  std::map<int32_t, std::map<int32_t, std::set<OpKey>>> ran;  // rank -> replica -> compute ops
  for (const ProcessOps* proc : processes) {
    std::set<OpKey>& ops = ran[proc->rank][proc->replica];
    for (const MeasuredOp& op : proc->ops) {
      if (op.kind != OpKind::kComm) ops.insert({op.stage, op.kind, op.microbatch});
    }
  }
  for (const auto& [rank, replicas] : ran) {
    const auto& [first_replica, first] = *replicas.begin();
    for (const auto& [replica, ops] : replicas) {
      if (ops == first) continue;
      // The first op one of the two ran and the other did not.
      std::vector<OpKey> only;
      std::set_symmetric_difference(first.begin(), first.end(), ops.begin(), ops.end(),
                                    std::back_inserter(only));
      const auto& [stage, kind, microbatch] = only.front();
      const bool in_first = first.count(only.front()) > 0;
      return InvalidInput("the data-parallel replicas of pipeline rank " + std::to_string(rank) +
                          " disagree: " + "replica " +
                          std::to_string(in_first ? first_replica : replica) + " ran " +
                          FormatOp(kind, stage, microbatch) + ", replica " +
                          std::to_string(in_first ? replica : first_replica) +
                          " did not (replicas run the same order; give one job's traces)");
    }
  }
  return Status::Ok();
}

}  // namespace zb::profiler::attribution_detail
