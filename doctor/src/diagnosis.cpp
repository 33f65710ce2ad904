// SPDX-License-Identifier: Apache-2.0
// The wait-for graph of a pipeline (docs/stalls.md §3): a rank inside an op that needs a message
// from a peer (an F of stage s > 0 needs stage s-1's activation, a B or BW of stage s < n-1 stage
// s+1's gradient) waits for that peer until the peer has passed the op that sends it: its SEND
// action in torch's runtime, the producing F/B/BW in zbkit's executor (which sends right after).
#include "zbkit/doctor/diagnosis.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "zbkit/schemas/time_text.h"

namespace zb::doctor {
namespace {

struct Need {
  int peer = -1;
  int producer = -1;  // index in the peer's program, -1 when none sends it
  std::string message;
};

bool IsCompute(ActionKind kind) {
  return ComputeKindOf(kind).has_value();
}

class Graph {
 public:
  Graph(const RunProgress& run, std::vector<std::string>& problems) : run_(run) {
    for (size_t i = 0; i < run.ranks.size(); ++i) {
      const RankProgress& rank = run.ranks[i];
      by_rank_[rank.rank] = i;
      stages_ = std::max(stages_, rank.stages);
      for (const ProgramOp& op : rank.program) {
        if (!IsCompute(op.kind) || op.stage < 0) continue;
        stages_ = std::max(stages_, op.stage + 1);
        v_placement_ = v_placement_ || op.stage % std::max(1, run.world) != rank.rank;
        auto [it, inserted] = owner_.emplace(op.stage, rank.rank);
        if (!inserted && it->second != rank.rank && conflicts_.insert(op.stage).second) {
          Unrunnable(rank.rank,
                     "stage " + std::to_string(op.stage) + " is in the programs of ranks " +
                         std::to_string(it->second) + " and " + std::to_string(rank.rank) +
                         " (the ranks run schedules for different layouts)",
                     problems);
        }
      }
    }
    CheckEveryMessageIsSent(problems);
  }

  const RankProgress* Rank(int rank) const {
    auto it = by_rank_.find(rank);
    return it == by_rank_.end() ? nullptr : &run_.ranks[it->second];
  }
  // The first rank whose program cannot run with the others' (-1: they fit together), and why.
  int UnrunnableRank() const { return unrunnable_rank_; }
  const std::string& UnrunnableReason() const { return unrunnable_reason_; }

  // What `rank`'s current op waits for, if it needs a message from another rank.
  std::optional<Need> NeedOf(const RankProgress& rank) const {
    const bool in_op = rank.phase == Phase::kInOp || rank.phase == Phase::kRaised;
    if (!in_op || rank.op_index < 0) return std::nullopt;
    return NeedFor(rank.rank, rank.program[static_cast<size_t>(rank.op_index)]);
  }

  // What op `op` of rank `rank` needs from another rank, if anything.
  std::optional<Need> NeedFor(int rank, const ProgramOp& op) const {
    int from_stage = -1;
    bool activation = false;
    if (op.kind == ActionKind::kF && op.stage > 0) {
      from_stage = op.stage - 1;
      activation = true;
    } else if ((op.kind == ActionKind::kB || op.kind == ActionKind::kBW) &&
               op.stage + 1 < stages_) {
      from_stage = op.stage + 1;
    }
    const int owner = OwnerOf(from_stage);
    if (owner < 0 || owner == rank) return std::nullopt;
    Need need;
    need.peer = owner;
    need.message =
        FormatAction(activation ? ActionKind::kRecvF : ActionKind::kRecvB, op.stage, op.microbatch);
    if (const RankProgress* peer = Rank(need.peer)) {
      need.producer = ProducerIndex(*peer, from_stage, op.microbatch, activation);
    }
    return need;
  }

