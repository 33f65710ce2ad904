// SPDX-License-Identifier: Apache-2.0
// The zb-schedule/1 reader and what runs on what it accepts: the structural check, the
// simulator, and the torch CSV exporters' checks and writers (zb export). A schedule the reader
// accepted survives a write-read round trip unchanged.
#include "fuzz_support.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/validate.h"
#include "zbkit/tuner/simulator.h"
#include "zbkit/tuner/torch_export.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto schedule = zb::ParseScheduleJson(zb::fuzz::AsText(data, size), "fuzz.json");
  if (!schedule.ok()) return 0;
  auto again = zb::ParseScheduleJson(zb::ScheduleToJson(*schedule), "written.json");
  zb::fuzz::Require(again.ok(), "a schedule the reader accepted reads back");
  zb::fuzz::Require(*again == *schedule, "a schedule reads back unchanged");
  if (!zb::ValidateSchedule(*schedule).ok()) return 0;
  for (auto format :
       {zb::tuner::TorchCsvFormat::kComputeOnly, zb::tuner::TorchCsvFormat::kLegacyComputeOnly,
        zb::tuner::TorchCsvFormat::kComputeComms}) {
    (void)zb::tuner::ExportTorchCsv(*schedule, format);
  }
  zb::Schedule simulated = *schedule;
  (void)zb::tuner::Simulate(simulated);
  return 0;
}
