// SPDX-License-Identifier: Apache-2.0
// Attribution of raw traces to pipeline ops (attribution.h): pass 1, the classification of ranges
// and the projection of kernels onto the ranges that launched them, and Attribute, which runs the
// passes; ranks, stages, iterations and microbatches (passes 2 and 3) are in
// attribution_identities.cpp.
#include "zbkit/profiler/attribution.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "attribution_internal.h"

namespace zb::profiler {
using namespace attribution_detail;
namespace {

// Where a device activity went.
struct Assignment {
  int64_t op = -1;  // index into the op-range list, -1: none
  bool cross_thread = false;
  bool launched = false;  // its launch record was found
};

// For each query time (sorted ascending), the innermost range of `sorted` (indices into
// `ranges`, sorted by start ascending then end descending) that contains it, or -1. Innermost =
// the latest-starting containing range. One sweep: ranges enter `active` when they start and
// leave from the back once they end.
void Innermost(const std::vector<TraceRange>& ranges, const std::vector<size_t>& sorted,
               const std::vector<std::pair<TimeNs, size_t>>& queries,
               std::vector<int64_t>& result) {
  std::vector<size_t> active;
  size_t next = 0;
  for (const auto& [time, query] : queries) {
    while (next < sorted.size() && ranges[sorted[next]].start <= time) {
      active.push_back(sorted[next++]);
    }
    while (!active.empty() && ranges[active.back()].end < time)
      active.pop_back();
    result[query] = -1;
    for (size_t k = active.size(); k-- > 0;) {
      if (ranges[active[k]].end >= time) {
        result[query] = static_cast<int64_t>(active[k]);
        break;
      }
    }
  }
}

// Assigns every activity of `trace` to one of `op_ranges` (indices into trace.ranges) or none.
std::vector<Assignment> AssignActivities(const RawTrace& trace,
                                         const std::vector<size_t>& op_ranges, bool cross_thread) {
  std::vector<Assignment> assignment(trace.activities.size());
  std::unordered_map<int64_t, const Launch*> launch_of;
  launch_of.reserve(trace.launches.size());
  for (const Launch& launch : trace.launches)
    launch_of.emplace(launch.correlation, &launch);

  // Op ranges per thread, and the position of each range in op_ranges.
  std::map<int64_t, std::vector<size_t>> ranges_by_thread;
  std::unordered_map<size_t, int64_t> op_index;
  for (size_t i = 0; i < op_ranges.size(); ++i) {
    const TraceRange& range = trace.ranges[op_ranges[i]];
    ranges_by_thread[range.thread].push_back(op_ranges[i]);
    op_index.emplace(op_ranges[i], static_cast<int64_t>(i));
  }
  for (auto& [thread, list] : ranges_by_thread) {
    std::sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      const TraceRange& x = trace.ranges[a];
      const TraceRange& y = trace.ranges[b];
      if (x.start != y.start) return x.start < y.start;
      if (x.end != y.end) return x.end > y.end;
      return a < b;
    });
  }

  // Launch times grouped by launching thread.
  std::map<int64_t, std::vector<std::pair<TimeNs, size_t>>> queries_by_thread;
  for (size_t a = 0; a < trace.activities.size(); ++a) {
    auto it = launch_of.find(trace.activities[a].correlation);
    if (it == launch_of.end()) continue;
    assignment[a].launched = true;
    queries_by_thread[it->second->thread].emplace_back(it->second->time, a);
  }

  std::vector<std::pair<TimeNs, size_t>> leftover;
  std::vector<int64_t> found(trace.activities.size(), -1);
  for (auto& [thread, queries] : queries_by_thread) {
    std::sort(queries.begin(), queries.end());
    auto ranges = ranges_by_thread.find(thread);
    if (ranges == ranges_by_thread.end()) {
      leftover.insert(leftover.end(), queries.begin(), queries.end());
      continue;
    }
    Innermost(trace.ranges, ranges->second, queries, found);
    for (const auto& [time, a] : queries) {
      if (found[a] >= 0) {
        assignment[a].op = op_index[static_cast<size_t>(found[a])];
      } else {
        leftover.emplace_back(time, a);
      }
    }
  }

