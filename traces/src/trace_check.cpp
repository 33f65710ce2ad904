// SPDX-License-Identifier: Apache-2.0
// The structural check of a Chrome trace (trace_export.h): what Perfetto's JSON importer needs
// to show every event, checked on any trace (zbkit's exports, or a user's own).
#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zbkit/traces/trace_export.h"

namespace zb::traces {
namespace {

using nlohmann::json;

// Times in integer nanoseconds, as Perfetto's importer rounds the microsecond doubles (a sum of
// two doubles, 2828.369 + 469.9, is not the next slice's 3298.269).
struct SliceSpan {
  int64_t start = 0;
  int64_t end = 0;
};

// Fields read whatever their type (a trace of another tool may write pids as strings or leave a
// field out): a number as it is, a string by its hash, anything else as 0; never an exception.
int64_t Nanoseconds(const json& event, const char* field) {
  const auto it = event.find(field);
  if (it == event.end() || !it->is_number()) return 0;
  const double micros = it->get<double>();
  return std::isfinite(micros) && std::abs(micros) < 9e12 ? std::llround(micros * 1000.0) : 0;
}

int64_t IdField(const json& event, const char* field) {
  const auto it = event.find(field);
  if (it == event.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number()) return static_cast<int64_t>(it->get<double>());
  if (it->is_string())
    return static_cast<int64_t>(std::hash<std::string>()(it->get<std::string>()));
  return 0;
}

std::string TextField(const json& event, const char* field) {
  const auto it = event.find(field);
  return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
}

struct FlowEnd {
  int count = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  int64_t ts = 0;
};

void Problem(TraceCheck& check, const std::string& line) {
  if (check.problems.size() < 10) check.problems.push_back(line);
}

bool InsideASlice(const std::map<std::pair<int64_t, int64_t>, std::vector<SliceSpan>>& slices,
                  const FlowEnd& end) {
  auto it = slices.find({end.pid, end.tid});
  if (it == slices.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&](const SliceSpan& slice) {
    return slice.start <= end.ts && end.ts <= slice.end;
  });
}

}  // namespace

Expected<TraceCheck> CheckChromeTrace(const std::string& text, const std::string& source) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return InvalidInput(source + ": not JSON");
  const json* events = doc.is_array() ? &doc : nullptr;
  if (doc.is_object() && doc.contains("traceEvents")) events = &doc["traceEvents"];
  if (events == nullptr || !events->is_array()) {
    return InvalidInput(source + ": no traceEvents array");
  }
  TraceCheck check;
  std::map<std::pair<int64_t, int64_t>, std::vector<SliceSpan>> slices;
  std::map<int64_t, FlowEnd> starts;
  std::map<int64_t, FlowEnd> finishes;
  std::map<std::pair<int64_t, std::string>, int64_t> last_counter;
  for (const json& event : *events) {
    if (!event.is_object()) continue;
    const std::string ph = TextField(event, "ph");
    const int64_t pid = IdField(event, "pid");
    const int64_t tid = IdField(event, "tid");
    const int64_t ts = Nanoseconds(event, "ts");
    if (ph == "X") {
      ++check.slices;
      slices[{pid, tid}].push_back({ts, ts + Nanoseconds(event, "dur")});
    } else if (ph == "s" || ph == "f") {
      if (!event.contains("id")) {
        ++check.unclosed_flows;
        Problem(check, "a flow event without an id at " + std::to_string(ts) + " ns");
        continue;
      }
      FlowEnd& end = (ph == "s" ? starts : finishes)[IdField(event, "id")];
      end = {end.count + 1, pid, tid, ts};
    } else if (ph == "C") {
      ++check.counters;
      const auto key = std::make_pair(pid, TextField(event, "name"));
      auto [it, inserted] = last_counter.try_emplace(key, ts);
      if (!inserted && ts < it->second) {
        ++check.counters_out_of_order;
        Problem(check, "counter '" + key.second + "' of pid " + std::to_string(pid) +
                           " goes back in time at " + std::to_string(ts) + " ns");
      }
      it->second = std::max(it->second, ts);
    }
  }
  check.tracks = static_cast<int64_t>(slices.size());
  for (auto& [track, spans] : slices) {
    // Outer before inner at one start, so that a slice inside another nests; an instant (no
    // duration) before both: it ends where the next begins, like a slice that ends there.
    std::sort(spans.begin(), spans.end(), [](const SliceSpan& a, const SliceSpan& b) {
      if (a.start != b.start) return a.start < b.start;
      const bool a_instant = a.end == a.start;
      const bool b_instant = b.end == b.start;
      if (a_instant != b_instant) return a_instant;
      return a.end > b.end;
    });
    std::vector<int64_t> open;  // ends of the slices that contain the current one
    for (const SliceSpan& span : spans) {
      while (!open.empty() && open.back() <= span.start)
        open.pop_back();
      if (open.empty()) {
        open.push_back(span.end);
      } else if (span.end <= open.back()) {
        ++check.nested;
        open.push_back(span.end);
      } else {
        ++check.overlapping;  // Perfetto drops it: it neither nests nor follows
        Problem(check, "pid " + std::to_string(track.first) + " tid " +
                           std::to_string(track.second) + ": the slice at " +
                           std::to_string(span.start) + " ns ends after the slice around it");
      }
    }
  }
  check.flows = static_cast<int64_t>(starts.size());
  for (const auto& [id, start] : starts) {
    auto finish = finishes.find(id);
    const bool closed = start.count == 1 && finish != finishes.end() && finish->second.count == 1 &&
                        InsideASlice(slices, start) && InsideASlice(slices, finish->second);
    if (!closed) {
      ++check.unclosed_flows;
      Problem(check, "flow " + std::to_string(id) +
                         " is not one start and one finish, each on a "
                         "slice of its track");
    }
  }
  for (const auto& [id, finish] : finishes) {
    if (starts.count(id) == 0) {
      ++check.unclosed_flows;
      Problem(check, "flow " + std::to_string(id) + " finishes without a start");
    }
  }
  return check;
}

}  // namespace zb::traces
