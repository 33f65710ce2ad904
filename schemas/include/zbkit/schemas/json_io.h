// SPDX-License-Identifier: Apache-2.0
// Reading and writing the public exchange formats zb-costs/1 and zb-schedule/1
// (schemas/zb-costs.schema.json, schemas/zb-schedule.schema.json).
//
// Parsing validates as it reads: every error is one line that names the source and the JSON path
// of the offending field, e.g. `costs.json: stages[2].B: must be a finite number >= 0, got -1`.
#ifndef ZBKIT_SCHEMAS_JSON_IO_H_
#define ZBKIT_SCHEMAS_JSON_IO_H_

#include <exception>
#include <string>

#include "zbkit/schemas/layers.h"
#include "zbkit/schemas/status.h"
#include "zbkit/schemas/types.h"

namespace zb {

inline constexpr const char* kCostsFormat = "zb-costs/1";
inline constexpr const char* kScheduleFormat = "zb-schedule/1";
inline constexpr const char* kHopsFormat = "zb-hops/1";
inline constexpr const char* kLayersFormat = "zb-layers/1";

// `source` names the input in error messages (a file name, or "<stdin>").
Expected<CostProfile> ParseCostsJson(const std::string& text, const std::string& source);
Expected<CostProfile> ReadCostsFile(const std::string& path);
// Writes {"format": "zb-costs/1", ...}; a uniform profile is written as one entry with "count".
std::string CostsToJson(const CostProfile& costs);

// Parses and structurally validates a schedule (ValidateSchedule in validate.h).
Expected<Schedule> ParseScheduleJson(const std::string& text, const std::string& source);
Expected<Schedule> ReadScheduleFile(const std::string& path);
std::string ScheduleToJson(const Schedule& schedule);

// zb-hops/1 (docs/formats.md §6): a hop measurement as `zb rehearse` writes it; cluster, id and
// measured_at are not part of the file.
Expected<HopMeasurement> ParseHopsJson(const std::string& text, const std::string& source);
Expected<HopMeasurement> ReadHopsFile(const std::string& path);

// zb-layers/1 (docs/formats.md §6): per-layer costs, in model order (layers.h).
Expected<LayerProfile> ParseLayersJson(const std::string& text, const std::string& source);
Expected<LayerProfile> ReadLayersFile(const std::string& path);
std::string LayersToJson(const LayerProfile& profile);

// The message of an error of the JSON library (nlohmann), without the tag it starts with
// ("[json.exception.parse_error.101] "): what every "not valid JSON" message quotes.
std::string JsonErrorText(const std::exception& error);

Expected<std::string> ReadTextFile(const std::string& path);
// Writes to a temporary file beside `path` and renames it into place, so a failure never leaves
// a truncated file behind.
Status WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_JSON_IO_H_