  if (cross_thread && !leftover.empty() && !ranges_by_thread.empty()) {
    std::sort(leftover.begin(), leftover.end());
    // How many other threads have an op range open at each leftover launch; only an unambiguous
    // one is taken.
    std::vector<int> hits(trace.activities.size(), 0);
    std::vector<int64_t> candidate(trace.activities.size(), -1);
    for (const auto& [thread, list] : ranges_by_thread) {
      Innermost(trace.ranges, list, leftover, found);
      for (const auto& [time, a] : leftover) {
        if (found[a] < 0) continue;
        ++hits[a];
        candidate[a] = op_index[static_cast<size_t>(found[a])];
      }
    }
    for (const auto& [time, a] : leftover) {
      if (hits[a] == 1) {
        assignment[a].op = candidate[a];
        assignment[a].cross_thread = true;
      }
    }
  }
  return assignment;
}

// Union length of intervals (sorted in place).
TimeNs UnionLength(std::vector<std::pair<TimeNs, TimeNs>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  TimeNs total = 0;
  TimeNs cur_start = 0;
  TimeNs cur_end = 0;
  bool open = false;
  for (const auto& [start, end] : intervals) {
    if (!open || start > cur_end) {
      if (open) total += cur_end - cur_start;
      cur_start = start;
      cur_end = end;
      open = true;
    } else {
      cur_end = std::max(cur_end, end);
    }
  }
  if (open) total += cur_end - cur_start;
  return total;
}

bool ValidActivity(const DeviceActivity& activity) {
  // CUPTI reports start == end == 0 for kernels it could not time: count, never average.
  return !(activity.start == 0 && activity.end == 0) && activity.end >= activity.start;
}

}  // namespace

bool IsNcclKernel(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) == 'n' &&
        std::tolower(static_cast<unsigned char>(name[i + 1])) == 'c' &&
        std::tolower(static_cast<unsigned char>(name[i + 2])) == 'c' &&
        std::tolower(static_cast<unsigned char>(name[i + 3])) == 'l') {
      return true;
    }
  }
  return false;
}

std::vector<Projection> ProjectRanges(const RawTrace& trace, const std::vector<size_t>& op_ranges,
                                      const std::vector<bool>& is_comm, bool cross_thread) {
  const std::vector<Assignment> assignment = AssignActivities(trace, op_ranges, cross_thread);
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> intervals(op_ranges.size());
  std::vector<Projection> result(op_ranges.size());
  for (size_t a = 0; a < trace.activities.size(); ++a) {
    const DeviceActivity& activity = trace.activities[a];
    if (assignment[a].op < 0 || !ValidActivity(activity)) continue;
    const size_t op = static_cast<size_t>(assignment[a].op);
    if (IsNcclKernel(activity.name) && !(op < is_comm.size() && is_comm[op])) continue;
    Projection& p = result[op];
    if (p.kernels == 0) {
      p.start = activity.start;
      p.end = activity.end;
    } else {
      p.start = std::min(p.start, activity.start);
      p.end = std::max(p.end, activity.end);
    }
    ++p.kernels;
    if (assignment[a].cross_thread) ++p.cross_thread;
    intervals[op].emplace_back(activity.start, activity.end);
  }
  for (size_t i = 0; i < result.size(); ++i)
    result[i].busy = UnionLength(intervals[i]);
  return result;
}

