// SPDX-License-Identifier: Apache-2.0
#include "zbkit/tuner/paper_bench.h"

#include <nlohmann/json.hpp>

#include "zbkit/tuner/families.h"
#include "zbkit/tuner/simulator.h"

extern const char* const kZbkitPaperTablesJson;  // generated from tuner/data/paper_tables.json

namespace zb::tuner {
namespace {

// Bubble rate of a simulated schedule against the uniform per-stage work m(F+B+W).
double Rate(TimeNs cost, TimeNs work) {
  return static_cast<double>(cost - work) / static_cast<double>(cost);
}

}  // namespace

Expected<std::vector<PaperSetting>> PaperSettings() {
  nlohmann::json tables;
  try {
    tables = nlohmann::json::parse(kZbkitPaperTablesJson);
  } catch (const nlohmann::json::exception& error) {
    return InternalError(std::string("embedded paper tables: ") + error.what());
  }
  const auto& iclr = tables.at("zb_iclr");
  const auto& inputs = iclr.at("table5_simulation_inputs").at("rows");
  const auto& published = iclr.at("table5_bubble_rates");
  if (inputs.size() != published.size()) return InternalError("paper tables: row count mismatch");
  std::vector<PaperSetting> settings;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    PaperSetting setting;
    setting.model = published[i].at("model").get<std::string>();
    setting.p = in[0];
    setting.m = in[1];
    setting.layers = in[8];
    for (int k = 0; k < kNumPaperSchedules; ++k) {
      setting.published.push_back(published[i].at(kPaperSchedules[k]).get<double>());
    }
    const TimeNs us = 1000;
    const double h = in[6];
    const double a = in[7];
    const StageCost stage{in[2].get<TimeNs>() * us, in[3].get<TimeNs>() * us,
                          in[4].get<TimeNs>() * us, 34 * h + 5 * a * 1024, 32 * h};
    setting.costs.comm = in[5].get<TimeNs>() * us;
    setting.costs.stages.assign(setting.p, stage);
    settings.push_back(std::move(setting));
  }
  return settings;
}

Expected<std::vector<PaperBenchRow>> ComputePaperTable5() {
  ZB_ASSIGN_OR_RETURN(std::vector<PaperSetting> settings, PaperSettings());
  std::vector<PaperBenchRow> rows;
  for (const PaperSetting& setting : settings) {
    PaperBenchRow row;
    row.model = setting.model;
    row.p = setting.p;
    row.m = setting.m;
    for (int k = 0; k < kNumPaperSchedules; ++k)
      row.published[k] = setting.published[k];
    const CostProfile& costs = setting.costs;
    const StageCost& stage = costs.stages.front();
    const int layers = setting.layers;
    const TimeNs work = row.m * (stage.f + stage.b + stage.w);
    Simulator simulator;
    auto simulate = [&](Expected<Schedule> schedule,
                        const SimulationOptions& options = {}) -> Expected<Prediction> {
      if (!schedule.ok()) return schedule.status();
      ZB_RETURN_IF_ERROR(simulator.Run(*schedule, options));
      return *schedule->predicted;
    };
    ZB_ASSIGN_OR_RETURN(Prediction one_f_one_b, simulate(OneFOneB(costs, row.m)));
    const CostProfile chunks = costs.SplitStages(layers / row.p);
    ZB_ASSIGN_OR_RETURN(Prediction interleaved,
                        simulate(Interleaved1F1B(chunks, row.p, row.m), {true}));
    ZB_ASSIGN_OR_RETURN(Prediction interleaved_strict,
                        simulate(Interleaved1F1B(chunks, row.p, row.m)));
    ZB_ASSIGN_OR_RETURN(Prediction h1, simulate(ZbH1(costs, row.m)));
    ZB_ASSIGN_OR_RETURN(Prediction h2, simulate(ZbH2(costs, row.m)));
    ZB_ASSIGN_OR_RETURN(ZbAutoResult zb1p,
                        ZbAuto(costs, row.m, std::vector<double>(row.p, row.p * stage.m_b)));
    ZB_ASSIGN_OR_RETURN(ZbAutoResult zb2p,
                        ZbAuto(costs, row.m, std::vector<double>(row.p, 2 * row.p * stage.m_b)));
    row.computed[0] = Rate(one_f_one_b.makespan, work);
    row.computed[1] = Rate(interleaved.makespan, work);
    row.computed[2] = Rate(h1.makespan, work);
    row.computed[3] = Rate(h2.span, work);
    row.computed[4] = Rate(zb1p.cost, work);
    row.computed[5] = Rate(zb2p.cost, work);
    row.interleaved_strict = Rate(interleaved_strict.makespan, work);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace zb::tuner
