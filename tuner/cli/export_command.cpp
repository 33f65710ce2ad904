// SPDX-License-Identifier: Apache-2.0
// zb export (FILE | --store DB --schedule ID) --format json|torch-csv|torch-csv-legacy -o FILE
#include "cli_support.h"
#include "zbkit/model/json_io.h"
#include "zbkit/tuner/torch_export.h"

namespace zb::cli {

int RunExportCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "export";
  po::options_description options("options");
  options.add_options()("store", po::value<std::string>(), "SQLite store holding the schedule")(
      "schedule", po::value<int64_t>(), "schedule id in the store")(
      "file", po::value<std::string>(), "or a zb-schedule/1 file (also positional)")(
      "format", po::value<std::string>()->required(),
      "json (zb-schedule/1), torch-csv (PyTorch >= 2.6: F/I/W/B) or torch-csv-legacy "
      "(PyTorch <= 2.5: F/B/W/BW)")("output,o", po::value<std::string>()->required(),
                                    "file to write ('-' for stdout)");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map values;
  int exit_code = 0;
  if (!ParseCommandLine(command, "(FILE | --store DB --schedule ID) --format F -o FILE", args,
                        options, positional, values, out, err, exit_code)) {
    return exit_code;
  }
  const std::string format = values["format"].as<std::string>();
  if (format != "json" && format != "torch-csv" && format != "torch-csv-legacy") {
    return ReportError(
        err, command,
        UsageError("--format must be json, torch-csv or torch-csv-legacy, got \"" + format + "\""));
  }
  auto optional_string = [&](const char* name) -> std::optional<std::string> {
    if (!values.count(name)) return std::nullopt;
    return values[name].as<std::string>();
  };
  std::optional<int64_t> schedule_id;
  if (values.count("schedule")) schedule_id = values["schedule"].as<int64_t>();
  auto schedule =
      LoadScheduleFromFileOrStore(optional_string("file"), optional_string("store"), schedule_id);
  if (!schedule.ok()) return ReportError(err, command, schedule.status());

  std::string content;
  if (format == "json") {
    content = ScheduleToJson(*schedule);
  } else {
    content = tuner::ToTorchCsv(*schedule, format == "torch-csv" ? tuner::TorchDialect::kModern
                                                                 : tuner::TorchDialect::kLegacy);
  }
  const std::string output = values["output"].as<std::string>();
  if (output == "-") {
    out << content;
    return 0;
  }
  Status written = WriteFileAtomically(output, content);
  if (!written.ok()) return ReportError(err, command, written);
  return 0;
}

}  // namespace zb::cli
