// SPDX-License-Identifier: Apache-2.0
// Chrome trace / Kineto JSON importer (import.h). A SAX pass (nlohmann) so that a trace of
// hundreds of MB is never held as a DOM, and so that the numbers arrive as their source text:
// Kineto writes microseconds with three decimals ("4458676522690.655") that a double cannot
// carry to the nanosecond.
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "zbkit/profiler/block_costs.h"
#include "zbkit/profiler/import.h"
#include "zbkit/schemas/json_io.h"

namespace zb::profiler {
namespace {

using nlohmann::json;

// A scalar as it arrived: integers exactly, floats with their text.
struct Number {
  bool present = false;
  bool is_float = false;
  int64_t integer = 0;
  std::string text;
};

struct Event {
  std::string ph;
  std::string cat;
  std::string name;
  int64_t pid = 0;
  int64_t tid = 0;
  Number ts;
  Number dur;
  // args
  Number correlation;
  Number device;
  Number stream;
  Number bytes;           // memcpy/memset "bytes"
  Number memory_bytes;    // "[memory]" "Bytes"
  Number memory_device;   // "[memory]" "Device Id"
  std::string args_name;  // metadata events: args.name
};

// A pid/tid that is a string ("Spans", "stream 7 ") becomes its leading integer, else a stable
// negative hash so that it never collides with an OS id.
int64_t IdFromString(const std::string& text) {
  int64_t value = 0;
  size_t i = 0;
  while (i < text.size() && !std::isdigit(static_cast<unsigned char>(text[i])))
    ++i;
  if (i < text.size()) {
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) && j - i < 18) {
      value = value * 10 + (text[j] - '0');
      ++j;
    }
    if (i == 0 || text.compare(0, i, "stream ") == 0) return value;
  }
  return -static_cast<int64_t>(std::hash<std::string>{}(text) >> 2) - 1;
}

class ChromeSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  std::vector<Event> events;
  Number base_time_ns;
  Number rank;
  Number world_size;
  std::string schedule_class;  // the "zbkit_schedule_class" metadata zbkit's shim adds
  std::string checkpointing;   // the "zbkit_checkpointing" metadata zbkit's shim adds
  std::string pipeline;        // the "zbkit_pipeline" metadata: "<rank>/<size>/<first>"
  std::string unsharded;       // the "zbkit_unsharded" metadata: bytes, in decimal
  std::string reduced;         // the "zbkit_reduced" metadata: bytes, in decimal
  bool root_is_array = false;
  bool saw_root = false;
  std::string error;

  bool null() { return Scalar(Number{}, nullptr); }
  bool boolean(bool) { return Scalar(Number{}, nullptr); }
  bool number_integer(number_integer_t value) {
    Number n;
    n.present = true;
    n.integer = value;
    return Scalar(n, nullptr);
  }
  bool number_unsigned(number_unsigned_t value) {
    Number n;
    n.present = true;
    n.integer =
        value > static_cast<number_unsigned_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(value);
    return Scalar(n, nullptr);
  }
  bool number_float(number_float_t, const string_t& text) {
    Number n;
    n.present = true;
    n.is_float = true;
    n.text = text;
    return Scalar(n, nullptr);
  }
  bool string(string_t& value) { return Scalar(Number{}, &value); }
  bool binary(binary_t&) { return Scalar(Number{}, nullptr); }

  bool start_object(std::size_t) {
    if (stack_.empty()) {
      saw_root = true;
    } else if (InEventList()) {
      current_ = Event{};
      in_event_ = true;
      event_depth_ = stack_.size() + 1;
    }
    stack_.push_back({true, key_});
    key_.clear();
    return true;
  }
  bool end_object() {
    const bool closing_event = in_event_ && stack_.size() == event_depth_;
    stack_.pop_back();
    key_.clear();
    if (closing_event) {
      in_event_ = false;
      events.push_back(std::move(current_));
    }
    return true;
  }
  bool start_array(std::size_t) {
    if (stack_.empty()) {
      saw_root = true;
      root_is_array = true;
    }
    stack_.push_back({false, key_});
    key_.clear();
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    key_.clear();
    return true;
  }
  bool key(string_t& value) {
    key_ = value;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error = "not valid JSON at byte " + std::to_string(position) + ": " + JsonErrorText(e);
    return false;
  }

 private:
  struct Level {
    bool object;
    std::string key;  // the key under which this container sits in its parent
  };

  // The array holding the events: the root array, or the root object's "traceEvents".
  bool InEventList() const {
    if (stack_.empty() || stack_.back().object) return false;
    if (stack_.size() == 1) return root_is_array;
    return stack_.size() == 2 && stack_[0].object && stack_[1].key == "traceEvents";
  }

  bool Scalar(const Number& number, const std::string* text) {
    if (in_event_) {
      if (stack_.size() == event_depth_) {
        EventField(number, text);
      } else if (stack_.size() == event_depth_ + 1 && stack_.back().key == "args") {
        ArgField(number, text);
      }
    } else if (stack_.size() == 1 && stack_[0].object && key_ == "baseTimeNanoseconds") {
      base_time_ns = number;
    } else if (stack_.size() == 1 && stack_[0].object && key_ == kScheduleClassKey && text) {
      schedule_class = *text;
    } else if (stack_.size() == 1 && stack_[0].object && key_ == kCheckpointingKey && text) {
      checkpointing = *text;
    } else if (stack_.size() == 1 && stack_[0].object && key_ == kPipelineKey && text) {
      pipeline = *text;
    } else if (stack_.size() == 1 && stack_[0].object && key_ == kUnshardedKey && text) {
      unsharded = *text;
    } else if (stack_.size() == 1 && stack_[0].object && key_ == kReducedKey && text) {
      reduced = *text;
    } else if (stack_.size() == 2 && stack_[1].key == "distributedInfo") {
      if (key_ == "rank") rank = number;
      if (key_ == "world_size") world_size = number;
    }
    key_.clear();
    return true;
  }

  static int64_t IdOf(const Number& number, const std::string* text) {
    if (text != nullptr) return IdFromString(*text);
    if (!number.present) return 0;
    if (number.is_float) return IdFromString(number.text);
    return number.integer;
  }

  void EventField(const Number& number, const std::string* text) {
    if (key_ == "ph" && text) {
      current_.ph = *text;
    } else if (key_ == "cat" && text) {
      current_.cat = *text;
    } else if (key_ == "name" && text) {
      current_.name = *text;
    } else if (key_ == "pid") {
      current_.pid = IdOf(number, text);
    } else if (key_ == "tid") {
      current_.tid = IdOf(number, text);
    } else if (key_ == "ts") {
      current_.ts = number;
      if (text) current_.ts = Number{true, true, 0, *text};
    } else if (key_ == "dur") {
      current_.dur = number;
      if (text) current_.dur = Number{true, true, 0, *text};
    }
  }

  void ArgField(const Number& number, const std::string* text) {
    if (key_ == "correlation") {
      current_.correlation = number;
    } else if (key_ == "device") {
      current_.device = number;
    } else if (key_ == "stream") {
      current_.stream = number;
    } else if (key_ == "bytes") {
      current_.bytes = number;
    } else if (key_ == "Bytes") {
      current_.memory_bytes = number;
    } else if (key_ == "Device Id") {
      current_.memory_device = number;
    } else if (key_ == "name" && text) {
      current_.args_name = *text;
    }
  }

  std::vector<Level> stack_;
  std::string key_;
  bool in_event_ = false;
  size_t event_depth_ = 0;
  Event current_;
};

std::optional<TimeNs> ToNs(const Number& number) {
  if (!number.present) return std::nullopt;
  if (!number.is_float) {
    if (number.integer > INT64_MAX / 1000 || number.integer < INT64_MIN / 1000) {
      return std::nullopt;
    }
    return number.integer * 1000;
  }
  return MicrosecondsTextToNs(number.text);
}

// An integer field (an id, a byte count): `fallback` when absent or when the number written is
// not one an int64 holds (1e300, found by tests/fuzz/fuzz_chrome_trace: casting it is undefined).
int64_t IntOf(const Number& number, int64_t fallback) {
  if (!number.present) return fallback;
  if (!number.is_float) return number.integer;
  const double value = std::strtod(number.text.c_str(), nullptr);
  // 2^63 exactly is the first double past INT64_MAX.
  if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) return fallback;
  return static_cast<int64_t>(value);
}

// A byte count written in decimal (the shim's kUnshardedKey, kReducedKey); -1 for anything else.
int64_t ParseByteCount(const std::string& text) {
  int64_t bytes = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || bytes < 0) {
    return -1;
  }
  return bytes;
}

// "<rank>/<size>/<first>" (the shim's kPipelineKey); unknown (size 0) for anything else: a
// trace's metadata is read, not trusted.
RawTrace::PipelineGroup ParsePipelineGroup(const std::string& text) {
  RawTrace::PipelineGroup group;
  int rank = -1, size = 0, first = -1;
  char end = 0;
  if (std::sscanf(text.c_str(), "%d/%d/%d%c", &rank, &size, &first, &end) == 3 && size >= 1 &&
      rank >= 0 && rank < size && first >= 0) {
    group.rank = rank;
    group.size = size;
    group.first = first;
  }
  return group;
}