namespace {

// What pass 1 counts over all processes, for the notes.
struct PassOneCounts {
  int64_t invalid_kernels = 0;
  int64_t unknown_pp_names = 0;
  int64_t merged_nested = 0;  // op ranges inside an op range of the same name and thread
  std::string merged_example;
  int64_t untimed_ops = 0;  // ops without kernels in a process that has device activity
};

// Keeps, of op ranges nested inside an op range of the same name and domain on the same thread
// (a harness that wraps `forward` in a `forward` of its own, a recursive annotation), only the
// outermost: they are one op, and the kernels launched inside any of them are that op's.
void MergeNestedEqualRanges(const RawTrace& trace, std::vector<size_t>& op_ranges,
                            std::vector<RangeMatch>& matches, PassOneCounts& counts) {
  std::vector<size_t> order(op_ranges.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TraceRange& x = trace.ranges[op_ranges[a]];
    const TraceRange& y = trace.ranges[op_ranges[b]];
    if (x.thread != y.thread) return x.thread < y.thread;
    return x.start < y.start || (x.start == y.start && x.end > y.end);
  });
  std::vector<bool> drop(op_ranges.size(), false);
  std::vector<size_t> open;  // ranges of the current thread that contain the next one's start
  for (size_t i : order) {
    const TraceRange& range = trace.ranges[op_ranges[i]];
    while (!open.empty()) {
      const TraceRange& top = trace.ranges[op_ranges[open.back()]];
      if (top.thread == range.thread && top.end >= range.end) break;
      open.pop_back();
    }
    for (size_t outer : open) {
      const TraceRange& candidate = trace.ranges[op_ranges[outer]];
      if (candidate.name == range.name && candidate.domain == range.domain) {
        drop[i] = true;
        if (counts.merged_nested++ == 0) counts.merged_example = range.name;
        break;
      }
    }
    if (!drop[i]) open.push_back(i);
  }
  size_t kept = 0;
  for (size_t i = 0; i < op_ranges.size(); ++i) {
    if (drop[i]) continue;
    if (kept != i) {
      op_ranges[kept] = op_ranges[i];
      matches[kept] = std::move(matches[i]);
    }
    ++kept;
  }
  op_ranges.resize(kept);
  matches.resize(kept);
}

// Pass 1a: classifies every range by the rules; op ranges become ops (their indices into
// trace.ranges in `op_ranges`), iteration ranges mark iteration starts.
void ClassifyRanges(const RawTrace& trace, const RuleSet& rules, ProcessOps& proc,
                    std::vector<size_t>& op_ranges, std::vector<bool>& is_comm,
                    PassOneCounts& counts) {
  std::unordered_map<std::string, RangeMatch> cache;
  for (size_t i = 0; i < trace.ranges.size(); ++i) {
    const TraceRange& range = trace.ranges[i];
    std::string key = range.domain;
    key += '\x1f';
    key += range.name;
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, rules.Match(range.name, range.domain)).first;
    const RangeMatch& match = it->second;
    if (match.role == RangeRole::kIteration) {
      proc.iteration_starts.push_back(range.start);
      proc.last_iteration_end = std::max(proc.last_iteration_end, range.end);
    } else if (match.role == RangeRole::kOp) {
      if (range.end < range.start) continue;
      op_ranges.push_back(i);
      proc.matches.push_back(match);
    } else if (match.role == RangeRole::kNone && range.name.rfind("PP:", 0) == 0) {
      ++counts.unknown_pp_names;
    }
  }
  MergeNestedEqualRanges(trace, op_ranges, proc.matches, counts);
  for (const RangeMatch& match : proc.matches)
    is_comm.push_back(match.kind == OpKind::kComm);
  std::sort(proc.iteration_starts.begin(), proc.iteration_starts.end());
  proc.ops.resize(op_ranges.size());
  for (size_t i = 0; i < op_ranges.size(); ++i) {
    const TraceRange& range = trace.ranges[op_ranges[i]];
    MeasuredOp& op = proc.ops[i];
    op.kind = proc.matches[i].kind;
    op.microbatch = proc.matches[i].microbatch;
    op.direction = proc.matches[i].direction;
    op.cpu_start = range.start;
    op.cpu_end = range.end;
    op.name = range.name;
    op.family = proc.matches[i].family;
  }
  proc.recognized = static_cast<int64_t>(op_ranges.size());
}

