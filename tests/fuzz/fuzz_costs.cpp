// SPDX-License-Identifier: Apache-2.0
// The zb-costs/1 reader (zb tune --costs, zb costs import): any text either gets an error or a
// profile that passes the checks a tune runs and survives a write-read round trip unchanged.
#include "fuzz_support.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto costs = zb::ParseCostsJson(zb::fuzz::AsText(data, size), "fuzz.json");
  if (!costs.ok()) return 0;
  (void)zb::ValidateProfileToTune(*costs);
  auto again = zb::ParseCostsJson(zb::CostsToJson(*costs), "written.json");
  zb::fuzz::Require(again.ok(), "a profile the reader accepted reads back");
  zb::fuzz::Require(*again == *costs, "a profile reads back unchanged");
  return 0;
}
