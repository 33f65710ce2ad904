// SPDX-License-Identifier: Apache-2.0
// Range-name classification: the built-in name families (hand-written parsers, no regex: they
// run on every distinct name of a trace) and user rules (std::regex from a JSON file).
#include <algorithm>
#include <charconv>
#include <climits>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "zbkit/profiler/attribution.h"
#include "zbkit/schemas/json_io.h"
#include "zbkit/schemas/op_text.h"
#include "zbkit/schemas/range_name.h"

namespace zb::profiler {
namespace {

using nlohmann::json;

using range_scan::Consume;
using range_scan::ParseDigits;

RangeMatch Op(OpKind kind, const char* family) {
  RangeMatch match;
  match.role = RangeRole::kOp;
  match.kind = kind;
  match.family = family;
  return match;
}

RangeMatch Iteration(const char* family) {
  RangeMatch match;
  match.role = RangeRole::kIteration;
  match.family = family;
  return match;
}

RangeMatch Comm(CommDirection direction, const char* family) {
  RangeMatch match = Op(OpKind::kComm, family);
  match.direction = direction;
  return match;
}

// zbkit's runtime: the range-name contract of the model (zbkit/schemas/range_name.h,
// docs/range-names.md), so that the names the runtime writes and the ones read here cannot drift.
std::optional<RangeMatch> MatchZbkit(std::string_view name) {
  auto parsed = ParseRangeName(name);
  if (!parsed) return std::nullopt;
  if (parsed->role == RangeName::Role::kIteration) return Iteration("zbkit");
  RangeMatch match = parsed->role == RangeName::Role::kComm ? Comm(parsed->direction, "zbkit")
                                                            : Op(parsed->kind, "zbkit");
  match.stage = parsed->stage;
  match.microbatch = parsed->microbatch;
  return match;
}

// PyTorch pipelining: "PP:" + str(_Action): <stage><TOKEN><mb>, prefix match as torch parses it.
std::optional<RangeMatch> MatchTorchPp(std::string_view name) {
  size_t pos = 0;
  if (!Consume(name, pos, "PP:")) return std::nullopt;
  while (pos < name.size() && name[pos] == ' ')
    ++pos;
  auto stage = ParseDigits(name, pos);
  if (!stage) return std::nullopt;  // e.g. "(0F7;7B3)OVERLAP_F_B": not one op
  // torch's token, from the one vocabulary (zbkit/schemas/op_text.h): I is zbkit's B (the input
  // gradient), B its BW (the full backward, torch >= 2.6).
  const std::optional<ActionKind> action = ConsumeTorchToken(name, pos);
  if (!action) return std::nullopt;
  RangeMatch match;
  if (const std::optional<OpKind> kind = ComputeKindOf(*action)) {
    match = Op(*kind, "torch-pp");
  } else if (const CommDirection direction = DirectionOf(*action);
             direction != CommDirection::kNone) {
    match = Comm(direction, "torch-pp");
  } else {
    return std::nullopt;  // UNSHARD, RESHARD, REDUCE_GRAD: not pipeline ops
  }
  match.stage = *stage;
  if (auto mb = ParseDigits(name, pos)) match.microbatch = *mb;
  return match;
}

// The zero-bubble Megatron fork: F{mb}.{chunk}.{seq}, B.., BW.., W.., R.. (recompute),
// W_clear.{chunk}.{seq}, iter_{rank}_{iter}, comm ranges {TYPE}.{mb}.{chunk}.{seq} joined by '_'.
std::optional<RangeMatch> MatchZbFork(std::string_view name) {
  size_t pos = 0;
  if (Consume(name, pos, "iter_")) {
    if (!ParseDigits(name, pos) || !Consume(name, pos, "_") || !ParseDigits(name, pos) ||
        pos != name.size()) {
      return std::nullopt;
    }
    return Iteration("zb-fork");
  }
  if (Consume(name, pos, "W_clear.")) {
    auto chunk = ParseDigits(name, pos);
    if (!chunk || !Consume(name, pos, ".") || !ParseDigits(name, pos) || pos != name.size()) {
      return std::nullopt;
    }
    RangeMatch match = Op(OpKind::kW, "zb-fork");
    match.chunk = *chunk;
    return match;
  }
  struct CommToken {
    const char* text;
    CommDirection direction;
  };
  static constexpr CommToken kComm[] = {
      {"SEND_FORWARD.", CommDirection::kSendForward},
      {"RECV_FORWARD.", CommDirection::kRecvForward},
      {"SEND_BACKWARD.", CommDirection::kSendBackward},
      {"RECV_BACKWARD.", CommDirection::kRecvBackward},
  };
  for (const CommToken& token : kComm) {
    if (!Consume(name, pos, token.text)) continue;
    auto mb = ParseDigits(name, pos);
    if (!mb || !Consume(name, pos, ".")) return std::nullopt;
    auto chunk = ParseDigits(name, pos);
    if (!chunk || !Consume(name, pos, ".") || !ParseDigits(name, pos)) return std::nullopt;
    // Further joined parts ("_RECV_BACKWARD.1.0.0") belong to the same batched exchange; the
    // range is attributed to its first part.
    if (pos != name.size() && name[pos] != '_') return std::nullopt;
    RangeMatch match = Comm(token.direction, "zb-fork");
    match.microbatch = *mb;
    match.chunk = *chunk;
    return match;
  }
  RangeMatch match;
  bool recompute = false;
  if (Consume(name, pos, "BW")) {
    match = Op(OpKind::kBW, "zb-fork");
  } else if (Consume(name, pos, "F")) {
    match = Op(OpKind::kF, "zb-fork");
  } else if (Consume(name, pos, "B")) {
    match = Op(OpKind::kB, "zb-fork");
    match.b_or_bw = true;
  } else if (Consume(name, pos, "W")) {
    match = Op(OpKind::kW, "zb-fork");
  } else if (Consume(name, pos, "R")) {
    recompute = true;
  } else {
    return std::nullopt;
  }
  auto mb = ParseDigits(name, pos);
  if (!mb || !Consume(name, pos, ".")) return std::nullopt;
  auto chunk = ParseDigits(name, pos);
  if (!chunk || !Consume(name, pos, ".") || !ParseDigits(name, pos) || pos != name.size()) {
    return std::nullopt;
  }
  if (recompute) {
    // Activation recomputation belongs to the backward that follows; not an op of its own.
    RangeMatch none;
    none.role = RangeRole::kIgnore;
    none.family = "zb-fork";
    return none;
  }
  match.microbatch = *mb;
  match.chunk = *chunk;
  return match;
}

// Kineto's per-step annotation "ProfilerStep#N".
std::optional<RangeMatch> MatchKineto(std::string_view name) {
  size_t pos = 0;
  if (!Consume(name, pos, "ProfilerStep#") || !ParseDigits(name, pos) || pos != name.size()) {
    return std::nullopt;
  }
  return Iteration("kineto");
}

std::optional<CommDirection> ParseDirection(std::string_view text) {
  if (text.empty()) return CommDirection::kNone;
  if (text == "send_forward") return CommDirection::kSendForward;
  if (text == "recv_forward") return CommDirection::kRecvForward;
  if (text == "send_backward") return CommDirection::kSendBackward;
  if (text == "recv_backward") return CommDirection::kRecvBackward;
  return std::nullopt;
}

// A rule's stage/chunk/microbatch field: empty, a non-negative integer, or "$N".
struct FieldSpec {
  int32_t value = -1;  // constant
  int group = -1;      // capture group
};

Expected<FieldSpec> ParseField(const json& rule, const char* key, const std::string& where,
                               unsigned groups) {
  FieldSpec spec;
  if (!rule.contains(key) || rule[key].is_null()) return spec;
  const json& value = rule[key];
  if (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= INT32_MAX) {
    spec.value = value.get<int32_t>();
    return spec;
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    size_t pos = 1;
    if (text.size() >= 2 && text[0] == '$') {
      auto group = ParseDigits(text, pos);
      if (group && pos == text.size() && *group >= 1 && static_cast<unsigned>(*group) <= groups) {
        spec.group = *group;
        return spec;
      }
    }
    return InvalidInput(where + "." + key +
                        ": must be an integer >= 0 or \"$N\" naming one of the " +
                        std::to_string(groups) + " capture groups, got \"" + text + "\"");
  }
  return InvalidInput(where + "." + key + ": must be an integer >= 0 or \"$N\", got " +
                      value.dump());
}

struct CompiledRule {
  UserRule rule;
  std::regex regex;
  RangeRole role = RangeRole::kOp;
  OpKind kind = OpKind::kF;
  CommDirection direction = CommDirection::kNone;
  FieldSpec stage;
  FieldSpec chunk;
  FieldSpec microbatch;
};

int32_t Resolve(const FieldSpec& spec, const std::cmatch& groups) {
  if (spec.group < 0) return spec.value;
  const auto& group = groups[spec.group];
  if (!group.matched) return -1;
  int32_t value = -1;
  auto [ptr, ec] = std::from_chars(group.first, group.second, value);
  if (ec != std::errc() || ptr != group.second || value < 0) return -1;
  return value;
}

}  // namespace

std::optional<CollectiveKind> DataParallelCollectiveOf(std::string_view range_name) {
  // FSDP2 names a range after the module it shards where that is not the root
  // (`FSDPParamGroup._with_fqn`: "FSDP::all_gather (layers.0)", torchtitan's per-block wrapping):
  // the name, then nothing or " (<fqn>)".
  auto named = [range_name](std::string_view name) {
    if (!range_name.starts_with(name)) return false;
    const std::string_view rest = range_name.substr(name.size());
    return rest.empty() || (rest.starts_with(" (") && rest.ends_with(")"));
  };
  if (named("FSDP::post_backward_reduce")) return CollectiveKind::kReduce;
  if (named("FSDP::all_gather")) return CollectiveKind::kUnshard;
  return std::nullopt;
}

std::optional<CollectiveKind> NcclCollectiveOf(std::string_view kernel_name) {
  if (!IsNcclKernel(kernel_name)) return std::nullopt;
  // NCCL names its kernels ncclKernel_<Collective>_<algorithm>_... (ncclDevKernel_ since 2.19).
  for (std::string_view reduce : {"_AllReduce_", "_ReduceScatter_"}) {
    if (kernel_name.find(reduce) != std::string_view::npos) return CollectiveKind::kReduce;
  }
  if (kernel_name.find("_AllGather_") != std::string_view::npos) return CollectiveKind::kUnshard;
  return std::nullopt;
}

RangeMatch MatchBuiltIn(std::string_view name, std::string_view domain) {
  // Kineto's GPU-side copies of annotations would double every op; they are only used when a
  // user rule names that domain.
  if (domain == "gpu_user_annotation") return {};
  if (auto match = MatchZbkit(name)) return *match;
  if (auto match = MatchTorchPp(name)) return *match;
  if (auto match = MatchZbFork(name)) return *match;
  if (auto match = MatchKineto(name)) return *match;
  return {};
}

struct RuleSet::Impl {
  std::vector<CompiledRule> rules;
};

RuleSet::RuleSet() : impl_(std::make_unique<Impl>()) {}
RuleSet::RuleSet(const RuleSet& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
RuleSet& RuleSet::operator=(const RuleSet& other) {
  if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
RuleSet::RuleSet(RuleSet&&) noexcept = default;
RuleSet& RuleSet::operator=(RuleSet&&) noexcept = default;
RuleSet::~RuleSet() = default;

int RuleSet::num_user_rules() const {
  return static_cast<int>(impl_->rules.size());
}

Expected<RuleSet> RuleSet::FromJson(const std::string& text, const std::string& source) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& error) {
    return InvalidInput(source + ": not valid JSON: " + error.what());
  }
  const json* list = &root;
  std::string prefix = "";
  if (root.is_object()) {
    if (!root.contains("rules") || !root["rules"].is_array()) {
      return InvalidInput(source + ": rules: expected an array of rules");
    }
    list = &root["rules"];
    prefix = "rules";
  } else if (!root.is_array()) {
    return InvalidInput(source + ": expected {\"rules\": [...]} or an array of rules");
  }
  RuleSet set;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& rule = (*list)[i];
    const std::string where = source + ": " + prefix + "[" + std::to_string(i) + "]";
    if (!rule.is_object()) return InvalidInput(where + ": expected an object");
    for (const auto& item : rule.items()) {
      static const char* const kKeys[] = {"regex",      "kind",   "stage",     "chunk",
                                          "microbatch", "domain", "direction", "comment"};
      const std::string& key = item.key();
      if (std::find_if(std::begin(kKeys), std::end(kKeys),
                       [&](const char* known) { return key == known; }) == std::end(kKeys)) {
        return InvalidInput(where + ": unknown field \"" + key + "\"");
      }
    }
    CompiledRule compiled;
    if (!rule.contains("regex") || !rule["regex"].is_string() ||
        rule["regex"].get<std::string>().empty()) {
      return InvalidInput(where + ".regex: must be a non-empty string");
    }
    compiled.rule.regex = rule["regex"].get<std::string>();
    try {
      compiled.regex = std::regex(compiled.rule.regex, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      return InvalidInput(where + ".regex: invalid regular expression \"" + compiled.rule.regex +
                          "\": " + error.what());
    }
    if (!rule.contains("kind") || !rule["kind"].is_string()) {
      return InvalidInput(where + ".kind: must be one of F, B, W, BW, COMM, ITER, IGNORE");
    }
    compiled.rule.kind = rule["kind"].get<std::string>();
    if (compiled.rule.kind == "ITER") {
      compiled.role = RangeRole::kIteration;
    } else if (compiled.rule.kind == "IGNORE") {
      compiled.role = RangeRole::kIgnore;
    } else if (auto kind = ParseOpKind(compiled.rule.kind)) {
      compiled.kind = *kind;
    } else {
      return InvalidInput(where + ".kind: must be one of F, B, W, BW, COMM, ITER, IGNORE, got \"" +
                          compiled.rule.kind + "\"");
    }
    if (rule.contains("domain")) {
      if (!rule["domain"].is_string()) return InvalidInput(where + ".domain: must be a string");
      compiled.rule.domain = rule["domain"].get<std::string>();
    }
    if (rule.contains("direction")) {
      if (!rule["direction"].is_string()) {
        return InvalidInput(where + ".direction: must be a string");
      }
      compiled.rule.direction = rule["direction"].get<std::string>();
      auto direction = ParseDirection(compiled.rule.direction);
      if (!direction) {
        return InvalidInput(where +
                            ".direction: must be send_forward, recv_forward, send_backward or "
                            "recv_backward, got \"" +
                            compiled.rule.direction + "\"");
      }
      compiled.direction = *direction;
    }
    const unsigned groups = static_cast<unsigned>(compiled.regex.mark_count());
    ZB_ASSIGN_OR_RETURN(compiled.stage, ParseField(rule, "stage", where, groups));
    ZB_ASSIGN_OR_RETURN(compiled.chunk, ParseField(rule, "chunk", where, groups));
    ZB_ASSIGN_OR_RETURN(compiled.microbatch, ParseField(rule, "microbatch", where, groups));
    auto text_of = [&](const char* key) {
      return rule.contains(key) && !rule[key].is_null() ? rule[key].dump() : std::string();
    };
    compiled.rule.stage = text_of("stage");
    compiled.rule.chunk = text_of("chunk");
    compiled.rule.microbatch = text_of("microbatch");
    set.impl_->rules.push_back(std::move(compiled));
  }
  return set;
}

Expected<RuleSet> RuleSet::LoadFile(const std::string& path) {
  ZB_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return FromJson(text, path);
}

RangeMatch RuleSet::Match(std::string_view name, std::string_view domain) const {
  for (const CompiledRule& rule : impl_->rules) {
    if (rule.rule.domain.empty() ? domain == "gpu_user_annotation" : rule.rule.domain != domain) {
      continue;
    }
    std::cmatch groups;
    if (!std::regex_search(name.data(), name.data() + name.size(), groups, rule.regex)) continue;
    RangeMatch match;
    match.role = rule.role;
    match.kind = rule.kind;
    match.direction = rule.direction;
    match.family = "user";
    match.stage = Resolve(rule.stage, groups);
    match.chunk = Resolve(rule.chunk, groups);
    match.microbatch = Resolve(rule.microbatch, groups);
    return match;
  }
  return MatchBuiltIn(name, domain);
}

}  // namespace zb::profiler
