#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main job: set up and build, recompute the ZB paper's Table 5, tune the paper's
# twelve settings (bundled cost profiles from its Table 6) at the ZB-1p (1x) and ZB-2p (2x)
# memory budgets into the embedded SQLite store, show one tuned timeline, then `zb demo`: profile
# the bundled PyTorch job, tune, replay and measure it. Output store: out/zbkit.db (ZBKIT_STORE).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" >/dev/null
zb="${ZBKIT_BUILD_DIR:-$root/build}/zb/zb"
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
echo "== zb demo: profile the bundled PyTorch job -> tune -> replay -> measure (2 ranks, CPU)"
# The loop on a real torch job (adapters/pytorch/examples): profiled unmodified under torch's
# Schedule1F1B, tuned under the best torch schedule's measured memory, replayed through the shim
# in the unmodified script and through zbkit's executor, alternating with torch's own schedules;
# every job's log is in out/demo/logs, the predicted-vs-measured picture in out/demo.
"$zb" demo --store "$store" --dir "$root/out/demo"