  // Whether `peer` is past op `producer` of the iteration `iteration`.
  static bool Passed(const RankProgress& peer, int64_t iteration, int producer) {
    if (producer < 0) return false;
    if (peer.iteration != iteration) return peer.iteration > iteration;
    switch (peer.phase) {
      case Phase::kIterationDone:
      case Phase::kExited:
        return true;
      case Phase::kInOp:
      case Phase::kRaised:
        return peer.op_index > producer;
      case Phase::kOpDone:
        return peer.op_index >= producer;
      case Phase::kStarting:
        break;
    }
    return false;
  }

 private:
  // A problem that keeps the programs from running together; the first names the culprit.
  void Unrunnable(int rank, const std::string& problem, std::vector<std::string>& problems) {
    problems.push_back(problem);
    if (unrunnable_rank_ >= 0) return;
    unrunnable_rank_ = rank;
    unrunnable_reason_ = problem;
  }

  // Every message a rank's program waits for must be sent by its peer's program: ranks that run
  // different microbatch counts or orders for another layout fail this before they hang.
  void CheckEveryMessageIsSent(std::vector<std::string>& problems) {
    for (const RankProgress& rank : run_.ranks) {
      for (const ProgramOp& op : rank.program) {
        auto need = NeedFor(rank.rank, op);
        const RankProgress* peer = need ? Rank(need->peer) : nullptr;
        if (peer == nullptr || need->producer >= 0) continue;
        Unrunnable(rank.rank,
                   "rank " + std::to_string(rank.rank) + "'s " + OpText(op) + " needs " +
                       need->message + " from rank " + std::to_string(peer->rank) +
                       ", whose program has no op that sends it (microbatches: rank " +
                       std::to_string(rank.rank) + " " + std::to_string(rank.microbatches) +
                       ", rank " + std::to_string(peer->rank) + " " +
                       std::to_string(peer->microbatches) + ")",
                   problems);
        break;
      }
    }
  }

  // The rank holding `stage`: from the programs, else (a rank without a record) by the placement
  // the others follow (docs/schedules.md): loop (s mod p) or V.
  int OwnerOf(int stage) const {
    if (stage < 0) return -1;
    auto it = owner_.find(stage);
    if (it != owner_.end()) return it->second;
    const int p = run_.world;
    if (p <= 0) return -1;
    if (v_placement_ && stages_ == 2 * p) return stage < p ? stage : 2 * p - 1 - stage;
    return stage % p;
  }

  static int ProducerIndex(const RankProgress& peer, int stage, int microbatch, bool activation) {
    const bool has_comms = std::any_of(peer.program.begin(), peer.program.end(), [](auto& op) {
      return op.kind == ActionKind::kSendF || op.kind == ActionKind::kSendB;
    });
    for (size_t i = 0; i < peer.program.size(); ++i) {
      const ProgramOp& op = peer.program[i];
      if (op.stage != stage || op.microbatch != microbatch) continue;
      const bool sends =
          has_comms ? op.kind == (activation ? ActionKind::kSendF : ActionKind::kSendB)
                    : (activation ? op.kind == ActionKind::kF
                                  : op.kind == ActionKind::kB || op.kind == ActionKind::kBW);
      if (sends) return static_cast<int>(i);
    }
    return -1;
  }