// Pass 1b: projects every device activity onto the op that launched it (busy = union of its
// kernels; an op without kernels keeps its CPU range). Returns the NCCL kernels no
// communication op owns.
std::vector<size_t> ProjectActivities(const RawTrace& trace,
                                      const std::vector<Assignment>& assignment,
                                      const std::vector<bool>& is_comm, ProcessOps& proc,
                                      Attribution& result, PassOneCounts& counts) {
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> intervals(proc.ops.size());
  std::vector<size_t> bare_nccl;
  bool& device_process = proc.device_process;  // some activity has times (see below)
  for (size_t a = 0; a < trace.activities.size(); ++a) {
    const DeviceActivity& activity = trace.activities[a];
    ++result.kernels_total;
    if (!ValidActivity(activity)) {
      ++counts.invalid_kernels;
      continue;
    }
    device_process = true;
    const int64_t op_index = assignment[a].op;
    const bool nccl = IsNcclKernel(activity.name);
    if (op_index >= 0 && (!nccl || is_comm[op_index])) {
      MeasuredOp& op = proc.ops[op_index];
      if (op.kernels == 0) {
        op.gpu_start = activity.start;
        op.gpu_end = activity.end;
      } else {
        op.gpu_start = std::min(op.gpu_start, activity.start);
        op.gpu_end = std::max(op.gpu_end, activity.end);
      }
      ++op.kernels;
      intervals[op_index].emplace_back(activity.start, activity.end);
      ++result.kernels_attributed;
      if (assignment[a].cross_thread) ++result.kernels_cross_thread;
    } else if (nccl) {
      bare_nccl.push_back(a);
    }
  }
  // Device time comes from device activity only: in a process that ran kernels, a range that
  // launched none measured no device time (its CPU span is not one); a CPU-only process's ranges
  // are timed by their CPU span.
  for (size_t i = 0; i < proc.ops.size(); ++i) {
    MeasuredOp& op = proc.ops[i];
    if (op.kernels > 0) {
      op.busy = UnionLength(intervals[i]);
    } else {
      op.timed = !device_process;
      op.busy = op.timed ? op.cpu_end - op.cpu_start : 0;
      op.gpu_start = op.cpu_start;
      op.gpu_end = op.cpu_end;
      if (!op.timed) ++counts.untimed_ops;
    }
  }
  return bare_nccl;
}

// Pass 1c: NCCL kernels outside communication ranges are still communication: one COMM op each,
// in the timeline (no hop known, so they do not enter the per-hop cost).
void AddBareNcclOps(const RawTrace& trace, const std::vector<Assignment>& assignment,
                    const std::vector<size_t>& bare_nccl, ProcessOps& proc, Attribution& result) {
  for (size_t a : bare_nccl) {
    const DeviceActivity& activity = trace.activities[a];
    MeasuredOp op;
    op.kind = OpKind::kComm;
    op.microbatch = -1;
    const int64_t owner = assignment[a].op;
    // Encodes the owner's index until its microbatch is known (pass 3).
    if (owner >= 0) op.microbatch = static_cast<int32_t>(-2 - owner);
    op.cpu_start = op.cpu_end = activity.start;
    op.gpu_start = activity.start;
    op.gpu_end = activity.end;
    op.busy = activity.end - activity.start;
    op.kernels = 1;
    op.name = activity.name;
    op.family = "nccl";
    RangeMatch match;
    match.role = RangeRole::kOp;
    match.kind = OpKind::kComm;
    match.family = "nccl";
    proc.ops.push_back(std::move(op));
    proc.matches.push_back(match);
    ++result.kernels_attributed;
  }
}

