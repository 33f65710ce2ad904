// SPDX-License-Identifier: Apache-2.0
// zb export (FILE | --store DB --schedule ID)
//           --format json|torch-csv|torch-csv-legacy|torch-csv-comms -o FILE
//           [--for torchtitan [--local-batch-size N]]
#include <filesystem>
#include <sstream>

#include "tuner_commands.h"
#include "zbkit/cli/output.h"
#include "zbkit/cli/schedule_source.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/tuner/torch_export.h"
#include "zbkit/tuner/tune.h"

namespace zb::cli {
namespace {

bool SplitsBackwards(const Schedule& schedule) {
  for (const RankProgram& program : schedule.programs) {
    for (const Op& op : program.ops) {
      if (op.kind == OpKind::kW) return true;
    }
  }
  return false;
}

// What PyTorch's runtime alone does with a split order under the profiled job's activation
// checkpointing (docs/activation-checkpointing.md §1): per-op selective AC fails in its W, so such
// a CSV is refused; full AC runs, recomputing each block in B and once per parameter group in W,
// which a note says (`note` empty when there is nothing to say).
Status CheckTorchAloneUnderCheckpointing(const Schedule& schedule, std::string& note) {
  const std::string& mode = schedule.costs.checkpointing;
  if (!SplitsBackwards(schedule) || mode.empty() || mode == "none") return Status::Ok();
  if (mode == "op" || mode == "mixed" || mode == "reentrant") {
    return InvalidInput(
        "the profiled job checkpoints activations (" + mode +
        "), which PyTorch's runtime cannot run under this order's split backwards (per-op "
        "selective: \"Trying to backward an extra time\" in W; reentrant: no split); run it with "
        "zb replay, which recomputes each checkpointed block once, or export a fused order");
  }
  note = "zb export: note: the profiled job checkpoints activations (" + mode +
         "): PyTorch's runtime alone recomputes each checkpointed block in B and again once per "
         "parameter group in W; zb replay recomputes it once\n";
  return Status::Ok();
}

// What makes torchtitan (0.2.2) run the CSV with the right split (docs/formats.md §4.2): its
// model split comes from the schedule *name* (V placement only for ZBVZeroBubble/DualPipeV,
// loop otherwise; one stage per rank for single-stage names), the CSV from
// pipeline_parallel_schedule_csv, the microbatch count from local_batch_size /
// pipeline_parallel_microbatch_size. Activation checkpointing stays as the job has it: under zb
// replay a split order recomputes each checkpointed block once (docs/activation-checkpointing.md).
Expected<std::string> TorchtitanConfig(const Schedule& schedule, const std::string& csv,
                                       std::optional<int> local_batch_size) {
  const JobLayout layout{schedule.placement, schedule.chunks};
  const std::string name = tuner::TorchClassFor(layout).substr(std::string("Schedule").size());
  const int m = schedule.microbatches;
  std::string microbatch_size = "training.local_batch_size / " + std::to_string(m);
  if (local_batch_size) {
    if (*local_batch_size < m || *local_batch_size % m != 0) {
      return UsageError("--local-batch-size " + std::to_string(*local_batch_size) +
                        " does not split into the schedule's " + std::to_string(m) +
                        " microbatches");
    }
    microbatch_size = std::to_string(*local_batch_size / m);
  }
  const bool split = SplitsBackwards(schedule);
  const std::string stages = std::to_string(schedule.ranks * schedule.chunks);
  std::ostringstream out;
  out << "torchtitan: run " << csv << " (" << JobLayoutDescription(layout) << ", " << schedule.ranks
      << " ranks, " << m << " microbatches) with, in the job's TOML:\n"
      << "[parallelism]\n"
      << "pipeline_parallel_degree = " << schedule.ranks << "\n"
      << "pipeline_parallel_schedule = \"" << name << "\"  # the name sets the model split\n"
      << "pipeline_parallel_schedule_csv = \"" << csv << "\"\n"
      << "pipeline_parallel_microbatch_size = " << microbatch_size << "  # " << m
      << " microbatches\n";
  if (schedule.chunks > 2) {
    out << "# and pipeline_parallel_layers_per_stage so that the model splits into " << stages
        << " stages\n";
  }
  if (split) {
    out << "# activation_checkpoint as the job has it: run it with zb replay, which recomputes "
           "each\n# checkpointed block once; torchtitan alone recomputes it in B and again in W\n";
  }
  out << "or on its command line: --parallelism.pipeline_parallel_degree " << schedule.ranks
      << " --parallelism.pipeline_parallel_schedule " << name
      << " --parallelism.pipeline_parallel_schedule_csv " << csv;
  if (local_batch_size) {
    out << " --parallelism.pipeline_parallel_microbatch_size " << microbatch_size;
  }
  out << "\n";
  return out.str();
}

}  // namespace

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
  add("for", po::value<std::string>(),
      "torchtitan: with --format torch-csv, also print the config lines that make torchtitan "
      "run the CSV with the schedule's stage split (docs/formats.md 4.2)");
  add("local-batch-size", po::value<int>(),
      "with --for torchtitan: the job's training.local_batch_size, to give the microbatch size");
  po::variables_map values;
  int exit_code = 0;
  const std::string example =
      "examples:\n  zb export tuned.json --format torch-csv -o tuned.csv\n      the order as "
      "PyTorch's schedule CSV (_PipelineScheduleRuntime._load_csv)\n"
      "  zb export --store zb.db --schedule 3 --format torch-csv -o tuned.csv --for torchtitan\n"
      "      also the torchtitan config lines that run it\n";
  if (!ParseCommandLine(command, "(FILE | --store DB --schedule ID) --format F -o FILE", args,
                        options, positional, values, out, err, exit_code, example)) {
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
  const bool for_titan = values.count("for") > 0;
  if (for_titan) {
    if (values["for"].as<std::string>() != "torchtitan") {
      return ReportError(
          err, command,
          UsageError("--for must be torchtitan, got \"" + values["for"].as<std::string>() + "\""));
    }
    if (format != "torch-csv") {
      return ReportError(err, command,
                         UsageError("--for torchtitan needs --format torch-csv (torchtitan "
                                    "loads compute-only CSVs)"));
    }
    if (values["output"].as<std::string>() == "-") {
      return ReportError(err, command,
                         UsageError("--for torchtitan needs -o FILE: the config names it"));
    }
  } else if (values.count("local-batch-size")) {
    return ReportError(err, command, UsageError("--local-batch-size goes with --for torchtitan"));
  }
  auto schedule = LoadScheduleFromArguments(values);
  if (!schedule.ok()) return ReportError(err, command, schedule.status());

  std::string content;
  if (format == "json") {
    content = ScheduleToJson(*schedule);
  } else {
    std::string note;
    const Status torch_alone = CheckTorchAloneUnderCheckpointing(*schedule, note);
    if (!torch_alone.ok()) {
      return ReportError(err, command, torch_alone.WithContext(ScheduleSourceName(values)));
    }
    err << note;
    const tuner::TorchCsvFormat torch_format =
        format == "torch-csv"          ? tuner::TorchCsvFormat::kComputeOnly
        : format == "torch-csv-legacy" ? tuner::TorchCsvFormat::kLegacyComputeOnly
                                       : tuner::TorchCsvFormat::kComputeComms;
    auto csv = tuner::ExportTorchCsv(*schedule, torch_format);
    if (!csv.ok()) {
      return ReportError(err, command, csv.status().WithContext(ScheduleSourceName(values)));
    }
    content = std::move(*csv);
  }
  std::string titan;
  if (for_titan) {
    std::error_code ignored;
    const std::filesystem::path path =
        std::filesystem::absolute(values["output"].as<std::string>(), ignored);
    std::optional<int> local_batch_size;
    if (values.count("local-batch-size")) local_batch_size = values["local-batch-size"].as<int>();
    auto config = TorchtitanConfig(*schedule, path.string(), local_batch_size);
    if (!config.ok()) return ReportError(err, command, config.status());
    titan = std::move(*config);
  }
  Status written = WriteToFileOrStdout(values["output"].as<std::string>(), content, out);
  if (!written.ok()) return ReportError(err, command, written);
  out << titan;
  return 0;
}

}  // namespace zb::cli
