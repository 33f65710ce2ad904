// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/search_bench.h"

#include <algorithm>
#include <random>

#include "zbkit/tuner/exact.h"
#include "zbkit/tuner/families.h"
#include "zbkit/tuner/lower_bound.h"
#include "zbkit/tuner/memory_limit.h"
#include "zbkit/tuner/paper_bench.h"
#include "zbkit/tuner/search.h"
#include "zbkit/tuner/simulator.h"

namespace zb::tuner {
namespace {

std::string FactorName(double factor) {
  std::string text = std::to_string(factor);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + "x";
}

std::optional<double> Area(const std::vector<SearchBenchPoint>& points,
                           std::optional<double> SearchBenchPoint::*method) {
  double area = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!(points[i].*method)) return std::nullopt;
    if (i == 0) continue;
    const double width = points[i].cap_factor - points[i - 1].cap_factor;
    area += width * (*(points[i].*method) + *(points[i - 1].*method)) / 2;
  }
  return area;
}

// Measures one instance over `factors`; each search starts from the previous cap's result as
// well, so a larger cap is never worse.
Expected<SearchBenchSetting> Measure(std::string name, const CostProfile& costs, int m,
                                     const std::vector<double>& factors,
                                     const SearchBenchOptions& options) {
  SearchBenchSetting setting;
  setting.name = std::move(name);
  setting.p = costs.num_stages();
  setting.m = m;
  std::optional<Schedule> previous_loop;
  std::optional<Schedule> previous_any;
  Simulator simulator;
  for (double factor : factors) {
    SearchBenchPoint point;
    point.cap_factor = factor;
    const std::vector<double> caps =
        MemoryLimit{MemoryLimit::Kind::kRelative, factor}.RankCaps(costs);
    auto heuristic = GenerateFamily("zb-auto", FamilyRequest{costs, m, 2, caps});
    if (heuristic.ok() && simulator.Run(*heuristic).ok()) {
      point.heuristic = heuristic->predicted->paper_bubble_rate;
      point.heuristic_span = heuristic->predicted->span;
    }
    SearchOptions search;
    search.objective = Objective::kSpan;
    search.time_limit_s = options.time_limit_s;
    search.seed = options.seed;
    auto run = [&](std::optional<Placement> placement, std::optional<Schedule>& previous,
                   std::optional<double>& rate, TimeNs& span) -> Expected<const Schedule*> {
      search.placement = placement;
      search.warm_starts.clear();
      if (previous) search.warm_starts.push_back(*previous);
      auto found = Search(costs, m, caps, search);
      if (!found.ok()) {
        if (found.status().code() == ErrorCode::kInfeasible) return nullptr;
        return found.status();
      }
      point.seconds += found->seconds;
      rate = found->best.predicted->paper_bubble_rate;
      span = found->best.predicted->span;
      previous = std::move(found->best);
      return &*previous;
    };
    ZB_ASSIGN_OR_RETURN(const Schedule* loop,
                        run(Placement::kLoop, previous_loop, point.search_loop, point.loop_span));
    (void)loop;
    ZB_ASSIGN_OR_RETURN(const Schedule* any,
                        run(std::nullopt, previous_any, point.search_any, point.any_span));
    if (any != nullptr) {
      point.any_placement = PlacementName(any->placement);
      const LowerBounds bounds =
          ComputeLowerBounds(any->costs, any->ranks, m, any->placement, caps);
      point.t_over_lb = bounds.span > 0 ? static_cast<double>(any->predicted->span) /
                                              static_cast<double>(bounds.span)
                                        : 0;
    }
    if (options.progress) {
      options.progress(setting.name + " at " + FactorName(factor));
    }
    setting.points.push_back(point);
  }
  setting.area_heuristic = Area(setting.points, &SearchBenchPoint::heuristic);
  setting.area_loop = Area(setting.points, &SearchBenchPoint::search_loop);
  setting.area_any = Area(setting.points, &SearchBenchPoint::search_any);
  return setting;
}

}  // namespace

