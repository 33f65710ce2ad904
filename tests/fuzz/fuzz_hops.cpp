// SPDX-License-Identifier: Apache-2.0
// The hop-measurement reader (zb tune --hops): an error, or hops whose median can be taken.
#include "fuzz_support.h"
#include "zbkit/schemas/json_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto hops = zb::ParseHopsJson(zb::fuzz::AsText(data, size), "fuzz.json");
  if (hops.ok()) (void)hops->MedianTime();
  return 0;
}
