// SPDX-License-Identifier: Apache-2.0
// zb trace (SCHEDULE | --store DB (--schedule ID | --timeline ID | --run ID))
//          --format perfetto|kineto -o PATH [--iteration N] [--with-prediction]
// zb trace --check FILE
// A predicted schedule or a measured run out to Perfetto (one Chrome trace) or Holistic Trace
// Analysis (one Kineto JSON per rank in a directory); --check runs the structural check on any
// Chrome trace (docs/trace-export.md).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "profiler_commands.h"
#include "zbkit/cli/schedule_source.h"
#include "zbkit/profiler/import.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"
#include "zbkit/traces/trace_export.h"

namespace zb::cli {
namespace {

namespace fs = std::filesystem;

// The timelines to write, and what keeps them alive.
struct Loaded {
  std::vector<Timeline> timelines;  // the one asked for, then its prediction (--with-prediction)
  std::vector<traces::ExportedTimeline> exported;
};

// The schedule's predicted timeline, described for the trace.
Status AddPrediction(const Schedule& schedule, std::optional<double> cap, const std::string& source,
                     Loaded& loaded) {
  if (!schedule.predicted) {
    return InvalidInput(source + ": the schedule has no predicted timing (zb tune writes one)");
  }
  loaded.timelines.push_back(TimelineFromSchedule(schedule));
  loaded.exported.push_back(
      {nullptr, "predicted", schedule.num_stages(), schedule.costs.comm, cap, source});
  return Status::Ok();
}

// A stored timeline (--timeline, or the run's for --run), with its schedule's stages, hop
// latency and cap where it replayed one, and that schedule's prediction with --with-prediction.
Status LoadStoredTimeline(const po::variables_map& values, Loaded& loaded) {
  const std::string db = values["store"].as<std::string>();
  ZB_ASSIGN_OR_RETURN(Store store, Store::Open(db, Store::Mode::kReadOnly));
  std::optional<TimelineInfo> info;
  std::string source;
  if (values.count("run")) {
    const int64_t run = values["run"].as<int64_t>();
    ZB_ASSIGN_OR_RETURN(std::vector<TimelineInfo> timelines, store.ListRunTimelines(run));
    if (timelines.empty())
      return NotFound(db + ": run " + std::to_string(run) + " has no timeline");
    info = timelines.front();
    source = db + " run " + std::to_string(run);
  } else {
    const int64_t id = values["timeline"].as<int64_t>();
    ZB_ASSIGN_OR_RETURN(info, store.LoadTimelineInfo(id));
    source = db + " timeline " + std::to_string(id);
  }
  ZB_ASSIGN_OR_RETURN(Timeline timeline, store.LoadTimeline(info->id));
  loaded.timelines.push_back(std::move(timeline));
  traces::ExportedTimeline exported{nullptr, TimelineKindName(info->kind), 0, 0, std::nullopt,
                                    source};
  std::optional<Schedule> schedule;
  if (info->schedule_id) {
    ZB_ASSIGN_OR_RETURN(schedule, store.LoadSchedule(*info->schedule_id));
    exported.num_stages = schedule->num_stages();
    exported.comm = schedule->costs.comm;
    ZB_ASSIGN_OR_RETURN(const ScheduleInfo schedule_info,
                        store.LoadScheduleInfo(*info->schedule_id));
    exported.cap = schedule_info.cap;
  }
  loaded.exported.push_back(exported);
  if (values["with-prediction"].as<bool>()) {
    if (!schedule) {
      return InvalidInput(source +
                          ": --with-prediction: the timeline belongs to no stored schedule");
    }
    ZB_RETURN_IF_ERROR(AddPrediction(
        *schedule, exported.cap, db + " schedule " + std::to_string(*info->schedule_id), loaded));
  }
  return Status::Ok();
}

Expected<Loaded> LoadTimelines(const po::variables_map& values) {
  Loaded loaded;
  const bool stored = values.count("timeline") > 0 || values.count("run") > 0;
  if (values.count("timeline") > 0 && values.count("run") > 0) {
    return UsageError("give --timeline or --run, not both");
  }
  if (stored) {
    if (values.count("store") == 0) return UsageError("--timeline and --run need --store DB");
    if (values.count("schedule") || values.count("file")) {
      return UsageError("give a schedule or a stored timeline, not both");
    }
    ZB_RETURN_IF_ERROR(LoadStoredTimeline(values, loaded));
  } else {
    if (values["with-prediction"].as<bool>()) {
      return UsageError("--with-prediction goes with --timeline or --run (a measured run)");
    }
    ZB_ASSIGN_OR_RETURN(Schedule schedule, LoadScheduleFromArguments(values));
    std::optional<double> cap;
    if (values.count("store")) {
      ZB_ASSIGN_OR_RETURN(Store store,
                          Store::Open(values["store"].as<std::string>(), Store::Mode::kReadOnly));
      ZB_ASSIGN_OR_RETURN(const ScheduleInfo info,
                          store.LoadScheduleInfo(values["schedule"].as<int64_t>()));
      cap = info.cap;
    }
    ZB_RETURN_IF_ERROR(AddPrediction(schedule, cap, ScheduleSourceName(values), loaded));
  }
  std::optional<int32_t> iteration;
  if (values.count("iteration") && values["iteration"].as<std::string>() != "all") {
    const std::string text = values["iteration"].as<std::string>();
    const bool digits =
        !text.empty() && text.size() <= 9 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) return UsageError("--iteration " + text + ": give an iteration number or 'all'");
    iteration = std::stoi(text);
  }
  for (size_t i = 0; i < loaded.timelines.size(); ++i) {
    // A prediction is one iteration: --iteration picks among the measured run's only.
    if (loaded.timelines[i].kind == TimelineKind::kPredicted && i > 0) continue;
    auto selected = traces::SelectIteration(loaded.timelines[i], iteration);
    if (!selected.ok()) return selected.status().WithContext(loaded.exported[i].source);
    loaded.timelines[i] = std::move(*selected);
  }
  for (size_t i = 0; i < loaded.timelines.size(); ++i)
    loaded.exported[i].timeline = &loaded.timelines[i];
  return loaded;
}

// Every rank's document is made before the first is written; each file is written whole.
Status WriteKinetoDirectory(const traces::ExportedTimeline& exported, const std::string& dir,
                            std::ostream& out) {
  ZB_ASSIGN_OR_RETURN(auto documents, traces::WriteKinetoTraces(exported));
  std::error_code error;
  if (fs::exists(dir, error) && !fs::is_empty(dir, error)) {
    return InvalidInput("-o " + dir +
                        ": the directory is not empty (one file per rank goes there)");
  }
  fs::create_directories(dir, error);
  if (error) return IoError("-o " + dir + ": " + error.message());
  for (const auto& [rank, text] : documents) {
    ZB_RETURN_IF_ERROR(WriteFileAtomically(dir + "/rank" + std::to_string(rank) + ".json", text));
  }
  out << "wrote " << documents.size() << " Kineto trace(s), one per rank, to " << dir
      << " (HTA: TraceAnalysis(trace_dir=\"" << dir << "\"))\n";
  return Status::Ok();
}

int RunCheck(const std::string& path, std::ostream& out, std::ostream& err) {
  auto text = profiler::ReadMaybeGzipFile(path);
  if (!text.ok()) return ReportError(err, "trace", text.status());
  auto check = traces::CheckChromeTrace(*text, path);
  if (!check.ok()) return ReportError(err, "trace", check.status());
  out << path << ": " << check->slices << " slices on " << check->tracks << " tracks, "
      << check->overlapping << " overlapping, " << check->nested << " nested; " << check->flows
      << " flows, " << check->unclosed_flows << " unclosed; " << check->counters
      << " counter samples, " << check->counters_out_of_order << " out of order\n";
  for (const std::string& problem : check->problems)
    out << "  " << problem << "\n";
  return check->ok() ? 0 : 1;
}

}  // namespace

int RunTraceCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "trace";
  po::options_description options("options");
  po::positional_options_description positional;
  AddScheduleSourceOptions(options, positional);
  options.add_options()("timeline", po::value<int64_t>(), "a stored timeline's id (with --store)")(
      "run", po::value<int64_t>(), "a stored run's id: its measured timeline (with --store)")(
      "format", po::value<std::string>(),
      "perfetto (one Chrome trace file) or kineto (a directory, one JSON per rank, for HTA)")(
      "output,o", po::value<std::string>(), "the file (perfetto) or directory (kineto) to write")(
      "iteration", po::value<std::string>(), "one iteration of a measured run (0, 1, ...) or all")(
      "with-prediction", po::bool_switch(),
      "perfetto: the replayed schedule's prediction beside the measured run, rank by rank")(
      "check", po::value<std::string>(),
      "check a Chrome trace for Perfetto: no overlapping slices per track, every flow closed, "
      "counters in time order (exit 1 if not)");
  po::variables_map values;
  int exit_code = 0;
  const std::string epilogue =
      "examples:\n"
      "  zb trace --store zb.db --schedule 3 --format perfetto -o tuned.json\n"
      "      the prediction, for ui.perfetto.dev (Open trace file)\n"
      "  zb trace --store zb.db --run 2 --with-prediction --format perfetto -o run.json\n"
      "      a replay beside its prediction\n"
      "  zb trace --store zb.db --run 2 --format kineto -o run-hta/\n"
      "      one Kineto JSON per rank: HTA's TraceAnalysis(trace_dir=\"run-hta\")\n";
  if (!ParseCommandLine(command,
                        "(SCHEDULE | --store DB (--schedule ID | --timeline ID | --run ID)) "
                        "--format perfetto|kineto -o PATH",
                        args, options, positional, values, out, err, exit_code, epilogue)) {
    return exit_code;
  }
  if (values.count("check")) return RunCheck(values["check"].as<std::string>(), out, err);
  if (!values.count("format") || !values.count("output")) {
    return ReportError(err, command, UsageError("give --format perfetto|kineto and -o PATH"));
  }
  const std::string format = values["format"].as<std::string>();
  if (format != "perfetto" && format != "kineto") {
    return ReportError(err, command,
                       UsageError("--format " + format + ": give perfetto or kineto"));
  }
  if (format == "kineto" && values["with-prediction"].as<bool>()) {
    return ReportError(err, command,
                       UsageError("--with-prediction is for --format perfetto (HTA reads one "
                                  "timeline per directory)"));
  }
  auto loaded = LoadTimelines(values);
  if (!loaded.ok()) return ReportError(err, command, loaded.status());
  const std::string path = values["output"].as<std::string>();
  if (format == "kineto") {
    const Status written = WriteKinetoDirectory(loaded->exported.front(), path, out);
    return written.ok() ? 0 : ReportError(err, command, written);
  }
  auto text = traces::WritePerfettoTrace(loaded->exported);
  if (!text.ok()) return ReportError(err, command, text.status());
  const Status written = WriteFileAtomically(path, *text);
  if (!written.ok()) return ReportError(err, command, written);
  out << "wrote " << path << " (ui.perfetto.dev: Open trace file)\n";
  return 0;
}

}  // namespace zb::cli
