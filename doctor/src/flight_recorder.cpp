// SPDX-License-Identifier: Apache-2.0
// Reading torch's flight-recorder dumps (flight_recorder.h). A dump is a pickle of plain values
// (dicts, lists, tuples, strings, numbers, booleans, None) that torch's C++ pickler writes; the
// reader below knows exactly the opcodes such values use, and refuses anything else by name.
#include "zbkit/doctor/flight_recorder.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

namespace zb::doctor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Unpickler {
 public:
  Unpickler(const std::string& bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  Expected<json> Load() {
    while (at_ < bytes_.size()) {
      const auto op = static_cast<uint8_t>(bytes_[at_++]);
      if (op == '.') {  // STOP
        if (stack_.size() != 1 || stack_.back().mark) return Bad("unbalanced stack at STOP");
        return *stack_.back().value;
      }
      Status status = Step(op);
      if (!status.ok()) return status;
    }
    return Bad("no STOP opcode (truncated)");
  }

 private:
  struct Item {
    bool mark = false;
    std::shared_ptr<json> value;
  };

  Status Bad(const std::string& what) const {
    return InvalidInput(source_ + ": not a flight-recorder pickle: " + what + " (byte " +
                        std::to_string(at_) + ")");
  }

  bool Take(size_t n, const char*& data) {
    if (at_ + n > bytes_.size()) return false;
    data = bytes_.data() + at_;
    at_ += n;
    return true;
  }

  template <typename T>
  bool TakeValue(T& value) {
    const char* data = nullptr;
    if (!Take(sizeof(T), data)) return false;
    std::memcpy(&value, data, sizeof(T));  // little-endian, as pickles and our hosts are
    return true;
  }

  void Push(json value) { stack_.push_back({false, std::make_shared<json>(std::move(value))}); }

  // The items above the topmost mark, removed with it.
  bool PopToMark(std::vector<json>& items) {
    auto mark = std::find_if(stack_.rbegin(), stack_.rend(), [](const Item& i) { return i.mark; });
    if (mark == stack_.rend()) return false;
    const auto first = mark.base();  // the item after the mark
    for (auto it = first; it != stack_.end(); ++it)
      items.push_back(*it->value);
    stack_.erase(first - 1, stack_.end());
    return true;
  }

  Status PushString(size_t length) {
    const char* data = nullptr;
    if (!Take(length, data)) return Bad("a string runs past the end");
    Push(std::string(data, length));
    return Status::Ok();
  }

  Status Step(uint8_t op) {
    uint8_t u8 = 0;
    uint16_t u16 = 0;
    uint32_t u32 = 0;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    switch (op) {
      case 0x80:  // PROTO
        return TakeValue(u8) ? Status::Ok() : Bad("truncated PROTO");
      case 0x95:  // FRAME
        return TakeValue(u64) ? Status::Ok() : Bad("truncated FRAME");
      case '}':
        Push(json::object());
        return Status::Ok();
      case ']':
        Push(json::array());
        return Status::Ok();
      case ')':
        Push(json::array());
        return Status::Ok();
      case '(':
        stack_.push_back({true, nullptr});
        return Status::Ok();
      case 'N':
        Push(nullptr);
        return Status::Ok();
      case 0x88:
        Push(true);
        return Status::Ok();
      case 0x89:
        Push(false);
        return Status::Ok();
      case 'K':
        if (!TakeValue(u8)) return Bad("truncated BININT1");
        Push(u8);
        return Status::Ok();
      case 'M':
        if (!TakeValue(u16)) return Bad("truncated BININT2");
        Push(u16);
        return Status::Ok();
      case 'J':
        if (!TakeValue(i32)) return Bad("truncated BININT");
        Push(i32);
        return Status::Ok();
      case 0x8a:
        return Long();
      case 'G':
        return Float();
      case 'X':
        return TakeValue(u32) ? PushString(u32) : Bad("truncated BINUNICODE");
      case 0x8c:
      case 'C':
        return TakeValue(u8) ? PushString(u8) : Bad("truncated SHORT_BINUNICODE");
      case 0x8d:
      case 'B':
        if (op == 'B') return TakeValue(u32) ? PushString(u32) : Bad("truncated BINBYTES");
        return TakeValue(u64) ? PushString(u64) : Bad("truncated BINUNICODE8");
      default:
        return Structure(op);
    }
  }

  Status Long() {
    uint8_t length = 0;
    const char* data = nullptr;
    if (!TakeValue(length) || !Take(length, data)) return Bad("truncated LONG1");
    if (length > 8) return Bad("an integer wider than 64 bits");
    int64_t value = 0;
    for (int i = length - 1; i >= 0; --i)
      value =
          static_cast<int64_t>(static_cast<uint64_t>(value) << 8 | static_cast<uint8_t>(data[i]));
    if (length > 0 && length < 8 && (static_cast<uint8_t>(data[length - 1]) & 0x80)) {
      value -= static_cast<int64_t>(1) << (8 * length);  // two's complement of `length` bytes
    }
    Push(value);
    return Status::Ok();
  }

  Status Float() {
    const char* data = nullptr;
    if (!Take(8, data)) return Bad("truncated BINFLOAT");
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i)  // big-endian
      bits = bits << 8 | static_cast<uint8_t>(data[i]);
    double value = 0;
    std::memcpy(&value, &bits, sizeof(value));
    Push(value);
    return Status::Ok();
  }

