// SPDX-License-Identifier: Apache-2.0
// zb costs export --store DB [--profile ID] --format json|layers -o FILE|-
// zb costs list   --store DB [--json]
// zb costs hops   --store DB [--json]
// zb costs record-hops --store DB [--cluster C] FILE
//
// export writes a stored cost profile as zb-costs/1, the input of `zb tune`; without --profile
// the most recent measured one (a profile linked to a profiling or import run). hops lists the
// per-hop times measured on each cluster (`zb rehearse --store` records them through record-hops,
// from a zb-hops/1 file); `zb tune --comm cluster` uses the latest of the tuned cluster.
#include "profiler_commands.h"
#include "zbkit/cli/output.h"
#include "zbkit/cli/store_listing.h"
#include "zbkit/cli/text_table.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/store.h"
#include "zbkit/schemas/validate.h"

namespace zb::cli {
namespace {

int RunCostsExport(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "costs export";
  po::options_description options("options");
  po::options_description_easy_init add = options.add_options();
  add("store", po::value<std::string>()->required(), "SQLite store");
  add("profile", po::value<int64_t>(), "cost profile id (default: the most recent measured one)");
  add("format", po::value<std::string>()->default_value("json"),
      "json (zb-costs/1) or layers (its per-block costs, zb-layers/1, for zb partition)");
  add("output,o", po::value<std::string>()->required(), "file to write ('-' for stdout)");
  po::variables_map values;
  int exit_code = 0;
  const std::string example =
      "example:\n  zb costs export --store zb.db --profile 1 --format json -o costs.json\n"
      "      a stored profile as zb-costs/1, for zb tune --costs\n"
      "  zb costs export --store zb.db --format layers -o layers.json\n"
      "      its per-block costs (zb profile --torch), for zb partition --layers\n";
  if (!ParseCommandLine(command, "--store DB [--profile ID] --format json|layers -o FILE", args,
                        options, {}, values, out, err, exit_code, example)) {
    return exit_code;
  }
  const std::string format = values["format"].as<std::string>();
  if (format != "json" && format != "layers") {
    return ReportError(err, command,
                       UsageError("--format must be json or layers, got \"" + format + "\""));
  }
  auto store = Store::Open(values["store"].as<std::string>(), Store::Mode::kReadOnly);
  if (!store.ok()) return ReportError(err, command, store.status());
  int64_t id = 0;
  if (values.count("profile")) {
    id = values["profile"].as<int64_t>();
  } else {
    auto infos = store->ListCostProfiles();
    if (!infos.ok()) return ReportError(err, command, infos.status());
    for (const CostProfileInfo& info : *infos) {
      if (info.run_id) id = info.id;  // listed by id: the last one is the most recent
    }
    if (id == 0) {
      return ReportError(
          err, command,
          NotFound(store->path() + ": no measured cost profile (run zb profile or zb import with "
                                   "--store, or give --profile ID)"));
    }
  }
  auto costs = store->LoadCostProfile(id);
  if (!costs.ok()) return ReportError(err, command, costs.status());
  auto details = store->LoadCostProfileDetails(id);
  if (!details.ok()) return ReportError(err, command, details.status());
  Status valid = ValidateCostProfile(*costs);
  if (!valid.ok()) {
    return ReportError(err, command,
                       valid.WithContext(store->path() + ": cost profile " + std::to_string(id)));
  }
  if (format == "layers") {
    if (!details->layers) {
      return ReportError(
          err, command,
          NotFound(store->path() + ": cost profile " + std::to_string(id) +
                   " has stage totals only, no per-block costs (measured by zb profile --torch; "
                   "zb partition --costs FILE --blocks N,... shares stage totals out evenly)"));
    }
    Status written = WriteToFileOrStdout(values["output"].as<std::string>(),
                                         LayersToJson(*details->layers), out);
    if (!written.ok()) return ReportError(err, command, written);
    return 0;
  }
  bool has_b = false;
  bool has_bw = false;
  for (const CostSpread& spread : details->spread) {
    has_b = has_b || spread.kind == OpKind::kB;
    has_bw = has_bw || spread.kind == OpKind::kBW;
  }
  if (has_bw && !has_b) {
    err << "zb costs export: note: cost profile " << id
        << " has no B/W split (the job ran fused backwards): B = BW, W = 0\n";
  }
  Status written =
      WriteToFileOrStdout(values["output"].as<std::string>(), CostsToJson(*costs), out);
  if (!written.ok()) return ReportError(err, command, written);
  return 0;
}

int RunCostsList(const Args& args, std::ostream& out, std::ostream& err) {
  StoreListing listing("zb-costs-list/1", "profiles",
                       {"id", "job", "name", "stages", "run", "memory", "created_at"});
  return RunStoreListing(
      "costs list", args, out, err, std::move(listing),
      [](const Store& store, StoreListing& rows) -> Status {
        ZB_ASSIGN_OR_RETURN(std::vector<CostProfileInfo> infos, store.ListCostProfiles());
        for (const CostProfileInfo& info : infos) {
          rows.Add(
              {{"id", info.id},
               {"cluster", info.cluster},
               {"job", info.job},
               {"name", info.name},
               {"stages", info.num_stages},
               {"run", info.run_id ? nlohmann::json(*info.run_id) : nullptr},
               {"memory_source", info.memory_source
                                     ? nlohmann::json(MemorySourceName(*info.memory_source))
                                     : nlohmann::json(nullptr)},
               {"created_at", info.created_at}},
              {std::to_string(info.id), info.cluster + "/" + info.job, info.name,
               std::to_string(info.num_stages), info.run_id ? std::to_string(*info.run_id) : "-",
               info.memory_source ? MemorySourceName(*info.memory_source) : "-", info.created_at});
        }
        return Status::Ok();
      });
}

int RunCostsHops(const Args& args, std::ostream& out, std::ostream& err) {
  StoreListing listing("zb-hops-list/1", "measurements",
                       {"id", "cluster", "bytes", "hops", "median_ms", "source", "measured_at"});
  return RunStoreListing(
      "costs hops", args, out, err, std::move(listing),
      [](const Store& store, StoreListing& rows) -> Status {
        ZB_ASSIGN_OR_RETURN(std::vector<HopMeasurement> measurements, store.ListHopMeasurements());
        for (const HopMeasurement& m : measurements) {
          nlohmann::json hops = nlohmann::json::array();
          for (const MeasuredHop& hop : m.hops) {
            hops.push_back(
                {{"from", hop.from_rank}, {"to", hop.to_rank}, {"ms", NsToMs(hop.time)}});
          }
          rows.Add(
              {{"id", m.id},
               {"cluster", m.cluster},
               {"message_bytes", m.message_bytes},
               {"median_ms", NsToMs(m.MedianTime())},
               {"source", m.source},
               {"measured_at", m.measured_at},
               {"hops", hops}},
              {std::to_string(m.id), m.cluster, std::to_string(m.message_bytes),
               std::to_string(m.hops.size()), FormatMs(m.MedianTime()), m.source, m.measured_at});
        }
        return Status::Ok();
      });
}

int RunCostsRecordHops(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string command = "costs record-hops";
  po::options_description options("options");
  po::options_description_easy_init add = options.add_options();
  add("store", po::value<std::string>()->required(), "SQLite store");
  add("cluster", po::value<std::string>()->default_value("local"), "cluster the hops belong to");
  add("file", po::value<std::string>()->required(), "zb-hops/1 file (zb rehearse writes one)");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map values;
  int exit_code = 0;
  const std::string example =
      "example:\n  zb costs record-hops --store zb.db --cluster lab hops.json\n"
      "      a zb-hops/1 measurement (zb rehearse writes one) as the cluster's hop times\n";
  if (!ParseCommandLine(command, "--store DB [--cluster C] FILE", args, options, positional, values,
                        out, err, exit_code, example)) {
    return exit_code;
  }
  auto measurement = ReadHopsFile(values["file"].as<std::string>());
  if (!measurement.ok()) return ReportError(err, command, measurement.status());
  measurement->cluster = values["cluster"].as<std::string>();
  auto store = Store::Open(values["store"].as<std::string>());
  if (!store.ok()) return ReportError(err, command, store.status());
  auto id = store->RecordHops(*measurement);
  if (!id.ok()) return ReportError(err, command, id.status());
  out << "hop measurement " << *id << " of cluster " << measurement->cluster << ": median "
      << FormatMs(measurement->MedianTime()) << " ms over " << measurement->hops.size() << " hops ("
      << measurement->message_bytes << " B messages, " << measurement->source << ")\n";
  return 0;
}

}  // namespace

int RunCostsCommand(const Args& args, std::ostream& out, std::ostream& err) {
  const std::string usage =
      "usage: zb costs export --store DB [--profile ID] --format json -o FILE\n"
      "       zb costs list --store DB [--json]\n"
      "       zb costs hops --store DB [--json]\n"
      "       zb costs record-hops --store DB [--cluster C] FILE\n"
      "example:\n  zb costs list --store zb.db\n      the profiles a store holds, with their ids\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? err : out) << usage;
    return args.empty() ? 2 : 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "export") return RunCostsExport(rest, out, err);
  if (args[0] == "list") return RunCostsList(rest, out, err);
  if (args[0] == "hops") return RunCostsHops(rest, out, err);
  if (args[0] == "record-hops") return RunCostsRecordHops(rest, out, err);
  err << "zb costs: unknown action \"" << args[0]
      << "\" (export, list, hops or record-hops; see zb costs --help)\n";
  return 2;
}

}  // namespace zb::cli
