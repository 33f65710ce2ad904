// SPDX-License-Identifier: Apache-2.0
// zb export (FILE | --store DB --schedule ID)
//           --format json|torch-csv|torch-csv-legacy|torch-csv-comms -o FILE
#include "tuner_commands.h"
#include "zbkit/cli/output.h"
#include "zbkit/cli/schedule_source.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/tuner/torch_export.h"

namespace zb::cli {

int RunExportCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "export";
  po::options_description options("options");
  po::positional_options_description positional;
  AddScheduleSourceOptions(options, positional);
  po::options_description_easy_init add = options.add_options();
  add("format", po::value<std::string>()->required(),
      "json (zb-schedule/1), torch-csv (PyTorch >= 2.6: F/I/W/B), torch-csv-legacy "
      "(PyTorch <= 2.5: F/B/W/BW) or torch-csv-comms (torch-csv plus SEND/RECV and REDUCE_GRAD, "
      "for _load_csv(format=\"compute_comms\"))");
  add("output,o", po::value<std::string>()->required(), "file to write ('-' for stdout)");
  po::variables_map values;
  int exit_code = 0;
  if (!ParseCommandLine(command, "(FILE | --store DB --schedule ID) --format F -o FILE", args,
                        options, positional, values, out, err, exit_code)) {
    return exit_code;
  }
  const std::string format = values["format"].as<std::string>();
  if (format != "json" && format != "torch-csv" && format != "torch-csv-legacy" &&
      format != "torch-csv-comms") {
    return ReportError(err, command,
                       UsageError("--format must be json, torch-csv, torch-csv-legacy or "
                                  "torch-csv-comms, got \"" +
                                  format + "\""));
  }
  auto schedule = LoadScheduleFromArguments(values);
  if (!schedule.ok()) return ReportError(err, command, schedule.status());

  std::string content;
  if (format == "json") {
    content = ScheduleToJson(*schedule);
  } else {
    const tuner::TorchCsvFormat torch_format =
        format == "torch-csv"          ? tuner::TorchCsvFormat::kComputeOnly
        : format == "torch-csv-legacy" ? tuner::TorchCsvFormat::kLegacyComputeOnly
                                       : tuner::TorchCsvFormat::kComputeComms;
    auto csv = tuner::ExportTorchCsv(*schedule, torch_format);
    if (!csv.ok()) return ReportError(err, command, csv.status());
    content = std::move(*csv);
  }
  Status written = WriteToFileOrStdout(values["output"].as<std::string>(), content, out);
  if (!written.ok()) return ReportError(err, command, written);
  return 0;
}

}  // namespace zb::cli
