// SPDX-License-Identifier: Apache-2.0
// zb import FILE|DIR... [--format nsys|chrome|shards] [--store DB] [--pp P] [--rules FILE] ...:
// the per-stage cost table from an Nsight Systems SQLite export, a PyTorch profiler / torchtitan
// Chrome trace (plain or gzip) or a directory of them (one per rank), or a directory of zbkit
// shards (what `zb profile --shard-dir` kept). Several make one profile: a multi-host job's
// hosts each keep their ranks' traces in a directory of their own.
#include <sys/stat.h>

#include <iterator>
#include <string>
#include <vector>

#include "analysis.h"
#include "profiler_commands.h"
#include "zbkit/profiler/import.h"

namespace zb::cli {

namespace {

// The traces of one FILE|DIR argument, in the format asked for (auto: a directory's shards, else
// its Chrome traces: ReadTraceDirectory).
Expected<std::vector<profiler::RawTrace>> ReadOne(const std::string& path,
                                                  const std::string& format_name,
                                                  std::ostream& err) {
  struct stat info {};
  const bool is_dir = ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  const bool chrome_dir = is_dir && format_name == "chrome";
  if (chrome_dir || format_name == "shards" || (format_name == "auto" && is_dir)) {
    std::vector<std::string> skipped;
    auto read = chrome_dir                ? profiler::ImportChromeTraceDirectory(path, skipped)
                : format_name == "shards" ? profiler::ReadShardDirectory(path, skipped)
                                          : profiler::ReadTraceDirectory(path, skipped);
    for (const std::string& problem : skipped)
      err << "zb import: warning: " << problem << "\n";
    return read;
  }
  ZB_ASSIGN_OR_RETURN(profiler::TraceFormat format, profiler::ParseTraceFormat(format_name));
  return profiler::ImportTrace(path, format);
}

}  // namespace

int RunImportCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "import";
  po::options_description options("options");
  po::positional_options_description positional;
  options.add_options()(
      "file", po::value<std::vector<std::string>>()->required()->multitoken(),
      "trace file, or a directory of *.zbshard or of per-rank Chrome traces (*.json, *.json.gz); "
      "several (also positional) make one profile, e.g. each host's directory of a "
      "multi-host job")(
      "format", po::value<std::string>()->default_value("auto"),
      "nsys (SQLite export), chrome (Chrome trace / Kineto JSON, .gz ok), shards, or auto (a "
      "directory: its shards, else its Chrome traces)");
  positional.add("file", -1);
  AddAnalysisOptions(options);
  po::variables_map values;
  int exit_code = 0;
  const std::string epilogue =
      std::string(
          "examples:\n"
          "  zb import report.sqlite                     an nsys export (--type sqlite)\n"
          "  zb import traces/ --pp 4                    one Chrome/Kineto trace per rank\n"
          "  zb import host0/ host1/ --store zbkit.db    several hosts, one profile\n"
          "  zb import trace.json.gz --rules rules.json  a job's own range names\n\n") +
      kRangeNamesHelp;
  if (!ParseCommandLine(command, "FILE|DIR... [--format nsys|chrome|shards] [options]", args,
                        options, positional, values, out, err, exit_code, epilogue)) {
    return exit_code;
  }
  auto settings = ReadAnalysisSettings(values);
  if (!settings.ok()) return ReportError(err, command, settings.status());
  const std::vector<std::string> paths = values["file"].as<std::vector<std::string>>();
  const std::string format_name = values["format"].as<std::string>();

  AnalysisInput input;
  for (const std::string& path : paths) {
    input.source += (input.source.empty() ? "" : " ") + path;
    auto read = ReadOne(path, format_name, err);
    if (!read.ok()) return ReportError(err, command, read.status());
    input.traces.insert(input.traces.end(), std::make_move_iterator(read->begin()),
                        std::make_move_iterator(read->end()));
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
      input.block_costs_dirs.push_back(path);  // `zb profile --torch --shard-dir` kept them
    }
  }
  input.run_kind = RunKind::kImport;
  input.command = input.source;
  input.default_name = DefaultNameFor(paths.front());
  Status status = AnalyzeAndReport(input, *settings, out);
  if (!status.ok()) return ReportError(err, command, status);
  return 0;
}

}  // namespace zb::cli