std::string Lower(std::string text) {
  for (char& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::optional<TimeNs> MicrosecondsTextToNs(std::string_view text) {
  // Decimal arithmetic on the digit string: the value is digits * 10^(point - digits.size())
  // microseconds, so nanoseconds are the digits up to position point + 3, rounded by the next.
  size_t pos = 0;
  bool negative = false;
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) negative = text[pos++] == '-';
  std::string digits;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
    digits += text[pos++];
  int64_t point = static_cast<int64_t>(digits.size());
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
      digits += text[pos++];
  }
  if (digits.empty()) return std::nullopt;
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
    bool exp_negative = false;
    if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) {
      exp_negative = text[pos++] == '-';
    }
    if (pos >= text.size()) return std::nullopt;
    int64_t exponent = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      exponent = exponent * 10 + (text[pos++] - '0');
      if (exponent > 1000) return std::nullopt;
    }
    point += exp_negative ? -exponent : exponent;
  }
  if (pos != text.size()) return std::nullopt;
  const int64_t ns_digits = point + 3;  // digits[0, ns_digits) are whole nanoseconds
  uint64_t value = 0;
  for (int64_t i = 0; i < ns_digits; ++i) {
    const int digit = i < static_cast<int64_t>(digits.size()) ? digits[i] - '0' : 0;
    if (value > (static_cast<uint64_t>(INT64_MAX) - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (ns_digits >= 0 && ns_digits < static_cast<int64_t>(digits.size()) &&
      digits[ns_digits] >= '5') {
    ++value;  // half away from zero: the next digit alone decides
  }
  if (value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  const TimeNs ns = static_cast<TimeNs>(value);
  return negative ? -ns : ns;
}

Expected<std::string> ReadMaybeGzipFile(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return NotFound(path + ": cannot open: " + (errno ? std::strerror(errno) : "gzopen failed"));
  }
  gzbuffer(file, 1 << 20);
  std::string content;
  std::vector<char> buffer(1 << 20);
  while (true) {
    const int n = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      std::string text = message ? message : "read error";
      gzclose(file);
      return IoError(path + ": cannot read: " + text);
    }
    if (n == 0) break;
    content.append(buffer.data(), static_cast<size_t>(n));
  }
  // zlib hands over what it could inflate of a gzip stream that stops early and says so only
  // here: a copy cut short or a file still being written.
  int code = Z_OK;
  gzerror(file, &code);
  const bool compressed = gzdirect(file) == 0;
  gzclose(file);
  if (compressed && code == Z_BUF_ERROR) {
    return InvalidInput(path + ": the gzip stream is cut short after " +
                        std::to_string(content.size()) +
                        " bytes of trace (a partial copy, or a file still being written)");
  }
  return content;
}

namespace {

// The processes of one Chrome trace, built event by event from what the SAX pass read: host
// processes with their ranges, launches and memory; device activities and GPU-side annotations,
// which belong to the process that launched them (Assign). Events with unreadable or negative
// times are skipped: one broken event should not cost the whole trace.
class ChromeTraceBuilder {
 public:
  explicit ChromeTraceBuilder(TimeNs base) : base_(base) {}

  void Add(const Event& event) {
    if (event.ph == "M") {
      if (event.name == "process_name" && !event.args_name.empty()) {
        process_names_[event.pid] = event.args_name;
      }
    } else if (event.ph == "X") {
      auto ts = ToNs(event.ts);
      auto dur = event.dur.present ? ToNs(event.dur) : std::optional<TimeNs>(0);
      if (!ts || !dur || *dur < 0) return;
      AddInterval(event, base_ + *ts, base_ + *ts + *dur);
    } else if (event.ph == "B") {
      open_begins_[{event.pid, event.tid}].push_back(&event);
    } else if (event.ph == "E") {
      auto& stack = open_begins_[{event.pid, event.tid}];
      if (stack.empty()) return;
      const Event* begin = stack.back();
      stack.pop_back();
      auto start = ToNs(begin->ts);
      auto end = ToNs(event.ts);
      if (!start || !end || *end < *start) return;
      AddInterval(*begin, base_ + *start, base_ + *end);
    } else if ((event.ph == "i" || event.ph == "I") && event.name == "[memory]" &&
               event.memory_bytes.present) {
      AddMemory(event);
    }
  }

  bool empty() const { return processes_.empty() && activities_.empty(); }

  // Host allocations count only in a CPU-only job (no device activity, no device memory: then
  // host buffers are not what a stage's activations cost); device activities and GPU-side
  // annotations go to the process that launched them.
  void Assign() {
    if (processes_.empty()) Host(0);
    bool device_memory = false;
    for (const auto& [pid, trace] : processes_)
      device_memory = device_memory || !trace.memory.empty();
    if (activities_.empty() && !device_memory) {
      for (auto& [pid, events] : host_memory_)
        Host(pid).memory = std::move(events);
    }
    if (processes_.size() == 1) {
      RawTrace& only = processes_.begin()->second;
      only.activities = std::move(activities_);
      only.ranges.insert(only.ranges.end(), gpu_ranges_.begin(), gpu_ranges_.end());
      return;
    }
    std::unordered_map<int64_t, int64_t> owner;
    for (const auto& [pid, trace] : processes_) {
      for (const Launch& launch : trace.launches)
        owner.emplace(launch.correlation, pid);
    }
    RawTrace& first = processes_.begin()->second;
    for (DeviceActivity& activity : activities_) {
      auto it = owner.find(activity.correlation);
      (it == owner.end() ? first : processes_[it->second])
          .activities.push_back(std::move(activity));
    }
    first.ranges.insert(first.ranges.end(), gpu_ranges_.begin(), gpu_ranges_.end());
  }

  // The processes, with what the trace says of the job (rank, world size, schedule class).
  std::vector<RawTrace> Traces(const ChromeSax& sax, const std::string& source) {
    std::vector<RawTrace> traces;
    for (auto& [pid, trace] : processes_) {
      trace.process.rank = sax.rank.present && processes_.size() == 1
                               ? static_cast<int32_t>(IntOf(sax.rank, -1))
                               : -1;
      trace.process.world_size =
          sax.world_size.present ? static_cast<int32_t>(IntOf(sax.world_size, -1)) : -1;
      auto name = process_names_.find(pid);
      if (name != process_names_.end()) trace.process.command = name->second;
      trace.source = "chrome:" + source;
      trace.schedule_class = sax.schedule_class;
      trace.checkpointing = sax.checkpointing;
      trace.pipeline = ParsePipelineGroup(sax.pipeline);
      trace.unsharded_bytes = ParseByteCount(sax.unsharded);
      trace.reduced_bytes = ParseByteCount(sax.reduced);
      traces.push_back(std::move(trace));
    }
    return traces;
  }

 private:
  RawTrace& Host(int64_t pid) {
    RawTrace& trace = processes_[pid];
    trace.process.pid = pid;
    return trace;
  }

  void AddInterval(const Event& event, TimeNs start, TimeNs end) {
    const std::string cat = Lower(event.cat);
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "memcpy" ||
        cat == "memset") {
      DeviceActivity activity;
      activity.kind = cat == "kernel"                            ? ActivityKind::kKernel
                      : (cat == "gpu_memcpy" || cat == "memcpy") ? ActivityKind::kMemcpy
                                                                 : ActivityKind::kMemset;
      activity.name = event.name;
      activity.device = static_cast<int32_t>(IntOf(event.device, event.pid));
      activity.stream = IntOf(event.stream, event.tid);
      activity.start = start;
      activity.end = end;
      activity.correlation = IntOf(event.correlation, 0);
      activity.bytes = IntOf(event.bytes, 0);
      activities_.push_back(std::move(activity));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "runtime" ||
               cat == "driver") {
      if (event.correlation.present) {
        Host(event.pid).launches.push_back({IntOf(event.correlation, 0), event.tid, start});
      }
    } else if (cat == "gpu_user_annotation") {
      gpu_ranges_.push_back({event.name, "gpu_user_annotation", event.tid, start, end, 0});
    } else if (cat != "trace" && !cat.empty()) {
      Host(event.pid).ranges.push_back({event.name, event.cat, event.tid, start, end, 0});
    }
  }

  void AddMemory(const Event& event) {
    const int64_t device = IntOf(event.memory_device, -1);
    auto ts = ToNs(event.ts);
    if (!ts) return;
    const MemoryEvent memory{base_ + *ts, IntOf(event.memory_bytes, 0),
                             static_cast<int32_t>(device)};
    if (device >= 0) {
      Host(event.pid).memory.push_back(memory);
    } else {
      host_memory_[event.pid].push_back(memory);  // "Device Id" -1: a host allocation
    }
  }

  TimeNs base_;
  std::map<int64_t, RawTrace> processes_;  // host processes: those with CPU-side events
  std::map<int64_t, std::string> process_names_;
  std::vector<DeviceActivity> activities_;
  std::vector<TraceRange> gpu_ranges_;
  std::map<std::pair<int64_t, int64_t>, std::vector<const Event*>> open_begins_;
  std::map<int64_t, std::vector<MemoryEvent>> host_memory_;
};

}  // namespace

