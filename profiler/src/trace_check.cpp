// SPDX-License-Identifier: Apache-2.0
// The structural check of a Chrome trace (trace_export.h): what Perfetto's JSON importer needs
// to show every event, checked on any trace (zbkit's exports, or a user's own).
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "zbkit/profiler/trace_export.h"

namespace zb::profiler {
namespace {

using nlohmann::json;

// Times in integer nanoseconds, as Perfetto's importer rounds the microsecond doubles (a sum of
// two doubles, 2828.369 + 469.9, is not the next slice's 3298.269).
struct SliceSpan {
  int64_t start = 0;
  int64_t end = 0;
};

int64_t Nanoseconds(const json& event, const char* field) {
  return std::llround(event.value(field, 0.0) * 1000.0);
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

int64_t IdOf(const json& event) {
  const json& id = event.at("id");
  if (id.is_number_integer()) return id.get<int64_t>();
  return static_cast<int64_t>(std::hash<std::string>()(id.dump()));
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
    if (!event.is_object() || !event.contains("ph")) continue;
    const std::string ph = event.value("ph", "");
    const int64_t pid = event.value("pid", int64_t{0});
    const int64_t tid = event.value("tid", int64_t{0});
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
      FlowEnd& end = (ph == "s" ? starts : finishes)[IdOf(event)];
      end = {end.count + 1, pid, tid, ts};
    } else if (ph == "C") {
      ++check.counters;
      const auto key = std::make_pair(pid, event.value("name", std::string()));
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
    std::sort(spans.begin(), spans.end(), [](const SliceSpan& a, const SliceSpan& b) {
      return std::tie(a.start, a.end) < std::tie(b.start, b.end);
    });
    int64_t reach = INT64_MIN;
    for (const SliceSpan& span : spans) {
      if (span.start < reach) {
        ++check.overlapping;
        Problem(check, "pid " + std::to_string(track.first) + " tid " +
                           std::to_string(track.second) + ": a slice at " +
                           std::to_string(span.start) + " ns starts before the one before it ends");
      }
      reach = std::max(reach, span.end);
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

}  // namespace zb::profiler
