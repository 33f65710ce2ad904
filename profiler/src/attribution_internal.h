// SPDX-License-Identifier: Apache-2.0
// What the two halves of attribution (attribution.h) share: pass 1, classifying ranges and
// projecting kernels per process, is attribution.cpp; passes 2 and 3, ranks, stages, iterations and
// microbatches, are attribution_identities.cpp.
#ifndef ZBKIT_PROFILER_SRC_ATTRIBUTION_INTERNAL_H_
#define ZBKIT_PROFILER_SRC_ATTRIBUTION_INTERNAL_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "zbkit/profiler/attribution.h"

namespace zb::profiler::attribution_detail {

// Per-process result of the first pass.
struct ProcessOps {
  const RawTrace* trace = nullptr;
  std::vector<MeasuredOp> ops;
  std::vector<RangeMatch> matches;  // parallel to ops (bare NCCL ops: a COMM match)
  std::vector<TimeNs> iteration_starts;
  TimeNs last_iteration_end = 0;  // where the last iteration range ended
  int64_t recognized = 0;         // ops from rules (not bare NCCL kernels)
  int32_t rank = -1;              // pipeline rank
  int32_t replica = 0;
  // Some device activity has times: its ranges are timed by their kernels, not their CPU spans.
  bool device_process = false;
  // Its data-parallel collectives (rank, replica and iteration set once its ops have theirs).
  std::vector<MeasuredCollective> collectives;
};

// What pass 3 gathers over all processes.
struct PassThreeCounts {
  int32_t max_stage = -1;
  int32_t max_chunk = 0;
  bool local_chunks = false;                 // some op's stage came from a local chunk or none
  std::set<std::pair<int, int>> rank_stage;  // (rank, stage) of ops that name a global stage
  int64_t fifo_fallbacks = 0;
  int b_as_bw_ranks = 0;
};

// Pass 2: pipeline ranks of the processes with recognized ops. Returns those processes (those
// outside --pp dropped) and sets result.ranks; empty when no process has any.
// InvalidInput where --pp does not divide the processes' WORLD_SIZE.
Expected<std::vector<ProcessOps*>> AssignPipelineRanks(std::vector<ProcessOps>& processes,
                                                       const AttributionOptions& options,
                                                       Attribution& result);
// Pass 3 for one process: stages, B vs BW, iterations, microbatches.
void AssignOpIdentities(ProcessOps& proc, const AttributionOptions& options, Attribution& result,
                        PassThreeCounts& counts);
// The layout the ranks ran, from the global stages the ops name.
void InferLayout(const PassThreeCounts& counts, Attribution& result);
// The schedule class the traces name (the shim's metadata), "" when none or when they disagree.
std::string ScheduleClassOf(const std::vector<RawTrace>& traces, Attribution& result);
// The job's activation checkpointing from what each trace names (RawTrace::checkpointing): the
// one mode they agree on, "layer" for ranks with full and without, "mixed" otherwise, "" when
// none says (a note for a mode zbkit does not know).
std::string CheckpointingOf(const std::vector<RawTrace>& traces, Attribution& result);
// InvalidInput naming the first op one data-parallel replica of a pipeline rank ran and another
// did not (docs/data-parallel.md §3): replicas run the same order, so traces whose replicas differ
// are not one job's.
Status CheckReplicasAgree(const std::vector<ProcessOps*>& processes);
// One note on matched ranges nested inside other matched ranges of the same process.
void NoteNestedRanges(const std::vector<ProcessOps*>& processes, Attribution& result);

}  // namespace zb::profiler::attribution_detail

#endif  // ZBKIT_PROFILER_SRC_ATTRIBUTION_INTERNAL_H_
