// SPDX-License-Identifier: Apache-2.0
// A rank's progress record (zb doctor's input, written in place by a rank that may die at any
// byte): any bytes either get an error or a record that diagnoses (and gives its history as a
// timeline) without crashing.
#include "fuzz_support.h"
#include "zbkit/doctor/diagnosis.h"
#include "zbkit/doctor/history.h"
#include "zbkit/doctor/progress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zb::fuzz::InputFile file(data, size, ".progress");
  auto rank = zb::doctor::ReadProgressFile(file.path());
  if (!rank.ok()) return 0;
  zb::doctor::RunProgress run;
  run.directory = "fuzz";
  run.world = rank->world;
  run.ranks.push_back(std::move(*rank));
  zb::doctor::DiagnoseOptions options;
  options.now_ns = rank->since_ns;
  options.probe = [](const zb::doctor::RankProgress&) { return zb::doctor::ProcessState::kAlive; };
  const zb::doctor::Diagnosis diagnosis = zb::doctor::Diagnose(run, options);
  (void)zb::doctor::FormatDiagnosis(diagnosis);
  (void)zb::doctor::DiagnosisJson(diagnosis);
  (void)zb::doctor::HistoryTimeline(run, options.now_ns);
  return 0;
}
