// SPDX-License-Identifier: Apache-2.0
// The store opener and readers (every zb command's --store, zbview's File > Open): any bytes,
// opened read-only and then read-write (which migrates an older store), either get an error or
// a store whose every record loads or is refused with an error.
#include "fuzz_support.h"
#include "zbkit/schemas/store.h"

namespace {

void ReadEverything(const zb::Store& store) {
  if (auto profiles = store.ListCostProfiles(); profiles.ok()) {
    for (const auto& info : *profiles) {
      (void)store.LoadCostProfile(info.id);
      (void)store.LoadCostProfileDetails(info.id);
    }
  }
  if (auto schedules = store.ListSchedules(); schedules.ok()) {
    for (const auto& info : *schedules) {
      (void)store.LoadSchedule(info.id);
      (void)store.ListMeasuredTimelines(info.id);
    }
  }
  if (auto timelines = store.ListTimelines(); timelines.ok()) {
    for (const auto& info : *timelines)
      (void)store.LoadTimeline(info.id);
  }
  if (auto runs = store.ListRuns(); runs.ok()) {
    for (const auto& info : *runs)
      (void)store.ListRunTimelines(info.id);
  }
  if (auto frontiers = store.ListFrontiers(); frontiers.ok()) {
    for (const auto& info : *frontiers)
      (void)store.LoadFrontier(info.id);
  }
  (void)store.ListHopMeasurements();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zb::fuzz::InputFile file(data, size, ".zbstore");
  if (auto store = zb::Store::Open(file.path(), zb::Store::Mode::kReadOnly); store.ok()) {
    ReadEverything(*store);
  }
  if (auto store = zb::Store::Open(file.path(), zb::Store::Mode::kReadWrite); store.ok()) {
    ReadEverything(*store);
  }
  return 0;
}