// Pass 1d: memory, allocations net of releases inside each op's CPU range.
void AddMemory(const RawTrace& trace, ProcessOps& proc, Attribution& result) {
  if (trace.memory.empty()) return;
  result.has_memory = true;
  std::vector<std::pair<TimeNs, int64_t>> events;
  events.reserve(trace.memory.size());
  for (const MemoryEvent& event : trace.memory)
    events.emplace_back(event.time, event.bytes);
  std::sort(events.begin(), events.end());
  std::vector<int64_t> prefix(events.size() + 1, 0);
  for (size_t i = 0; i < events.size(); ++i)
    prefix[i + 1] = prefix[i] + events[i].second;
  for (MeasuredOp& op : proc.ops) {
    auto lo =
        std::lower_bound(events.begin(), events.end(), std::make_pair(op.cpu_start, INT64_MIN));
    auto hi = std::upper_bound(events.begin(), events.end(), std::make_pair(op.cpu_end, INT64_MAX));
    // The trace records every allocation of the process, so an op with none inside it measured
    // a net change of 0 (a first stage's B, which has no input gradient to compute, frees
    // nothing: everything its forward saved stays for W, M_W = M_B).
    op.has_memory = true;
    op.memory_net = hi > lo ? prefix[hi - events.begin()] - prefix[lo - events.begin()] : 0;
  }
}

// Pass 1e, without FSDP's ranges: each NCCL collective kernel (NcclCollectiveOf) is one, its
// device time, placed at its launch.
void CollectCollectiveKernels(const RawTrace& trace, ProcessOps& proc) {
  std::unordered_map<int64_t, TimeNs> launched;
  for (const Launch& launch : trace.launches)
    launched.emplace(launch.correlation, launch.time);
  for (const DeviceActivity& activity : trace.activities) {
    const std::optional<CollectiveKind> kind = NcclCollectiveOf(activity.name);
    if (!kind || !ValidActivity(activity)) continue;
    const auto launch = launched.find(activity.correlation);
    MeasuredCollective collective;
    collective.kind = *kind;
    collective.start = collective.end = launch != launched.end() ? launch->second : activity.start;
    collective.busy = activity.end - activity.start;
    proc.collectives.push_back(collective);
  }
}

// Pass 1e on CPUs, without FSDP's ranges: DDP over gloo. DDP's reducer enqueues each bucket's
// all-reduce (`c10d::allreduce_`) from autograd hooks inside the stage's backward, and gloo runs
// it on a thread of its own (`gloo:all_reduce`): that span is the reduction, the first not yet
// taken that starts after the enqueue (gloo runs a group's work in order). An all-reduce enqueued
// outside every backward (a loss logged, a gradient norm) is not a gradient reduction.
void CollectGlooReductions(const RawTrace& trace, ProcessOps& proc) {
  std::vector<std::pair<TimeNs, TimeNs>> backwards;
  for (const MeasuredOp& op : proc.ops) {
    if (op.kind == OpKind::kB || op.kind == OpKind::kW || op.kind == OpKind::kBW) {
      backwards.emplace_back(op.cpu_start, op.cpu_end);
    }
  }
  std::sort(backwards.begin(), backwards.end());
  auto in_backward = [&backwards](TimeNs t) {
    auto after = std::upper_bound(backwards.begin(), backwards.end(), std::make_pair(t, INT64_MAX));
    for (auto it = backwards.begin(); it != after; ++it) {
      if (t <= it->second) return true;  // ranges may nest (a W inside a BW): look at each
    }
    return false;
  };
  std::vector<const TraceRange*> enqueued, works;
  for (const TraceRange& range : trace.ranges) {
    if (range.end < range.start) continue;
    if (range.name == "c10d::allreduce_" && in_backward(range.start)) enqueued.push_back(&range);
    if (range.name == "gloo:all_reduce") works.push_back(&range);
  }
  auto by_start = [](const TraceRange* a, const TraceRange* b) { return a->start < b->start; };
  std::sort(enqueued.begin(), enqueued.end(), by_start);
  std::sort(works.begin(), works.end(), by_start);
  // Both in start order: the work an enqueue takes is the first at or after it, and a work passed
  // over (started before its enqueue) cannot be a later enqueue's either: one cursor.
  auto work = works.begin();
  for (const TraceRange* enqueue : enqueued) {
    while (work != works.end() && (*work)->start < enqueue->start)
      ++work;
    if (work == works.end()) break;
    MeasuredCollective collective;
    collective.kind = CollectiveKind::kReduce;
    collective.start = (*work)->start;
    collective.end = (*work)->end;
    collective.busy = (*work)->end - (*work)->start;
    proc.collectives.push_back(collective);
    ++work;
  }
}

