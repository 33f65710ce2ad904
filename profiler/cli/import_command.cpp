// SPDX-License-Identifier: Apache-2.0
// zb import FILE|DIR [--format nsys|chrome|shards] [--store DB] [--pp P] [--rules FILE] ...:
// the per-stage cost table from an Nsight Systems SQLite export, a PyTorch profiler / torchtitan
// Chrome trace (plain or gzip) or a directory of them (one per rank), or a directory of zbkit
// shards (what `zb profile --shard-dir` kept).
#include <sys/stat.h>

#include "analysis.h"
#include "profiler_commands.h"
#include "zbkit/profiler/import.h"

namespace zb::cli {

int RunImportCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "import";
  po::options_description options("options");
  po::positional_options_description positional;
  options.add_options()(
      "file", po::value<std::string>()->required(),
      "trace file, or a directory of *.zbshard (or of per-rank Chrome traces with --format "
      "chrome) (also positional)")(
      "format", po::value<std::string>()->default_value("auto"),
      "nsys (SQLite export), chrome (Chrome trace / Kineto JSON, .gz ok), shards, or auto");
  positional.add("file", 1);
  AddAnalysisOptions(options);
  po::variables_map values;
  int exit_code = 0;
  if (!ParseCommandLine(command, "FILE [--format nsys|chrome] [options]", args, options, positional,
                        values, out, err, exit_code)) {
    return exit_code;
  }
  auto settings = ReadAnalysisSettings(values);
  if (!settings.ok()) return ReportError(err, command, settings.status());
  const std::string path = values["file"].as<std::string>();
  const std::string format_name = values["format"].as<std::string>();

  struct stat info {};
  const bool is_dir = ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  AnalysisInput input;
  input.source = path;
  input.run_kind = RunKind::kImport;
  input.command = path;
  input.default_name = DefaultNameFor(path);
  const bool chrome_dir = is_dir && format_name == "chrome";
  if (chrome_dir || format_name == "shards" || (format_name == "auto" && is_dir)) {
    std::vector<std::string> skipped;
    auto traces = chrome_dir ? profiler::ImportChromeTraceDirectory(path, skipped)
                             : profiler::ReadShardDirectory(path, skipped);
    if (!traces.ok()) return ReportError(err, command, traces.status());
    for (const std::string& problem : skipped)
      err << "zb import: warning: " << problem << "\n";
    input.traces = std::move(*traces);
  } else {
    auto format = profiler::ParseTraceFormat(format_name);
    if (!format.ok()) return ReportError(err, command, format.status());
    auto traces = profiler::ImportTrace(path, *format);
    if (!traces.ok()) return ReportError(err, command, traces.status());
    input.traces = std::move(*traces);
  }
  Status status = AnalyzeAndReport(input, *settings, out);
  if (!status.ok()) return ReportError(err, command, status);
  return 0;
}

}  // namespace zb::cli
