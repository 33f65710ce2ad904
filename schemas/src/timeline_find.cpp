// SPDX-License-Identifier: Apache-2.0
// ParseOpQuery and FindOps (timeline_find.h).
#include "zbkit/schemas/timeline_find.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <tuple>

namespace zb {
namespace {

std::string Lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

std::optional<int32_t> Number(std::string_view text) {
  int32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// "3", "-1", "3a": meant as a number (a keyword before it takes it, or says why it cannot).
bool LooksNumeric(std::string_view word) {
  const size_t digit = !word.empty() && (word[0] == '-' || word[0] == '+') ? 1 : 0;
  return word.size() > digit && std::isdigit(static_cast<unsigned char>(word[digit]));
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    const size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

}  // namespace

Expected<OpQuery> ParseOpQuery(std::string_view text) {
  struct Keyword {
    const char* long_name;
    const char* short_name;
    std::optional<int32_t> OpQuery::*field;
  };
  static const Keyword kKeywords[] = {
      {"stage", "s", &OpQuery::stage},         {"mb", "mb", &OpQuery::microbatch},
      {"rank", "r", &OpQuery::rank},           {"iter", "i", &OpQuery::iteration},
      {"iteration", "i", &OpQuery::iteration},
  };
  OpQuery query;
  const std::vector<std::string_view> words = Words(text);
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string word = Lower(words[w]);
    std::string upper = word;
    for (char& c : upper)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (const auto kind = ParseOpKind(upper)) {  // F, B, W, BW, COMM in any case
      query.kind = *kind;
      continue;
    }
    bool matched = false;
    for (const Keyword& keyword : kKeywords) {
      if (word == keyword.long_name && w + 1 < words.size() && LooksNumeric(words[w + 1])) {
        const auto value = Number(words[w + 1]);
        if (!value) {
          return UsageError(std::string("'") + keyword.long_name +
                            "' needs a number from 0 after it, not '" + std::string(words[w + 1]) +
                            "'");
        }
        query.*keyword.field = *value;
        ++w;
        matched = true;
        break;
      }
      const std::string_view prefix = keyword.short_name;
      if (word.size() > prefix.size() && word.compare(0, prefix.size(), prefix) == 0) {
        if (const auto value = Number(std::string_view(word).substr(prefix.size()))) {
          query.*keyword.field = *value;
          matched = true;
          break;
        }
      }
    }
    if (!matched) query.name_words.push_back(word);
  }
  return query;
}

std::vector<std::pair<int, size_t>> FindOps(const TimelineIndex& index, const OpQuery& query) {
  std::vector<std::pair<int, size_t>> found;
  if (query.empty()) return found;
  // Range names matching every word, once per name rather than once per op.
  std::vector<char> name_matches;
  if (!query.name_words.empty()) {
    name_matches.reserve(index.names().size());
    for (const std::string& name : index.names()) {
      const std::string lower = Lower(name);
      name_matches.push_back(std::all_of(
          query.name_words.begin(), query.name_words.end(),
          [&](const std::string& word) { return lower.find(word) != std::string::npos; }));
    }
  }
  for (int l = 0; l < static_cast<int>(index.lanes().size()); ++l) {
    const TimelineLane& lane = index.lane(l);
    if (lane.kind == LaneKind::kStage) continue;
    if (query.rank && lane.rank != *query.rank) continue;
    for (size_t i = 0; i < lane.size(); ++i) {
      if (query.kind && lane.kind_of[i] != *query.kind) continue;
      if (query.stage && lane.stage_of[i] != *query.stage) continue;
      if (query.microbatch && lane.microbatch[i] != *query.microbatch) continue;
      if (query.iteration && lane.IterationOf(i) != *query.iteration) continue;
      if (!query.name_words.empty()) {
        const int32_t name = lane.name.empty() ? -1 : lane.name[i];
        if (name < 0 || !name_matches[static_cast<size_t>(name)]) continue;
      }
      found.emplace_back(l, i);
    }
  }
  std::sort(found.begin(), found.end(), [&](const auto& x, const auto& y) {
    return std::make_tuple(index.lane(x.first).start[x.second], x.first, x.second) <
           std::make_tuple(index.lane(y.first).start[y.second], y.first, y.second);
  });
  return found;
}

}  // namespace zb
