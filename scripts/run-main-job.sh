#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main job, as far as the landed components reach: set up and build, recompute the
# ZB paper's Table 5, then tune the paper's twelve settings (bundled cost profiles from its
# Table 6) at the ZB-1p (1x) and ZB-2p (2x) memory budgets into the embedded SQLite store, list
# what was stored, and show one tuned timeline. Output store: out/zbkit.db (ZBKIT_STORE).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" >/dev/null
zb="${ZBKIT_BUILD_DIR:-$root/build}/cli/zb"
store="${ZBKIT_STORE:-$root/out/zbkit.db}"
mkdir -p "$(dirname "$store")"
rm -f "$store" "$store-wal" "$store-shm"

echo "== zb bench paper: ICLR 2024 Table 5 recomputed from Table 6"
"$zb" bench paper
echo
echo "== zb tune: the twelve paper settings at 1x and 2x of 1F1B's activation memory"
for costs in "$root"/tuner/data/paper/*.json; do
  name="$(basename "$costs" .json)"
  microbatches="${name##*-m}"
  for limit in 1x 2x; do
    "$zb" tune --costs "$costs" --microbatches "$microbatches" --mem-limit "$limit" \
      --store "$store" --cluster paper-a100 --job "$name@$limit" >/dev/null
  done
done
"$zb" list --store "$store"
echo
echo "== zb show: the tuned 1.5B p8 m24 schedule at 2x"
id="$("$zb" list --store "$store" | awk '$2 == "paper-a100/1.5B-p8-m24@2x" {print $1}')"
"$zb" show --store "$store" --schedule "$id" --width 120
echo
echo "store: $store"

echo
echo "== zbview --screenshot: that tuned schedule against 1F1B on the same costs and cap"
zbview="${ZBKIT_BUILD_DIR:-$root/build}/gui/zbview"
if [[ -x "$zbview" ]]; then
  "$zb" tune --costs "$root/tuner/data/paper/1.5B-p8-m24.json" --microbatches 24 --mem-limit 2x \
    --family 1f1b --store "$store" --cluster paper-a100 --job "1.5B-p8-m24@2x" >/dev/null
  baseline="$("$zb" list --store "$store" |
    awk '$2 == "paper-a100/1.5B-p8-m24@2x" && $3 == "1f1b" {print $1}' | tail -n 1)"
  mkdir -p "$root/out"
  # Headless: zbview picks the offscreen platform itself for --screenshot.
  "$zbview" --screenshot "$root/out/zbview.png" "$store" --schedule "$id" --compare "$baseline"
  "$zbview" --screenshot "$root/out/zbview-tuned.png" "$store" --schedule "$id"
else
  echo "skipped: $zbview was not built (the GUI needs Qt 6: qt6-base-dev and qt6-svg-dev)"
fi

echo
echo "== zb profile -> zb costs export -> zb tune: a bundled CPU job, profiled without changing it"
# zbkit_nvtx_job is a 2-rank stand-in for a pipeline job (it spawns its ranks like torchrun and
# marks F/B/W with the ZB fork's NVTX names); the injection library records it, zb derives the
# per-stage costs (memory from the analytic model of the given dimensions), and zb tune picks a
# schedule for them.
build="${ZBKIT_BUILD_DIR:-$root/build}"
job="$build/tests/inject/zbkit_nvtx_job"
cpu_store="$root/out/cpu-demo.db"
if [[ -x "$job" && -f "$build/profiler/inject/libzbkit_inject.so" ]]; then
  rm -f "$cpu_store" "$cpu_store-wal" "$cpu_store-shm"
  "$zb" profile --store "$cpu_store" --name cpu-demo --pp 2 --skip-iters 1 \
    --hidden 1024 --heads 16 --seq 1024 --micro-batch-size 1 --layers 8 \
    -- "$job" --workers 2 --iters 4 --microbatches 8
  "$zb" costs export --store "$cpu_store" --format json -o "$root/out/cpu-demo-costs.json"
  "$zb" tune --costs "$root/out/cpu-demo-costs.json" --microbatches 8 --mem-limit 2x \
    --store "$cpu_store" --job cpu-demo --out "$root/out/cpu-demo-schedule.json"
  "$zb" export --store "$cpu_store" --schedule 1 --format torch-csv -o "$root/out/cpu-demo-schedule.csv"
  if [[ -x "$zbview" ]]; then
    # Fresh store: the measured run is timeline 1, the tuned schedule is schedule 1.
    "$zbview" --screenshot "$root/out/cpu-demo-measured.png" "$cpu_store" --schedule t1
    "$zbview" --screenshot "$root/out/cpu-demo-tuned.png" "$cpu_store" --schedule s1
  fi
else
  echo "skipped: the injection library and the demo job need the CUDA Toolkit at build time"
fi
