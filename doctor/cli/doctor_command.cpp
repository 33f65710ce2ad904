// SPDX-License-Identifier: Apache-2.0
// zb doctor RUN_DIR... [--json] [--stall-timeout S] [--trace-out FILE]: the diagnosis of a job
// from its ranks' progress records (docs/stalls.md), of every host's directory for a job across
// hosts; with --trace-out, the ranks' last ops as a Perfetto trace. Exit 0 when every rank's
// record was read, 1 when some are missing or unreadable (the diagnosis of the others is printed
// all the same), none is there, or the trace could not be written.
#include <algorithm>
#include <optional>
#include <string>

#include "doctor_commands.h"
#include "zbkit/doctor/diagnosis.h"
#include "zbkit/doctor/flight_recorder.h"
#include "zbkit/doctor/history.h"
#include "zbkit/doctor/progress.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/traces/trace_export.h"

namespace zb::cli {
namespace {

// What torch's flight-recorder dumps at `where` say, one line each (flight_recorder.h).
Expected<std::vector<std::string>> FlightRecorderLines(const std::string& where) {
  auto dumps = doctor::ReadFlightRecorderDumps(where);
  if (!dumps.ok()) return dumps.status();
  int culprit = -1;
  std::vector<std::string> lines = doctor::AnalyzeFlightRecorder(*dumps, culprit);
  if (lines.empty()) {
    lines.push_back(std::to_string(dumps->size()) +
                    " dumps: every rank enqueued every collective, no send or receive left open");
  }
  return lines;
}

// The ranks' last ops (their records' history) as a Perfetto trace in `path`.
Status WriteHistoryTrace(const doctor::RunProgress& run, const doctor::Diagnosis& diagnosis,
                         int64_t now_ns, const std::string& path, std::ostream& out) {
  ZB_ASSIGN_OR_RETURN(const Timeline timeline, doctor::HistoryTimeline(run, now_ns));
  int stages = 0;
  for (const doctor::RankProgress& rank : run.ranks)
    stages = std::max(stages, rank.stages);
  const traces::ExportedTimeline exported{
      &timeline,
      "last ops",
      stages,
      0,
      std::nullopt,
      "zb doctor " + run.directory + ": the ranks' last ops (" + diagnosis.state + ")"};
  ZB_ASSIGN_OR_RETURN(const std::string text, traces::WritePerfettoTrace({exported}));
  ZB_RETURN_IF_ERROR(WriteFileAtomically(path, text).WithContext("--trace-out " + path));
  out << "wrote " << path << ": the last " << timeline.ops.size() << " ops of " << run.ranks.size()
      << " rank(s), the op each is in up to now (ui.perfetto.dev)\n";
  return Status::Ok();
}

}  // namespace

int RunDoctorCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command_name = "doctor";
  const std::string usage =
      "RUN_DIR... [--json] [--stall-timeout S] [--flight-recorder PATH] [--trace-out FILE]";
  po::options_description options("options");
  options.add_options()("run-dir", po::value<std::vector<std::string>>(),
                        "the job's run directory, its ranks' rank<R>.progress records (a "
                        "multi-host job: every host's)")("json", po::bool_switch(),
                                                         "print zb-diagnosis/1 JSON")(
      "stall-timeout", po::value<double>()->default_value(30.0),
      "seconds without a mark, ranks inside a step, that make a job stalled")(
      "flight-recorder", po::value<std::string>(),
      "also read torch's flight-recorder dumps: a directory, or the prefix of TORCH_FR_DUMP_"
      "TEMP_FILE (/tmp/nccl_trace_rank_ reads /tmp/nccl_trace_rank_<R>)")(
      "trace-out", po::value<std::string>(),
      "also write the ranks' last ops (each record's history) and the op each is in as a "
      "Chrome trace for Perfetto");
  po::positional_options_description positional;
  positional.add("run-dir", -1);
  po::variables_map values;
  int exit_code = 0;
  const std::string epilogue =
      "Every rank run by zb replay, zb profile, zbkit's executor or the shim keeps its\n"
      "progress record in the run directory (zb replay --run-dir, else the directory it names\n"
      "when a job stalls or fails). zb doctor reads them, also while the job hangs, and names\n"
      "the culprit rank and op and the chain of waits that leads to it.\n\n"
      "examples:\n"
      "  zb doctor /tmp/zbkit-run-Ab12Cd\n"
      "  zb doctor run1 --json\n"
      "  zb doctor host0/run1 host1/run1\n"
      "      a job across two hosts: each kept its own ranks' records\n"
      "  zb doctor run1 --flight-recorder /tmp/nccl_trace_rank_\n"
      "      with what torch's flight recorder dumped (NCCL jobs, on a timeout)\n"
      "  zb doctor run1 --trace-out stall.json\n"
      "      the steps before the stall, rank beside rank, for ui.perfetto.dev\n";
  if (!ParseCommandLine(command_name, usage, args, options, positional, values, out, err, exit_code,
                        epilogue)) {
    return exit_code;
  }
  const double timeout = values["stall-timeout"].as<double>();
  if (!(timeout > 0)) {
    return ReportError(err, command_name, UsageError("--stall-timeout must be > 0 seconds"));
  }
  const bool json = values["json"].as<bool>();
  std::vector<std::string> flight_recorder;
  if (values.count("flight-recorder")) {
    auto lines = FlightRecorderLines(values["flight-recorder"].as<std::string>());
    if (!lines.ok()) return ReportError(err, command_name, lines.status());
    flight_recorder = std::move(*lines);
  }
  if (!values.count("run-dir")) {
    if (flight_recorder.empty()) {
      return ReportError(err, command_name, UsageError("give a RUN_DIR (or --flight-recorder)"));
    }
    // A job that ran without zbkit's records: what the flight recorder says, alone.
    doctor::Diagnosis only;
    only.state = "unknown";
    only.flight_recorder = std::move(flight_recorder);
    out << (json ? doctor::DiagnosisJson(only) : doctor::FormatFlightRecorder(only));
    return 0;
  }
  const auto directories = values["run-dir"].as<std::vector<std::string>>();
  auto run = doctor::ReadRunProgress(directories);
  if (!run.ok()) return ReportError(err, command_name, run.status());
  doctor::DiagnoseOptions diagnose;
  diagnose.now_ns = doctor::NowNs();
  diagnose.stall_timeout_s = timeout;
  doctor::Diagnosis diagnosis = doctor::Diagnose(*run, diagnose);
  diagnosis.flight_recorder = std::move(flight_recorder);
  // What zb replay said while the processes were there. After --on-stall kill the ranks read
  // dead (zb killed them), so that diagnosis, which says who ended the job and why, is the one
  // shown; otherwise its culprit is one line above today's. Not where it saw fewer ranks' records
  // than the directories given now hold (one host's zb replay of a job across hosts): the other
  // hosts' records say more than its "no record" did, so today's diagnosis is shown, with who
  // ended the job.
  auto kept = doctor::ReadDiagnosisJson(directories.front() + "/diagnosis.json");
  const bool saw_every_record = kept.ok() && kept->ranks.size() >= run->ranks.size();
  const bool ended_by_zb = kept.ok() && !kept->ended_by.empty() && kept->job == diagnosis.job &&
                           diagnosis.state != "progressing" && saw_every_record;
  if (!ended_by_zb && kept.ok() && kept->job == diagnosis.job && !saw_every_record) {
    diagnosis.ended_by = kept->ended_by;
  }
  if (ended_by_zb) {
    kept->flight_recorder = diagnosis.flight_recorder;
    kept->problems = diagnosis.problems;
  } else if (!json && kept.ok() && !kept->headline.empty()) {
    out << "at the stall (diagnosis.json): culprit: " << kept->headline << "\n";
  }
  const doctor::Diagnosis& shown = ended_by_zb ? *kept : diagnosis;
  out << (json ? doctor::DiagnosisJson(shown) : doctor::FormatDiagnosis(shown));
  if (values.count("trace-out")) {
    // With --json, stdout is the document alone: the line saying where the trace went goes to
    // stderr.
    const Status traced = WriteHistoryTrace(
        *run, diagnosis, diagnose.now_ns, values["trace-out"].as<std::string>(), json ? err : out);
    if (!traced.ok()) return ReportError(err, command_name, traced);
  }
  if (!run->problems.empty()) {
    err << "zb doctor: " << run->problems.front()
        << (run->problems.size() > 1 ? " (and " + std::to_string(run->problems.size() - 1) +
                                           " more problems, listed above)"
                                     : "")
        << "\n";
    return 1;
  }
  return 0;
}

}  // namespace zb::cli
