// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/frontier.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "zbkit/schemas/store.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/search.h"
#include "zbkit/tuner/simulator.h"
#include "zbkit/tuner/torch_export.h"

namespace zb::tuner {
namespace {

bool ParseFactor(std::string_view text, double& value) {
  if (!text.empty() && text.back() == 'x') text.remove_suffix(1);
  if (text.empty()) return false;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return result.ec == std::errc() && result.ptr == text.data() + text.size() &&
         std::isfinite(value);
}

FrontierPoint PointOf(std::string method, double factor, double cap, const Schedule* schedule) {
  FrontierPoint point;
  point.method = std::move(method);
  point.cap_factor = factor;
  point.cap = cap;
  point.fits = schedule != nullptr;
  if (schedule == nullptr) {  // placeholders below 0: nothing of this method fits
    point.makespan = point.span = -1;
    point.bubble_rate = point.paper_bubble_rate = -1;
    return point;
  }
  const Prediction& predicted = *schedule->predicted;
  point.makespan = predicted.makespan;
  point.span = predicted.span;
  // Against the mean rank's work, not the busiest rank's as Prediction's rates are: interleaved
  // and V layouts move work between ranks, so the busiest rank differs between the points of
  // one curve. For uniform stages the two agree.
  TimeNs work = 0;
  for (const RankProgram& program : schedule->programs) {
    for (const Op& op : program.ops)
      work += op.end - op.start;
  }
  const double mean = static_cast<double>(work) / schedule->ranks;
  auto idle = [mean](TimeNs length) {
    return length > 0 ? 1 - mean / static_cast<double>(length) : 0.0;
  };
  point.bubble_rate = idle(predicted.makespan);
  point.paper_bubble_rate = idle(predicted.span);
  return point;
}

bool FitsCaps(const Prediction& predicted, const std::vector<double>& caps) {
  for (size_t r = 0; r < caps.size(); ++r) {
    if (!FitsCap(predicted.peak_memory[r], caps[r])) return false;
  }
  return true;
}

}  // namespace

Expected<std::vector<double>> ParseFrontierGrid(std::string_view text) {
  const std::string quoted = "--frontier \"" + std::string(text) + "\"";
  const size_t first = text.find(':');
  const size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  double from = 0, to = 0, step = 0;
  if (second == std::string_view::npos || !ParseFactor(text.substr(0, first), from) ||
      !ParseFactor(text.substr(first + 1, second - first - 1), to) ||
      !ParseFactor(text.substr(second + 1), step)) {
    return UsageError(quoted + ": expected FROM:TO:STEP cap factors, e.g. 1x:3x:0.125x");
  }
  if (from <= 0 || to < from || step <= 0) {
    return UsageError(quoted + ": needs 0 < FROM <= TO and STEP > 0");
  }
  const double count = std::floor((to - from) / step + 1e-9) + 1;
  if (count > 1000) return UsageError(quoted + ": more than 1000 caps");
  std::vector<double> factors;
  for (int i = 0; i < static_cast<int>(count); ++i)
    factors.push_back(from + i * step);
  return factors;
}

Expected<FrontierOutcome> ComputeFrontier(const TuneRequest& request,
                                          const std::vector<double>& factors) {
  ZB_RETURN_IF_ERROR(ValidateProfileToTune(request.costs).WithContext("costs"));
  const CostProfile costs = request.costs.CostsOnly();  // the schedules carry the costs alone
  const TuneOptions& options = request.options;
  const int m = request.microbatches;
  if (m < 1) return UsageError("--microbatches must be >= 1, got " + std::to_string(m));
  ZB_RETURN_IF_ERROR(CheckTuneSize(costs.num_stages(), m, MostChunks(options)));
  FrontierOutcome outcome;
  outcome.frontier.microbatches = m;
  outcome.frontier.objective = ObjectiveName(options.objective);
  outcome.frontier.placement = options.placement ? PlacementName(*options.placement) : "any";
  std::optional<Schedule> previous;
  Simulator simulator;
  for (double factor : factors) {
    const std::vector<double> caps =
        MemoryLimit{MemoryLimit::Kind::kRelative, factor}.RankCaps(costs);
    // The paper's heuristic, as it is (loop placement, its own knob grid).
    std::optional<Schedule> heuristic;
    const bool torch_costs = options.runtime == ReplayRuntime::kTorch;
    auto generated = GenerateFamily("zb-auto", FamilyRequest{costs, m, 2, caps, torch_costs});
    if (generated.ok() && torch_costs) {
      generated->costs = TorchRuntimeCosts(std::move(generated->costs));
    }
    if (generated.ok() && simulator.Run(*generated).ok() && FitsCaps(*generated->predicted, caps)) {
      heuristic = std::move(generated).value();
    }
    outcome.frontier.points.push_back(
        PointOf("heuristic", factor, caps.front(), heuristic ? &*heuristic : nullptr));
    outcome.schedules.push_back(std::move(heuristic));

    SearchOptions search = options.search;
    search.objective = options.objective;
    search.placement = options.placement;
    search.interleave_chunks = options.interleave_chunks;
    search.runtime = options.runtime;
    search.torch_runtime_costs = torch_costs;
    if (previous) search.warm_starts.push_back(*previous);
    auto found = Search(costs, m, caps, search);
    if (!found.ok() && found.status().code() != ErrorCode::kInfeasible) return found.status();
    const Schedule* best = found.ok() ? &found->best : nullptr;
    outcome.frontier.points.push_back(PointOf("search", factor, caps.front(), best));
    if (best != nullptr) previous = *best;
    outcome.schedules.push_back(best ? std::optional<Schedule>(*best) : std::nullopt);
  }
  return outcome;
}

Status StoreFrontier(const TuneRequest& request, const StoreTarget& target,
                     FrontierOutcome& outcome, int64_t& frontier_id) {
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(target.path));
  // One write: the cost profile, every point's schedule and the frontier that names them land
  // together, or (on any error) none of them does. The ids reach the outcome only once committed.
  Frontier frontier = outcome.frontier;
  int64_t stored_id = 0;
  ZB_RETURN_IF_ERROR(store.WriteAtomically("store frontier", [&](Store& writing) -> Status {
    ZB_ASSIGN_OR_RETURN(int64_t cluster_id,
                        writing.EnsureCluster({target.cluster, "", "", "", ""}));
    ZB_ASSIGN_OR_RETURN(int64_t job_id, writing.EnsureJob(cluster_id, target.job));
    ZB_ASSIGN_OR_RETURN(frontier.cost_profile_id,
                        writing.InsertCostProfile(job_id, request.costs_name, request.costs));
    for (size_t i = 0; i < frontier.points.size(); ++i) {
      if (!outcome.schedules[i]) continue;
      ZB_ASSIGN_OR_RETURN(
          frontier.points[i].schedule_id,
          writing.InsertSchedule(job_id, *outcome.schedules[i], frontier.points[i].cap));
    }
    ZB_ASSIGN_OR_RETURN(stored_id, writing.RecordFrontier(frontier));
    return Status::Ok();
  }));
  outcome.frontier = std::move(frontier);
  frontier_id = stored_id;
  return Status::Ok();
}

double FrontierArea(const std::vector<FrontierPoint>& points, const std::string& method,
                    bool& complete) {
  double area = 0;
  const FrontierPoint* last = nullptr;
  complete = true;
  for (const FrontierPoint& point : points) {
    if (point.method != method) continue;
    if (!point.fits) {
      complete = false;
      last = nullptr;
      continue;
    }
    if (last != nullptr) {
      area += (point.cap_factor - last->cap_factor) *
              (point.paper_bubble_rate + last->paper_bubble_rate) / 2;
    }
    last = &point;
  }
  return area;
}

}  // namespace zb::tuner