Expected<std::vector<RawTrace>> ParseChromeTrace(const std::string& text,
                                                 const std::string& source) {
  ChromeSax sax;
  const bool ok = json::sax_parse(text, &sax);
  if (!ok) return InvalidInput(source + ": " + (sax.error.empty() ? "not valid JSON" : sax.error));
  if (!sax.saw_root) return InvalidInput(source + ": empty document");
  const TimeNs base =
      sax.base_time_ns.present && !sax.base_time_ns.is_float ? sax.base_time_ns.integer : 0;
  ChromeTraceBuilder builder(base);
  for (const Event& event : sax.events)
    builder.Add(event);
  if (builder.empty()) {
    return InvalidInput(source + ": no trace events (expected traceEvents with X or B/E events)");
  }
  builder.Assign();
  return builder.Traces(sax, source);
}

Expected<std::vector<RawTrace>> ImportChromeTrace(const std::string& path) {
  ZB_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  return ParseChromeTrace(text, path);
}

namespace {

// N of the first "rank<N>" in a file name, or -1.
int32_t RankFromFileName(const std::string& name) {
  for (size_t at = name.find("rank"); at != std::string::npos; at = name.find("rank", at + 1)) {
    size_t digit = at + 4;
    int64_t rank = 0;
    size_t end = digit;
    while (end < name.size() && end - digit < 9 &&
           std::isdigit(static_cast<unsigned char>(name[end]))) {
      rank = rank * 10 + (name[end] - '0');
      ++end;
    }
    if (end > digit) return static_cast<int32_t>(rank);
  }
  return -1;
}

}  // namespace