// Pass 1e: the process's data-parallel collectives, timed like ops (the kernels launched inside,
// NCCL's counting; the CPU range in a process without device activity). FSDP's ranges where the
// trace has them, else the NCCL collective kernels on a device and DDP's gloo work on CPUs.
void CollectCollectives(const RawTrace& trace, bool cross_thread, ProcessOps& proc) {
  // After ProjectActivities: proc.device_process says how the ranges are timed.
  std::vector<size_t> ranges;
  std::vector<CollectiveKind> kinds;
  for (size_t i = 0; i < trace.ranges.size(); ++i) {
    const TraceRange& range = trace.ranges[i];
    if (range.end < range.start) continue;
    if (const std::optional<CollectiveKind> kind = DataParallelCollectiveOf(range.name)) {
      ranges.push_back(i);
      kinds.push_back(*kind);
    }
  }
  if (ranges.empty()) {
    if (proc.device_process) {
      CollectCollectiveKernels(trace, proc);
    } else {
      CollectGlooReductions(trace, proc);
    }
    return;
  }
  const std::vector<Projection> projected =
      ProjectRanges(trace, ranges, std::vector<bool>(ranges.size(), true), cross_thread);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const TraceRange& range = trace.ranges[ranges[i]];
    MeasuredCollective collective;
    collective.kind = kinds[i];
    collective.start = range.start;
    collective.end = range.end;
    collective.busy = projected[i].kernels > 0 ? projected[i].busy
                      : proc.device_process    ? 0
                                               : range.end - range.start;
    proc.collectives.push_back(collective);
  }
}

// Pass 1 for one process: classify ranges and project kernels.
ProcessOps CollectProcessOps(const RawTrace& trace, const RuleSet& rules,
                             const AttributionOptions& options, Attribution& result,
                             PassOneCounts& counts) {
  ProcessOps proc;
  proc.trace = &trace;
  std::vector<size_t> op_ranges;
  std::vector<bool> is_comm;
  ClassifyRanges(trace, rules, proc, op_ranges, is_comm, counts);
  const std::vector<Assignment> assignment =
      AssignActivities(trace, op_ranges, options.cross_thread);
  const std::vector<size_t> bare_nccl =
      ProjectActivities(trace, assignment, is_comm, proc, result, counts);
  if (proc.recognized > 0) AddBareNcclOps(trace, assignment, bare_nccl, proc, result);
  AddMemory(trace, proc, result);
  if (proc.recognized > 0) CollectCollectives(trace, options.cross_thread, proc);
  return proc;
}

}  // namespace

