// SPDX-License-Identifier: Apache-2.0
// Finding ops in a timeline: what zbview's Find bar (Ctrl+F) searches, Qt-free so that it is
// tested without a window (docs/zbview.md §7).
//
// A query is words, in any order: an op kind (F, B, W, BW, COMM), "stage N" (or sN), "mb N" (or
// mbN), "rank N" (or rN), "iter N" (or iteration N) and any other word, matched case-insensitively
// as a substring of the op's range name (several such words must all occur; a keyword not
// followed by a number is such a word too). "B stage 3 mb 5"
// finds one backward; "fwd" every op whose range name contains "fwd".
#ifndef ZBKIT_SCHEMAS_TIMELINE_FIND_H_
#define ZBKIT_SCHEMAS_TIMELINE_FIND_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zbkit/schemas/status.h"
#include "zbkit/schemas/timeline_index.h"

namespace zb {

struct OpQuery {
  std::optional<OpKind> kind;
  std::optional<int32_t> stage;
  std::optional<int32_t> microbatch;
  std::optional<int32_t> rank;
  std::optional<int32_t> iteration;
  std::vector<std::string> name_words;  // lower case; each a substring of the range name

  bool empty() const {
    return !kind && !stage && !microbatch && !rank && !iteration && name_words.empty();
  }
};

// Parses a query. A keyword followed by something other than a number ("stage" alone, "mb
// fwd") is a name word; followed by a number it cannot take ("mb -1", "stage 3a") it is a usage
// error naming both.
Expected<OpQuery> ParseOpQuery(std::string_view text);

// The ops matching `query` on rank and comm lanes (stage lanes repeat rank-lane ops), ordered by
// start time, then lane: (lane, index) pairs. An empty query matches nothing.
std::vector<std::pair<int, size_t>> FindOps(const TimelineIndex& index, const OpQuery& query);

}  // namespace zb

#endif  // ZBKIT_SCHEMAS_TIMELINE_FIND_H_