  // Containers, tuples and the memo.
  Status Structure(uint8_t op) {
    uint8_t u8 = 0;
    uint32_t u32 = 0;
    std::vector<json> items;
    switch (op) {
      case 'u':  // SETITEMS
      case 'e':  // APPENDS
      case 't':  // TUPLE
        if (!PopToMark(items)) return Bad("no MARK");
        if (op == 't') {
          Push(json(items));
          return Status::Ok();
        }
        if (stack_.empty() || stack_.back().mark) return Bad("nothing to add to");
        return Add(*stack_.back().value, items, op == 'u');
      case 's':  // SETITEM
      case 'a':  // APPEND
        if (stack_.size() < (op == 's' ? 3u : 2u)) return Bad("stack too short");
        for (int n = op == 's' ? 2 : 1; n > 0; --n) {
          if (stack_.back().mark) return Bad("a MARK where a value was expected");
          items.insert(items.begin(), *stack_.back().value);
          stack_.pop_back();
        }
        if (stack_.back().mark) return Bad("nothing to add to");
        return Add(*stack_.back().value, items, op == 's');
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84u;
        if (stack_.size() < n) return Bad("stack too short");
        for (size_t i = stack_.size() - n; i < stack_.size(); ++i) {
          if (stack_[i].mark) return Bad("a MARK inside a tuple");
          items.push_back(*stack_[i].value);
        }
        stack_.resize(stack_.size() - n);
        Push(json(items));
        return Status::Ok();
      }
      case 'q':
      case 'r':
      case 0x94:  // BINPUT, LONG_BINPUT, MEMOIZE
        if (op == 'q' && !TakeValue(u8)) return Bad("truncated BINPUT");
        if (op == 'r' && !TakeValue(u32)) return Bad("truncated LONG_BINPUT");
        if (stack_.empty() || stack_.back().mark) return Bad("nothing to memoize");
        memo_[op == 0x94 ? memo_.size() : (op == 'q' ? u8 : u32)] = stack_.back().value;
        return Status::Ok();
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        if (op == 'h' ? !TakeValue(u8) : !TakeValue(u32)) return Bad("truncated BINGET");
        auto it = memo_.find(op == 'h' ? u8 : u32);
        if (it == memo_.end()) return Bad("BINGET of an unset memo slot");
        stack_.push_back({false, it->second});
        return Status::Ok();
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", op);
        return Bad(std::string("unsupported opcode ") + hex);
      }
    }
  }

  Status Add(json& target, const std::vector<json>& items, bool pairs) {
    if (pairs) {
      if (!target.is_object() || items.size() % 2 != 0) return Bad("SETITEMS on a non-dict");
      for (size_t i = 0; i < items.size(); i += 2) {
        if (!items[i].is_string()) return Bad("a dict key that is not a string");
        const std::string key = items[i].get<std::string>();
        target[key] = items[i + 1];
      }
    } else {
      if (!target.is_array()) return Bad("APPENDS on a non-list");
      for (const json& item : items)
        target.push_back(item);
    }
    return Status::Ok();
  }

  const std::string& bytes_;
  std::string source_;
  size_t at_ = 0;
  std::vector<Item> stack_;
  std::map<size_t, std::shared_ptr<json>> memo_;
};

// The field `key` of `object`, null when it has none or is not an object: a dump's fields are read
// by type, never trusted (a torn or foreign pickle is refused or read as far as it makes sense).
const json& Field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

bool Bool(const json& value) {
  return value.is_boolean() && value.get<bool>();
}

int64_t Int(const json& value, int64_t fallback = -1) {
  return value.is_number_integer() ? value.get<int64_t>() : fallback;
}

std::string Text(const json& value) {
  return value.is_string() ? value.get<std::string>() : "";
}