bool IsChromeTraceFileName(const std::string& name) {
  auto ends_with = [&](std::string_view suffix) {
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  // The hook's per-block files (block_costs.h) sit beside the traces.
  return (ends_with(".json") || ends_with(".json.gz")) && !IsBlockCostsFileName(name);
}

Expected<std::vector<RawTrace>> ImportChromeTraceDirectory(const std::string& dir,
                                                           std::vector<std::string>& skipped) {
  std::error_code error;
  std::vector<std::filesystem::path> paths;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    if (it->is_regular_file() && IsChromeTraceFileName(it->path().filename().string())) {
      paths.push_back(it->path());
    }
  }
  if (error) return NotFound(dir + ": cannot list the directory: " + error.message());
  if (paths.empty()) return NotFound(dir + ": no Chrome traces (*.json, *.json.gz) in it");
  std::sort(paths.begin(), paths.end());
  std::vector<RawTrace> traces;
  for (const std::filesystem::path& path : paths) {
    auto file_traces = ImportChromeTrace(path.string());
    if (!file_traces.ok()) {
      skipped.push_back(file_traces.status().message());
      continue;
    }
    const int32_t named_rank = RankFromFileName(path.filename().string());
    for (RawTrace& trace : *file_traces) {
      if (trace.process.rank < 0 && file_traces->size() == 1) trace.process.rank = named_rank;
      traces.push_back(std::move(trace));
    }
  }
  if (traces.empty()) {
    return InvalidInput(dir + ": none of its " + std::to_string(paths.size()) +
                        " Chrome traces could be read");
  }
  return traces;
}

Expected<TraceFormat> ParseTraceFormat(std::string_view name) {
  if (name == "nsys") return TraceFormat::kNsys;
  if (name == "chrome" || name == "kineto") return TraceFormat::kChrome;
  if (name == "auto") return TraceFormat::kAuto;
  return UsageError("--format must be nsys or chrome, got '" + std::string(name) + "'");
}

Expected<TraceFormat> DetectTraceFormat(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return NotFound(path + ": cannot open: " + std::strerror(errno));
  char header[16] = {};
  const size_t n = std::fread(header, 1, sizeof(header), file);
  std::fclose(file);
  if (n == sizeof(header) && std::memcmp(header, "SQLite format 3", 16) == 0) {
    return TraceFormat::kNsys;
  }
  return TraceFormat::kChrome;
}

Expected<std::vector<RawTrace>> ImportTrace(const std::string& path, TraceFormat format) {
  if (format == TraceFormat::kAuto) {
    ZB_ASSIGN_OR_RETURN(format, DetectTraceFormat(path));
  }
  if (format == TraceFormat::kNsys) return ImportNsysSqlite(path);
  return ImportChromeTrace(path);
}

}  // namespace zb::profiler
