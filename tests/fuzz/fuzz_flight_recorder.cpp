// SPDX-License-Identifier: Apache-2.0
// A torch flight-recorder dump (a pickle, zb doctor --flight-recorder's input): any bytes either
// get an error naming the file or dumps that analyze without crashing.
#include "fuzz_support.h"
#include "zbkit/doctor/flight_recorder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zb::fuzz::InputFile file(data, size, "-fr_0");  // torch names dumps <prefix><rank>
  const std::string prefix = file.path().substr(0, file.path().size() - 1);
  auto dumps = zb::doctor::ReadFlightRecorderDumps(prefix);
  if (!dumps.ok()) return 0;
  int culprit = -1;
  (void)zb::doctor::AnalyzeFlightRecorder(*dumps, culprit);
  return 0;
}