Expected<Attribution> Attribute(const std::vector<RawTrace>& traces, const RuleSet& rules,
                                const AttributionOptions& options) {
  if (options.pp < 0) return UsageError("--pp must be >= 1");
  Attribution result;
  result.placement = options.placement;

  // ---- Pass 1: per process, classify ranges and project kernels. ----
  std::vector<ProcessOps> processes;
  PassOneCounts pass_one;
  for (const RawTrace& trace : traces)
    processes.push_back(CollectProcessOps(trace, rules, options, result, pass_one));
  if (pass_one.invalid_kernels > 0) {
    result.notes.push_back(std::to_string(pass_one.invalid_kernels) +
                           " device activities had no timestamps and were not counted");
  }
  if (pass_one.merged_nested > 0) {
    result.notes.push_back(std::to_string(pass_one.merged_nested) +
                           " matched range(s) lay inside a range of the same name on the same "
                           "thread (e.g. '" +
                           pass_one.merged_example +
                           "'): each such nest is one op, timed by the kernels launched anywhere "
                           "inside the outermost range");
  }
  if (pass_one.untimed_ops > 0) {
    result.notes.push_back(std::to_string(pass_one.untimed_ops) +
                           " op(s) launched no kernels in a process that ran kernels: no device "
                           "time was measured for them, and the costs leave them out");
  }
  if (pass_one.unknown_pp_names > 0) {
    result.notes.push_back(std::to_string(pass_one.unknown_pp_names) +
                           " PP: ranges were not single pipeline ops (e.g. OVERLAP_F_B, "
                           "REDUCE_GRAD) and were skipped");
  }

  // ---- Pass 2: pipeline ranks. ----
  ZB_ASSIGN_OR_RETURN(const std::vector<ProcessOps*> with_ops,
                      AssignPipelineRanks(processes, options, result));
  if (with_ops.empty()) return result;  // the caller says "no pipeline ops recognized"

  // ---- Pass 3: stages, B vs BW, iterations, microbatches. ----
  PassThreeCounts pass_three;
  for (ProcessOps* proc : with_ops)
    AssignOpIdentities(*proc, options, result, pass_three);
  if (pass_three.b_as_bw_ranks > 0) {
    result.notes.push_back("zero-bubble B ranges read as full backward (BW) on " +
                           std::to_string(pass_three.b_as_bw_ranks) + " rank(s) without W ranges");
  }
  if (pass_three.fifo_fallbacks > 0) {
    result.notes.push_back(std::to_string(pass_three.fifo_fallbacks) +
                           " backward ops had no matching forward; microbatch set to 0");
  }

  ZB_RETURN_IF_ERROR(CheckReplicasAgree(with_ops));
  NoteNestedRanges(with_ops, result);
  InferLayout(pass_three, result);
  if (result.layout_known) result.schedule_class = ScheduleClassOf(traces, result);
  result.checkpointing = CheckpointingOf(traces, result);
  result.chunks = result.placement == Placement::kV ? 2 : pass_three.max_chunk + 1;
  result.chunks = std::max(result.chunks, (pass_three.max_stage + result.ranks) / result.ranks);
  result.num_stages = std::max(pass_three.max_stage + 1, result.ranks * result.chunks);

  for (ProcessOps* proc : with_ops) {
    for (auto [from, into] : {std::pair{proc->trace->unsharded_bytes, &result.unsharded_bytes},
                              std::pair{proc->trace->reduced_bytes, &result.reduced_bytes}}) {
      if (from < 0) continue;
      int64_t& bytes = (*into)[proc->rank];
      bytes = std::max(bytes, from);
    }
    // A collective belongs to the iteration of the last op that started before it (an
    // all-gather inside the first F, the reduction after the last weight pass); one before every
    // op to the first op's.
    std::vector<std::pair<TimeNs, int32_t>> starts;  // (start, iteration) of the ops, by start
    for (const MeasuredOp& op : proc->ops)
      starts.emplace_back(op.cpu_start, op.iteration);
    std::sort(starts.begin(), starts.end());
    for (MeasuredCollective& collective : proc->collectives) {
      collective.rank = proc->rank;
      collective.replica = proc->replica;
      auto after = std::upper_bound(starts.begin(), starts.end(),
                                    std::make_pair(collective.start, INT32_MAX));
      if (after != starts.begin()) --after;
      if (after != starts.end()) collective.iteration = after->second;
      result.collectives.push_back(collective);
    }
    for (MeasuredOp& op : proc->ops) {
      result.split = result.split || op.kind == OpKind::kW;
      ++result.ops_by_family[op.family];
      result.ops.push_back(std::move(op));
    }
  }
  std::stable_sort(result.ops.begin(), result.ops.end(),
                   [](const MeasuredOp& a, const MeasuredOp& b) {
                     if (a.rank != b.rank) return a.rank < b.rank;
                     return a.start() < b.start();
                   });
  return result;
}

}  // namespace zb::profiler