Expected<FlightRecorderDump> ReadDump(const std::string& path, int rank) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Expected<json> doc = InvalidInput(path + ": not read");
  try {
    doc = Unpickler(bytes, path).Load();
  } catch (const json::exception& error) {  // a value nlohmann refuses (none in a real dump)
    return InvalidInput(path + ": not a flight-recorder pickle: " + error.what());
  }
  if (!doc.ok()) return doc.status();
  if (!doc->is_object() || !doc->contains("entries") || !(*doc)["entries"].is_array()) {
    return InvalidInput(path + ": a pickle, but not a flight-recorder dump (no \"entries\" list)");
  }
  FlightRecorderDump dump;
  dump.rank = rank;
  dump.path = path;
  dump.version = Text(Field(*doc, "version"));
  for (const json& e : (*doc)["entries"]) {
    if (!e.is_object()) continue;
    FlightRecorderEntry entry;
    const json group = Field(e, "process_group");
    entry.group = group.is_array() && group.size() == 2 ? Text(group[0]) + " " + Text(group[1])
                                                        : std::to_string(Int(Field(e, "pg_id"), 0));
    entry.collective_seq = Int(Field(e, "collective_seq_id"), 0);
    entry.p2p_seq = Int(Field(e, "p2p_seq_id"), 0);
    entry.p2p = Bool(Field(e, "is_p2p"));
    entry.name = Text(Field(e, "profiling_name"));
    entry.state = Text(Field(e, "state"));
    entry.retired = Bool(Field(e, "retired"));
    dump.entries.push_back(std::move(entry));
  }
  const json& status_field = Field(*doc, "pg_status");
  const json groups = status_field.is_object() ? status_field : json::object();
  for (const auto& [id, status] : groups.items()) {
    FlightRecorderGroupStatus group;
    group.last_enqueued = Int(Field(status, "last_enqueued_collective"));
    group.last_started = Int(Field(status, "last_started_collective"));
    group.last_completed = Int(Field(status, "last_completed_collective"));
    dump.groups[id] = group;
  }
  return dump;
}

}  // namespace

Expected<std::vector<FlightRecorderDump>> ReadFlightRecorderDumps(const std::string& where) {
  std::error_code error;
  const bool directory = fs::is_directory(where, error);
  const fs::path folder = directory ? fs::path(where) : fs::path(where).parent_path();
  const std::string prefix = directory ? "" : fs::path(where).filename().string();
  static const std::regex kRank(R"((.*?)(\d+))");
  std::vector<FlightRecorderDump> dumps;
  for (const auto& entry : fs::directory_iterator(folder.empty() ? "." : folder, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !std::regex_match(name, match, kRank)) continue;
    if (!directory && match[1].str() != prefix) continue;
    auto dump = ReadDump(entry.path().string(), std::stoi(match[2].str()));
    if (!dump.ok()) return dump.status();
    dumps.push_back(std::move(*dump));
  }
  if (error) return NotFound(where + ": " + error.message());
  if (dumps.empty()) {
    return NotFound(where + ": no flight-recorder dump (" +
                    (directory ? "no file named ...<rank>" : "no file " + where + "<rank>") + ")");
  }
  std::sort(dumps.begin(), dumps.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return dumps;
}

std::vector<std::string> AnalyzeFlightRecorder(const std::vector<FlightRecorderDump>& dumps,
                                               int& culprit_rank) {
  culprit_rank = -1;
  std::vector<std::string> lines;
  std::set<std::string> groups;
  for (const FlightRecorderDump& dump : dumps) {
    for (const auto& [id, status] : dump.groups)
      groups.insert(id);
  }
  for (const std::string& group : groups) {
    int64_t furthest = -1;
    for (const FlightRecorderDump& dump : dumps) {
      auto it = dump.groups.find(group);
      if (it != dump.groups.end()) furthest = std::max(furthest, it->second.last_enqueued);
    }
    std::string waiting, behind;
    std::string name;
    for (const FlightRecorderDump& dump : dumps) {
      auto it = dump.groups.find(group);
      if (it == dump.groups.end()) continue;
      const FlightRecorderGroupStatus& s = it->second;
      if (s.last_enqueued < furthest) {
        behind += (behind.empty() ? "" : ", ") + std::to_string(dump.rank);
        if (culprit_rank < 0) culprit_rank = dump.rank;
      } else if (s.last_completed < s.last_enqueued) {
        waiting += (waiting.empty() ? "" : ", ") + std::to_string(dump.rank);
        for (const FlightRecorderEntry& e : dump.entries) {
          if (!e.p2p && e.collective_seq == furthest) name = e.name;
        }
      }
    }
    if (behind.empty()) continue;
    auto ranks = [](const std::string& list) {
      return (list.find(',') != std::string::npos ? "ranks " : "rank ") + list;
    };
    std::string line = "process group " + group + ": " + ranks(behind) +
                       " never joined collective " + std::to_string(furthest);
    if (!name.empty()) line += " (" + name + ")";
    if (!waiting.empty()) {
      line += ", which " + ranks(waiting) +
              (waiting.find(',') != std::string::npos ? " wait in" : " waits in");
    }
    lines.push_back(line);
  }
  for (const FlightRecorderDump& dump : dumps) {
    for (const FlightRecorderEntry& e : dump.entries) {
      if (!e.p2p || e.retired || e.state == "completed") continue;
      lines.push_back("rank " + std::to_string(dump.rank) + ": " + e.name + " (p2p " +
                      std::to_string(e.p2p_seq) + ", process group " + e.group + ") " + e.state +
                      ", not completed");
    }
  }
  return lines;
}

}  // namespace zb::doctor