CostProfile RandomUnevenProfile(uint64_t seed, int p, TimeNs grain) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](double low, double high) {
    return low + (high - low) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
  };
  auto time = [grain](double ms) { return std::max<TimeNs>(grain, MsToNs(ms) / grain * grain); };
  CostProfile costs;
  double f_sum = 0;
  for (int s = 0; s < p; ++s) {
    const double heavy = s == 0 || s == p - 1 ? 1.4 : 1.0;
    const double f = uniform(0.8, 1.2) * heavy;
    StageCost stage;
    stage.f = time(f);
    stage.b = time(f * uniform(1.0, 1.3));
    stage.w = time(f * uniform(0.5, 0.8));
    stage.m_b = uniform(0.8, 1.2) * heavy;
    stage.m_w = stage.m_b * uniform(0.4, 0.6);
    costs.stages.push_back(stage);
    f_sum += f;
  }
  costs.comm = MsToNs(f_sum / p * uniform(0, 0.1)) / grain * grain;
  return costs;
}

Expected<SearchBenchReport> RunSearchBench(const SearchBenchOptions& options) {
  SearchBenchReport report;
  ZB_ASSIGN_OR_RETURN(std::vector<PaperSetting> settings, PaperSettings());
  for (const PaperSetting& paper : settings) {
    ZB_ASSIGN_OR_RETURN(
        SearchBenchSetting measured,
        Measure(paper.model + " p" + std::to_string(paper.p) + " m" + std::to_string(paper.m),
                paper.costs, paper.m, options.cap_factors, options));
    report.paper.push_back(std::move(measured));
  }
  for (int i = 0; i < options.random_instances; ++i) {
    const int p = i % 2 == 0 ? 4 : 8;
    const int m = p * (1 + (i / 2) % 3);
    const CostProfile costs = RandomUnevenProfile(options.seed * 1000 + i, p);
    ZB_ASSIGN_OR_RETURN(SearchBenchSetting measured,
                        Measure("random " + std::to_string(i) + ": p" + std::to_string(p) + " m" +
                                    std::to_string(m),
                                costs, m, {1, 1.5}, options));
    report.random.push_back(std::move(measured));
  }
  report.exact_available = ExactSolverAvailable();
  if (!report.exact_available) return report;
  for (int i = 0; i < options.exact_instances; ++i) {
    const int p = 2 + i % 3;
    const int m = (2 + (i / 3) % 2) * p;  // 2p, then 3p: up to p = 4, m = 12
    const double factor = i % 2 == 0 ? 1 : 1.5;
    const CostProfile costs = RandomUnevenProfile(options.seed * 2000 + i, p, 100'000);
    const std::vector<double> caps =
        MemoryLimit{MemoryLimit::Kind::kRelative, factor}.RankCaps(costs);
    SearchOptions search;
    search.objective = Objective::kSpan;
    search.time_limit_s = options.time_limit_s;
    search.seed = options.seed;
    search.placement = Placement::kLoop;  // the exact model keeps the incumbent's placement
    ZB_ASSIGN_OR_RETURN(SearchResult found, Search(costs, m, caps, search));
    ExactOptions exact_options;
    exact_options.objective = Objective::kSpan;
    exact_options.time_limit_s = options.exact_time_limit_s;
    ZB_ASSIGN_OR_RETURN(ExactResult exact, SolveExact(found.best, caps, exact_options));
    SearchBenchExact row;
    row.name = "exact " + std::to_string(i) + ": p" + std::to_string(p) + " m" + std::to_string(m) +
               " " + FactorName(factor);
    row.p = p;
    row.m = m;
    row.cap_factor = factor;
    row.search = found.figure;
    row.lower = exact.lower;
    row.upper = exact.upper;
    row.optimal = exact.optimal;
    row.seconds = exact.seconds;
    if (options.progress) options.progress(row.name);
    report.exact.push_back(row);
  }
  return report;
}

}  // namespace zb::tuner