  const RunProgress& run_;
  std::map<int, size_t> by_rank_;
  std::map<int, int> owner_;
  std::set<int> conflicts_;
  int stages_ = 0;
  bool v_placement_ = false;
  int unrunnable_rank_ = -1;
  std::string unrunnable_reason_;
};

// How bad a rank's own state is, lower first; 9 for a rank that is fine on its own.
int Severity(const RankFinding& rank) {
  if (rank.phase == Phase::kRaised) return 0;
  if (rank.process == ProcessState::kDead && rank.phase != Phase::kExited) return 1;
  if (rank.process == ProcessState::kStopped) return 2;
  return 9;
}

std::string Where(const RankFinding& rank) {
  std::string text = "rank " + std::to_string(rank.rank);
  if (!rank.op.empty()) {
    text += " in " + rank.op + " (op " + std::to_string(rank.op_index) + ", step " +
            std::to_string(rank.iteration) + ")";
  } else {
    text += std::string(" ") + (rank.phase == Phase::kIterationDone ? "between steps"
                                : rank.phase == Phase::kExited      ? "after exiting"
                                                                    : "starting a step");
  }
  return text;
}

std::string WaitText(const RankFinding& rank) {
  return "rank " + std::to_string(rank.rank) + " waits " + rank.message + " from rank " +
         std::to_string(rank.waits_for) + " (in " + rank.op + ", op " +
         std::to_string(rank.op_index) + ", for " + FormatSeconds(rank.for_s) + ")";
}

void Blame(Diagnosis& d, const RankFinding& rank, Culprit culprit, const std::string& headline,
           const std::string& advice) {
  d.culprit = culprit;
  d.culprit_rank = rank.rank;
  d.headline = headline;
  d.advice = advice;
}

// The headline and advice for a culprit rank that no one else's state explains.
void BlameRank(Diagnosis& d, const RankFinding& rank, const std::string& exit_message) {
  const std::string pid = "process " + std::to_string(rank.pid);
  switch (Severity(rank)) {
    case 0:
      return Blame(d, rank, Culprit::kRaised, Where(rank) + " raised: " + exit_message,
                   "read rank " + std::to_string(rank.rank) +
                       "'s traceback in the job's output and fix that error");
    case 1:
      return Blame(d, rank, Culprit::kDied,
                   Where(rank) + ": its " + pid +
                       " is gone without exiting (killed by a signal: SIGKILL, the OOM killer, "
                       "or its launcher)",
                   "find what killed it (dmesg for the OOM killer, the launcher's log); the other "
                   "ranks wait for it");
    case 2:
      return Blame(d, rank, Culprit::kFrozen,
                   Where(rank) + ": its " + pid + " is stopped (SIGSTOP or a debugger) for " +
                       FormatSeconds(rank.for_s),
                   "resume it (kill -CONT " + std::to_string(rank.pid) +
                       ") or end the job; was a debugger attached?");
    default:
      break;
  }
  const std::string unprobed =
      rank.process == ProcessState::kUnknown
          ? " (on host " + rank.host + ", not probed from here: slow, frozen, or its host is gone)"
          : "";
  if (!rank.op.empty()) {
    return Blame(d, rank, Culprit::kSlow,
                 Where(rank) + " for " + FormatSeconds(rank.for_s) + unprobed,
                 "a straggler (a slow or shared device or host) or a hang inside the op: look at "
                 "its stack (py-spy dump --pid " +
                     std::to_string(rank.pid) + ")");
  }
  Blame(
      d, rank, Culprit::kOutsidePipeline,
      Where(rank) + " for " + FormatSeconds(rank.for_s) + ", outside the pipeline's ops" + unprobed,
      "it is in the script's own code between steps (data loading, optimizer, checkpoint, a "
      "collective): look at its stack (py-spy dump --pid " +
          std::to_string(rank.pid) + ")");
}

void BlameNoRecord(Diagnosis& d, int rank) {
  d.culprit = Culprit::kNoRecord;
  d.culprit_rank = rank;
  d.headline = "rank " + std::to_string(rank) +
               " left no progress record: it never reached its first step, or its record is on "
               "another host";
  d.advice = "read rank " + std::to_string(rank) +
             "'s output: it failed or hung before its first step (start-up, a refused schedule, "
             "the rendezvous)";
}

}  // namespace

const char* CulpritName(Culprit culprit) {
  switch (culprit) {
    case Culprit::kNone:
      return "none";
    case Culprit::kRaised:
      return "raised";
    case Culprit::kDied:
      return "died";
    case Culprit::kFrozen:
      return "frozen";
    case Culprit::kDeadlock:
      return "deadlock";
    case Culprit::kUnrunnable:
      return "unrunnable";
    case Culprit::kSlow:
      return "slow";
    case Culprit::kOutsidePipeline:
      return "outside-pipeline";
    case Culprit::kNoRecord:
      return "no-record";
    case Culprit::kFinished:
      return "finished";
  }
  return "none";
}

namespace {

std::vector<RankFinding> Findings(const RunProgress& run, const Graph& graph,
                                  const DiagnoseOptions& options) {
  std::vector<RankFinding> findings;
  for (const RankProgress& rank : run.ranks) {
    RankFinding f;
    f.rank = rank.rank;
    f.pid = rank.pid;
    f.host = rank.host;
    f.process = options.probe(rank);
    f.phase = rank.phase;
    f.iteration = rank.iteration;
    f.op_index = rank.op_index;
    const bool in_op =
        rank.op_index >= 0 && (rank.phase == Phase::kInOp || rank.phase == Phase::kRaised ||
                               rank.phase == Phase::kOpDone);
    if (in_op) f.op = OpText(rank.program[static_cast<size_t>(rank.op_index)]);
    f.for_s = std::max(0.0, static_cast<double>(options.now_ns - rank.since_ns) / 1e9);
    for (const OpRun& ran : rank.history) {
      const double began_s = static_cast<double>(options.now_ns - ran.begin_ns) / 1e9;
      const double ms = static_cast<double>(ran.end_ns - ran.begin_ns) / 1e6;
      f.recent.push_back({OpText(rank.program[static_cast<size_t>(ran.op_index)]), ran.iteration,
                          ran.op_index, std::max(0.0, began_s), ms});
    }
    // Then the op it is in, not ended: begun when the state says (for a step that raised, when
    // it raised).
    if (rank.version >= 2 && InsideOp(rank)) {
      f.recent.push_back({f.op, rank.iteration, rank.op_index, f.for_s, -1.0});
    }
    if (auto need = graph.NeedOf(rank)) {
      const RankProgress* peer = graph.Rank(need->peer);
      if (peer == nullptr || !Graph::Passed(*peer, rank.iteration, need->producer)) {
        f.waits_for = need->peer;
        f.message = need->message;
        if (peer != nullptr && need->producer >= 0) {
          f.producer_index = need->producer;
          f.producer = OpText(peer->program[static_cast<size_t>(need->producer)]) + " (op " +
                       std::to_string(need->producer) + ")";
        }
      }
    }
    findings.push_back(std::move(f));
  }
  return findings;
}

// Follows the waits from `start`: the ranks in order, ending at a rank that waits for no one,
// at one without a record, or where the walk meets itself (then `cycle_at` is that rank).
std::vector<int> Walk(const std::map<int, const RankFinding*>& by_rank, int start, int& cycle_at) {
  std::vector<int> path;
  std::set<int> seen;
  cycle_at = -1;
  for (int r = start; r >= 0;) {
    if (!seen.insert(r).second) {
      cycle_at = r;
      break;
    }
    path.push_back(r);
    auto it = by_rank.find(r);
    r = it == by_rank.end() ? -1 : it->second->waits_for;
  }
  return path;
}

std::string Chain(const std::map<int, const RankFinding*>& by_rank, const std::vector<int>& path) {
  std::string text;
  for (int r : path) {
    auto it = by_rank.find(r);
    if (!text.empty()) text += " <- ";
    if (it == by_rank.end()) {
      text += "rank " + std::to_string(r) + " (no record)";
    } else if (it->second->waits_for >= 0) {
      text += WaitText(*it->second);
    } else {
      text += Where(*it->second) + " for " + FormatSeconds(it->second->for_s);
    }
  }
  return text;
}

void State(Diagnosis& d, const RunProgress& run, const DiagnoseOptions& options) {
  int64_t last = 0;
  bool in_step = false, all_exited = true, failed = false;
  for (const RankFinding& f : d.ranks) {
    in_step = in_step || f.phase == Phase::kStarting || f.phase == Phase::kInOp ||
              f.phase == Phase::kOpDone;
    all_exited = all_exited && f.phase == Phase::kExited;
    failed = failed || Severity(f) <= 1;
  }
  for (const RankProgress& rank : run.ranks)
    last = std::max(last, rank.since_ns);
  d.quiet_s = std::max(0.0, static_cast<double>(options.now_ns - last) / 1e9);
  d.state = all_exited && static_cast<int>(run.ranks.size()) == run.world ? "finished"
            : failed                                                      ? "failed"
            : in_step && d.quiet_s >= options.stall_timeout_s             ? "stalled"
                                                                          : "progressing";
}

}  // namespace

namespace {

// What the blaming steps share: the findings by rank, each rank's exit message.
struct Evidence {
  std::map<int, const RankFinding*> by_rank;
  std::map<int, std::string> messages;
};

// Whether an exception says the rank lost a peer (gloo's and NCCL's words): it did not fail on its
// own, the peer went away.
bool LostAPeer(const std::string& message) {
  for (const char* words : {"Connection closed by peer", "Connection reset by peer", "Broken pipe",
                            "remote worker crash", "communicator was aborted"}) {
    if (message.find(words) != std::string::npos) return true;
  }
  return false;
}

// A rank broken on its own (raised, died, stopped); with `waiting` false only one that waits for
// no one (a rank that raised on a wait timeout, or lost its peer, or was killed while waiting, is
// a victim).
bool BlameBrokenRank(Diagnosis& d, const Evidence& e, bool waiting) {
  const RankFinding* worst = nullptr;
  auto key = [](const RankFinding& r) { return std::make_pair(Severity(r), -r.for_s); };
  const bool ranks_missing = static_cast<int>(d.ranks.size()) < d.world;
  for (const RankFinding& f : d.ranks) {
    if (Severity(f) > 2) continue;
    // A rank that raised outside any op while another never made its record lost that peer.
    const bool victim = f.waits_for >= 0 || (f.op.empty() && ranks_missing) ||
                        (f.phase == Phase::kRaised && LostAPeer(e.messages.at(f.rank)));
    if (victim && !waiting) continue;
    if (worst == nullptr || key(f) < key(*worst)) worst = &f;
  }
  if (worst == nullptr) return false;
  BlameRank(d, *worst, e.messages.at(worst->rank));
  std::vector<int> to_worst;
  for (const RankFinding& f : d.ranks) {
    if (f.waits_for < 0) continue;
    int cycle_at = -1;
    std::vector<int> path = Walk(e.by_rank, f.rank, cycle_at);
    if (path.size() > to_worst.size() && path.back() == worst->rank) to_worst = path;
  }
  if (!to_worst.empty()) d.chain.push_back(Chain(e.by_rank, to_worst));
  return true;
}

bool BlameCycle(Diagnosis& d, const Evidence& e) {
  for (const RankFinding& f : d.ranks) {
    if (f.waits_for < 0) continue;
    int cycle = -1;
    Walk(e.by_rank, f.rank, cycle);
    if (cycle < 0) continue;
    int ignored = -1;
    std::vector<int> loop = Walk(e.by_rank, cycle, ignored);
    const RankFinding& a = *e.by_rank.at(loop.front());
    const RankFinding& b = *e.by_rank.at(a.waits_for);
    d.culprit = Culprit::kDeadlock;
    d.culprit_rank = a.rank;
    d.headline = "deadlock: rank " + std::to_string(a.rank) + "'s " + a.op + " waits for rank " +
                 std::to_string(b.rank) + "'s " + (a.producer.empty() ? a.message : a.producer) +
                 ", which comes after rank " + std::to_string(b.rank) + "'s " + b.op +
                 " that waits for rank " + std::to_string(b.waits_for);
    d.chain.push_back(Chain(e.by_rank, loop) + " <- rank " + std::to_string(cycle) +
                      " again: a cycle");
    d.advice =
        "the ranks' orders cross: check the schedule (zb show) and give every rank the same "
        "tuned order";
    return true;
  }
  return false;
}

// Where the longest chain of waits ends: a rank without a record, or one that is slow or outside
// the pipeline. (A peer whose program never sends what is waited for is BlameUnrunnable's.)
bool BlameChainEnd(Diagnosis& d, const Evidence& e) {
  std::vector<int> longest;
  for (const RankFinding& f : d.ranks) {
    int cycle_at = -1;
    std::vector<int> path = f.waits_for >= 0 ? Walk(e.by_rank, f.rank, cycle_at) : longest;
    if (path.size() > longest.size()) longest = path;
  }
  if (longest.size() < 2) return false;
  d.chain.push_back(Chain(e.by_rank, longest));
  const int end = longest.back();
  auto sink = e.by_rank.find(end);
  if (sink == e.by_rank.end()) {
    BlameNoRecord(d, end);
  } else {
    BlameRank(d, *sink->second, e.messages.at(end));
  }
  return true;
}

// Programs that cannot run together are the cause whatever else went wrong after (a rank that
// read another step's message as its own, a connection closed by a peer that finished).
bool BlameUnrunnable(Diagnosis& d, const Graph& graph) {
  if (graph.UnrunnableRank() < 0) return false;
  d.culprit = Culprit::kUnrunnable;
  d.culprit_rank = graph.UnrunnableRank();
  d.headline = "schedule cannot run: " + graph.UnrunnableReason();
  d.advice =
      "the ranks run different schedules (microbatches or layout): give every rank the same "
      "schedule";
  return true;
}

// A rank of the job without a record, when nothing else explains the failure: it never got to
// its first step (refused its schedule, failed at start-up) and the others lost it.
bool BlameMissingRank(Diagnosis& d, const RunProgress& run) {
  std::set<int> present;
  for (const RankProgress& rank : run.ranks)
    present.insert(rank.rank);
  for (int r = 0; r < run.world; ++r) {
    if (present.count(r) == 0) {
      BlameNoRecord(d, r);
      return true;
    }
  }
  return false;
}

// No rank waits for another and none failed on its own: the one longest in an op, else the one
// longest between steps (ranks that raised are victims here, see BlameBrokenRank).
bool BlameSlowest(Diagnosis& d) {
  const RankFinding* slowest = nullptr;
  for (const RankFinding& f : d.ranks) {
    if (f.phase == Phase::kExited || f.phase == Phase::kRaised) continue;
    if (f.process == ProcessState::kDead) continue;
    auto key = [](const RankFinding& r) { return std::make_pair(!r.op.empty(), r.for_s); };
    if (slowest == nullptr || key(*slowest) < key(f)) slowest = &f;
  }
  if (slowest == nullptr) return false;
  BlameRank(d, *slowest, "");
  return true;
}

}  // namespace

Diagnosis Diagnose(const RunProgress& run, const DiagnoseOptions& options) {
  Diagnosis d;
  d.directory = run.directory;
  d.job = run.job;
  d.world = run.world;
  d.problems = run.problems;
  Graph graph(run, d.problems);
  d.ranks = Findings(run, graph, options);
  State(d, run, options);
  if (d.state == "finished") {
    d.culprit = Culprit::kFinished;
    d.headline = "every rank exited normally";
    return d;
  }
  if (d.state == "progressing") return d;  // the waits are normal until they last
  Evidence e;
  for (const RankFinding& f : d.ranks)
    e.by_rank[f.rank] = &f;
  for (const RankProgress& rank : run.ranks)
    e.messages[rank.rank] = rank.exit_message;
  // The first that finds a culprit names it; with none, the state and the per-rank lines say
  // what there is.
  static_cast<void>(BlameUnrunnable(d, graph) || BlameBrokenRank(d, e, false) || BlameCycle(d, e) ||
                    BlameChainEnd(d, e) || BlameMissingRank(d, run) || BlameSlowest(d) ||
                    BlameBrokenRank(d, e, true));
  return d;
}

}  // namespace zb::doctor
