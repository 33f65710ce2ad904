// SPDX-License-Identifier: Apache-2.0
#include "recorder.h"

#include <cupti.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "inject_util.h"

namespace zb::profiler::inject {

bool g_clock_is_cupti = false;

namespace {

constexpr int kWriterTickMs = 50;               // ring drain period
constexpr int64_t kFlushPeriodNs = 1000000000;  // shard transaction period
constexpr int64_t kFlushRecords = 50000;        // ...or this many records, whichever first

std::atomic<Recorder*> g_recorder{nullptr};
// A pthread mutex, not std::mutex: PrepareFork/ChildAfterFork lock and unlock it around fork().
pthread_mutex_t g_create_mutex = PTHREAD_MUTEX_INITIALIZER;
// Set in a forked child: the parent keeps its rank's shard, the child writes a pid shard.
bool g_forked_child = false;

// Signal chaining (SIGTERM, SIGINT, SIGSEGV, SIGABRT, SIGBUS). Written once, before the handler
// is installed.
struct sigaction g_previous[NSIG];
bool g_handles[NSIG];
int64_t g_signal_flush_ms = 2000;

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Why a bounded flush inside the handler, and how it stays async-signal-safe: the handler only
// bumps an atomic, writes the writer's eventfd and polls another atomic with nanosleep(); the
// writer thread (which blocks these signals) does the real work (CUPTI flush, SQLite) in normal
// context. If the interrupted thread holds something the writer needs (a CUPTI lock, a malloc
// arena, the interning mutex) the writer stalls, the wait times out (ZBKIT_SIGNAL_FLUSH_MS,
// default 2 s) and the signal goes on to its previous disposition: at worst the last second of
// records is lost, never the process hung. Then the handler chains: a previous handler is called
// (Python's SIGINT handler raises KeyboardInterrupt and the job carries on); the default action
// is re-raised, so the process still dies by the signal with the status its parent expects;
// SIG_IGN was never replaced in the first place.
void OnSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (Recorder* r = Recorder::Current(); r != nullptr && r->active()) {
    r->FlushAndWait(g_signal_flush_ms);
  }
  const struct sigaction& previous = g_previous[sig];
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler == SIG_DFL) {
    struct sigaction restore {};
    restore.sa_handler = SIG_DFL;
    sigemptyset(&restore.sa_mask);
    sigaction(sig, &restore, nullptr);
    // The signal is blocked while its handler runs, so this leaves it pending; it is delivered,
    // with the default action, the moment the handler returns.
    raise(sig);
  } else if (previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
  errno = saved_errno;
}

void InstallSignalHandlers() {
  static bool installed = false;  // under g_create_mutex
  if (installed) return;
  installed = true;
  g_signal_flush_ms = std::max<int64_t>(0, EnvInt64("ZBKIT_SIGNAL_FLUSH_MS", 2000));
  // SIGTERM/SIGINT: a launcher stopping the job. SIGSEGV/SIGABRT/SIGBUS: the job crashing; its
  // last records are often what explains the crash, and the process still dies by the signal
  // (the default action re-raised, or the job's own handler, e.g. faulthandler, called).
  for (int sig : {SIGTERM, SIGINT, SIGSEGV, SIGABRT, SIGBUS}) {
    struct sigaction action {};
    action.sa_sigaction = OnSignal;
    sigemptyset(&action.sa_mask);
    struct sigaction previous {};
    if (sigaction(sig, nullptr, &previous) != 0) continue;
    if ((previous.sa_flags & SA_SIGINFO) == 0 && previous.sa_handler == SIG_IGN) continue;
    // Keep the application's restart semantics: Python installs SIGINT without SA_RESTART so
    // that a blocking call returns EINTR and KeyboardInterrupt fires at once.
    action.sa_flags = SA_SIGINFO | (previous.sa_flags & (SA_RESTART | SA_ONSTACK));
    g_previous[sig] = previous;
    g_handles[sig] = true;
    sigaction(sig, &action, nullptr);
  }
}

void OnExit() {
  if (Recorder* r = Recorder::Current(); r != nullptr) r->Shutdown();
}

// Runs at exit after the atexit hooks (and at dlclose, which nodelete rules out): a second
// chance for the final flush when atexit registration failed.
__attribute__((destructor)) void OnUnload() {
  OnExit();
}

__attribute__((constructor)) void OnLoad() {
  pthread_atfork(&Recorder::PrepareFork, &Recorder::ParentAfterFork, &Recorder::ChildAfterFork);
}

}  // namespace

NameTable& Names() {
  static NameTable* table = new NameTable();
  return *table;
}

DomainTable& Domains() {
  static DomainTable* table = new DomainTable(&Names());
  return *table;
}

// ---- ThreadState ------------------------------------------------------------------------------

ThreadState::ThreadState(Recorder* owner, int32_t thread_id)
    : recorder(owner), tid(thread_id), ring(Recorder::RingEvents()), names(&Names()) {
  stacks.resize(4);
  for (auto& stack : stacks)
    stack.reserve(64);
}

uint32_t Recorder::RingEvents() {
  static const uint32_t events = static_cast<uint32_t>(
      std::clamp<int64_t>(EnvInt64("ZBKIT_RING_EVENTS", kRingEvents), 2, kRingEvents));
  return events;
}

void ThreadState::GrowStacks(uint16_t domain) {
  const size_t old_size = stacks.size();
  stacks.resize(size_t{domain} + 1);
  for (size_t i = old_size; i < stacks.size(); ++i)
    stacks[i].reserve(16);
}

void ThreadState::OnRingFull(const RingEvent& event) {
  FreeOwnedName(event.name);
  // One wake per 1024 drops: the writer is already behind, do not add a syscall per event.
  if ((dropped.fetch_add(1, std::memory_order_relaxed) & 1023) == 0) recorder->Wake();
}

void ThreadState::MaybeWakeWriter() {
  if (ring.Fill() >= ring.capacity() / 2) recorder->Wake();
}

uint64_t ThreadState::NameOfString(const std::string& text) {
  if (text.empty()) return 0;
  const uint32_t id = Names().Intern(text);
  if (id != NameTable::kNoId) return TagNameId(id);
  return OwnedName(text.data(), text.size());
}

uint64_t ThreadState::OwnedName(const char* text, size_t length) {
  // malloc'd memory is 16-byte aligned, so the low (tag) bit is 0.
  char* copy = static_cast<char*>(std::malloc(length + 1));
  if (copy == nullptr) return 0;
  std::memcpy(copy, text, length);
  copy[length] = '\0';
  return reinterpret_cast<uint64_t>(copy);
}

// ---- Recorder: creation -----------------------------------------------------------------------

Recorder* Recorder::Current() {
  return g_recorder.load(std::memory_order_acquire);
}

Recorder* Recorder::Get() {
  if (Recorder* r = g_recorder.load(std::memory_order_acquire)) [[likely]]
    return r;
  pthread_mutex_lock(&g_create_mutex);
  Recorder* r = g_recorder.load(std::memory_order_relaxed);
  if (r == nullptr) {
    // Never deleted: application threads may call in until the very end of the process.
    r = new (std::nothrow) Recorder(/*activate=*/true);
    if (r == nullptr) {
      // Out of memory at the first event: an inert recorder in static storage (never destroyed,
      // so no destructor runs at exit), and no further attempts.
      alignas(Recorder) static unsigned char storage[sizeof(Recorder)];
      r = new (storage) Recorder(/*activate=*/false);
    }
    if (r->active_) r->Start();
    g_recorder.store(r, std::memory_order_release);
  }
  pthread_mutex_unlock(&g_create_mutex);
  return r;
}

Recorder::Recorder(bool activate) {
  if (!activate) return;
  try {
    const char* dir = std::getenv("ZBKIT_SHARD_DIR");
    if (dir == nullptr || *dir == '\0') return;  // not started by `zb profile`: stay silent
    ::mkdir(dir, 0755);                          // `zb profile` makes it; other hosts may not
    TraceProcess process = CurrentProcess();
    if (g_forked_child) {
      process.rank = -1;
    } else if (process.rank >= 0) {
      rank_lock_fd_ = ClaimRank(dir, process.rank);
      if (rank_lock_fd_ < 0) process.rank = -1;  // another process of this rank came first
    }
    shard_path_ = ShardPath(dir, process);
    auto writer = ShardWriter::Create(shard_path_, process);
    if (!writer.ok()) {
      WriteWarning("cannot create shard " + shard_path_ + " (" + writer.status().message() +
                   "): not recording");
      if (rank_lock_fd_ >= 0) ::close(rank_lock_fd_);
      rank_lock_fd_ = -1;
      return;
    }
    shard_ = std::make_unique<ShardWriter>(std::move(writer).value());
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) {
      WriteWarning("cannot create an eventfd (" + std::string(std::strerror(errno)) +
                   "): not recording");
      return;
    }
    free_buffers_.reserve(kMaxCuptiBuffers);
    completed_.reserve(kMaxCuptiBuffers);
    uint64_t probe = 0;
    g_clock_is_cupti = cuptiGetTimestamp(&probe) == CUPTI_SUCCESS && probe != 0;
    active_ = true;
  } catch (...) {
    active_ = false;  // out of memory: inert
  }
}

void Recorder::Start() {
  // Start the writer with every signal blocked, so that SIGTERM/SIGINT are delivered to an
  // application thread (whose handler waits for the writer), never to the writer itself.
  sigset_t all;
  sigset_t saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  const int rc = pthread_create(
      &writer_, nullptr,
      [](void* self) -> void* {
        static_cast<Recorder*>(self)->WriterMain();
        return nullptr;
      },
      this);
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (rc != 0) {
    WriteWarning("cannot start the writer thread (" + std::string(std::strerror(rc)) +
                 "): not recording");
    active_ = false;
    return;
  }
  writer_started_ = true;
  static bool atexit_registered = false;  // under g_create_mutex; inherited by forked children
  if (!atexit_registered) atexit_registered = std::atexit(OnExit) == 0;
  InstallSignalHandlers();
}

// ---- Application threads ----------------------------------------------------------------------

ThreadState* Recorder::RegisterThread(int32_t tid) {
  if (!active_ || stopped()) return nullptr;
  try {
    auto state = std::make_unique<ThreadState>(this, tid);
    std::lock_guard<std::mutex> lock(threads_mutex_);
    threads_.push_back(state.get());
    return state.release();
  } catch (...) {
    return nullptr;
  }
}

uint64_t Recorder::StartRange(ThreadState* thread, uint16_t domain, uint64_t name) {
  if (open_starts_.load(std::memory_order_relaxed) >= kMaxOpenStartRanges) {
    // Started, never ended, a million times over: stop tracking rather than grow.
    FreeOwnedName(name);
    thread->dropped.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint64_t id = next_range_id_.fetch_add(1, std::memory_order_relaxed);
  StartShard& shard = starts_[id % kStartShards];
  try {
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.open.emplace(id, OpenStart{NowNs(), name, thread->tid, domain});
  } catch (...) {
    FreeOwnedName(name);
    return 0;
  }
  open_starts_.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void Recorder::EndRange(ThreadState* thread, uint64_t id) {
  const int64_t now = NowNs();
  if (id == 0) return;
  StartShard& shard = starts_[id % kStartShards];
  OpenStart open{};
  {
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.open.find(id);
    if (it == shard.open.end()) return;  // not ours, or ended twice
    open = it->second;
    shard.open.erase(it);
  }
  open_starts_.fetch_sub(1, std::memory_order_relaxed);
  thread->Emit(RingEvent{open.start, now, open.name, open.tid == thread->tid ? 0 : open.tid,
                         open.domain, 0});
}

// ---- CUPTI buffers ----------------------------------------------------------------------------

uint8_t* Recorder::AcquireCuptiBuffer() {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (!free_buffers_.empty()) {
    uint8_t* buffer = free_buffers_.back();
    free_buffers_.pop_back();
    return buffer;
  }
  // Past the cap, decline: CUPTI >= 12.9 (API v27) copes with a null buffer, drops the records
  // and counts them in cuptiActivityGetNumDroppedRecords, which the shard keeps.
  if (allocated_buffers_ >= kMaxCuptiBuffers) return nullptr;
  // CUPTI wants 8-byte alignment; a cache line costs nothing more.
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(64, kCuptiBufferBytes));
  if (buffer != nullptr) ++allocated_buffers_;
  return buffer;
}

void Recorder::CompleteCuptiBuffer(uint8_t* buffer, size_t valid_size, int64_t dropped_records) {
  if (dropped_records > 0) cupti_dropped_.fetch_add(dropped_records, std::memory_order_relaxed);
  if (buffer == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(completed_mutex_);
    // Cannot allocate: at most kMaxCuptiBuffers exist and completed_ reserved that many.
    completed_.push_back({buffer, valid_size});
  }
  Wake();
}

// ---- Writer -----------------------------------------------------------------------------------

void Recorder::Wake() {
  if (wake_fd_ < 0) return;
  const int saved_errno = errno;
  const uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
  (void)ignored;  // EAGAIN: the counter is saturated, the writer is awake anyway
  errno = saved_errno;
}

bool Recorder::FlushAndWait(int64_t timeout_ms) {
  if (!active_ || writer_exited_.load(std::memory_order_acquire)) return false;
  const uint64_t generation = flush_requested_.fetch_add(1, std::memory_order_acq_rel) + 1;
  Wake();
  const timespec step{0, 1000000};  // 1 ms
  for (int64_t waited = 0; waited <= timeout_ms; ++waited) {
    if (flush_done_.load(std::memory_order_acquire) >= generation) return true;
    if (writer_exited_.load(std::memory_order_acquire)) return false;
    nanosleep(&step, nullptr);
  }
  return false;
}

void Recorder::WriterMain() {
  int64_t last_flush = MonotonicNs();
  for (;;) {
    pollfd wake{wake_fd_, POLLIN, 0};
    if (::poll(&wake, 1, kWriterTickMs) > 0) {
      uint64_t count = 0;
      ssize_t ignored = ::read(wake_fd_, &count, sizeof(count));
      (void)ignored;
    }
    const bool stopping = stop_.load(std::memory_order_acquire);
    const uint64_t requested = flush_requested_.load(std::memory_order_acquire);
    const bool flush_requested = requested != flush_done_.load(std::memory_order_relaxed);
    // A flush request (a signal) also flushes CUPTI, from this thread: never from the handler,
    // and never under a lock of ours, since FlushAll calls our buffer callback synchronously.
    // Shutdown() does its own CUPTI flush before stopping the writer.
    if (flush_requested && !stopping && cupti_active()) {
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    pending_records_ += static_cast<int64_t>(DrainRings() + DrainCupti());
    const int64_t now = MonotonicNs();
    if (stopping || flush_requested || pending_records_ >= kFlushRecords ||
        (pending_records_ > 0 && now - last_flush >= kFlushPeriodNs)) {
      FlushShard();
      last_flush = now;
    }
    if (flush_requested) flush_done_.store(requested, std::memory_order_release);
    if (stopping) break;
  }
  writer_exited_.store(true, std::memory_order_release);
}

std::string Recorder::NameText(uint64_t name) const {
  if (name == 0) return {};
  if (IsNameId(name)) return std::string(Names().Get(NameIdOf(name)));
  return std::string(reinterpret_cast<const char*>(name));
}

void Recorder::WriteEvent(const ThreadState& thread, const RingEvent& event) {
  // Must not throw: the ring's tail only moves after the whole drain, and an owned name freed
  // here would be freed again by a second drain of the same event.
  if (event.domain == DomainTable::kLaunchDomain) {
    shard_->Add(Launch{static_cast<int64_t>(event.name), thread.tid, event.start});
    return;
  }
  try {
    TraceRange range;
    range.name = NameText(event.name);
    range.domain = std::string(Names().Get(Domains().NameId(event.domain)));
    range.thread = event.thread != 0 ? event.thread : thread.tid;
    range.start = event.start;
    range.end = event.end;
    range.depth = event.depth;
    shard_->Add(range);
  } catch (...) {
    shard_->AddDroppedRecords(1);
  }
  FreeOwnedName(event.name);
}

size_t Recorder::DrainRings() {
  std::vector<ThreadState*> snapshot;
  {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    snapshot = threads_;
  }
  size_t drained = 0;
  int64_t dropped = 0;
  std::vector<ThreadState*> finished;
  for (ThreadState* thread : snapshot) {
    // Read `exited` before draining: everything the thread emitted happened before it set the
    // flag, so an exited thread whose ring is empty after this drain is done for good.
    const bool exited = thread->exited.load(std::memory_order_acquire);
    drained += thread->ring.Drain([&](const RingEvent& e) { WriteEvent(*thread, e); });
    dropped += thread->dropped.exchange(0, std::memory_order_relaxed);
    if (exited && thread->ring.Empty()) finished.push_back(thread);
  }
  if (dropped > 0) shard_->AddDroppedRecords(dropped);
  if (!finished.empty()) {
    {
      std::lock_guard<std::mutex> lock(threads_mutex_);
      std::erase_if(threads_, [&](ThreadState* t) {
        return std::find(finished.begin(), finished.end(), t) != finished.end();
      });
    }
    for (ThreadState* thread : finished)
      delete thread;
  }
  return drained;
}

size_t Recorder::DrainCupti() {
  std::vector<Completed> buffers;
  {
    std::lock_guard<std::mutex> lock(completed_mutex_);
    if (completed_.empty()) return 0;
    buffers.assign(completed_.begin(), completed_.end());
    completed_.clear();
  }
  size_t written = 0;
  for (const Completed& done : buffers) {
    decoded_.Clear();
    decoder_.Decode(done.buffer, done.valid_size, &decoded_);
    for (const DeviceActivity& a : decoded_.activities)
      shard_->Add(a);
    for (const Launch& l : decoded_.launches)
      shard_->Add(l);
    for (const MemoryEvent& m : decoded_.memory)
      shard_->Add(m);
    for (const TraceRange& r : decoded_.markers)
      shard_->Add(r);
    written += decoded_.activities.size() + decoded_.launches.size() + decoded_.memory.size() +
               decoded_.markers.size();
    std::lock_guard<std::mutex> lock(pool_mutex_);
    free_buffers_.push_back(done.buffer);  // reserved: cannot allocate
  }
  return written;
}

void Recorder::FlushShard() {
  const int64_t dropped = cupti_dropped_.exchange(0, std::memory_order_relaxed);
  if (dropped > 0) shard_->AddDroppedRecords(dropped);
  const Status status = shard_->Flush();
  pending_records_ = 0;
  if (!status.ok() && !warned_write_) {
    // Once: a full disk would otherwise print a line per second. Later batches are still tried
    // (and dropped by the writer on failure, so memory stays bounded).
    warned_write_ = true;
    WriteWarning("writing shard " + shard_path_ + " failed (" + status.message() +
                 "): records are being dropped");
  }
}

void Recorder::Shutdown() {
  if (!active_ || shutdown_.exchange(true)) return;
  // Forced: also the buffers CUPTI is still filling. On this thread and before stopping the
  // writer, which then drains what this delivered.
  if (cupti_active()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  stop_.store(true, std::memory_order_release);
  Wake();
  if (!writer_started_) return;
  const int64_t limit_ms = std::max<int64_t>(0, EnvInt64("ZBKIT_EXIT_FLUSH_MS", 10000));
  timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += limit_ms / 1000;
  deadline.tv_nsec += (limit_ms % 1000) * 1000000;
  if (deadline.tv_nsec >= 1000000000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1000000000;
  }
  // Bounded: a writer stuck behind a lock some exiting thread holds must not hang the exit.
  if (pthread_timedjoin_np(writer_, nullptr, &deadline) != 0) {
    WriteWarning("the final flush of " + shard_path_ + " timed out: the shard may miss the end");
    return;
  }
  // The writer is gone and nothing else touches the shard: close it, which checkpoints the WAL
  // into the file and removes the -wal/-shm companions (a shard copied alone is then complete).
  shard_.reset();
}

// ---- fork() -----------------------------------------------------------------------------------
// The child of a fork() has only the forking thread: the writer thread, the other threads' rings
// and any lock they held are gone. So the child abandons the parent's Recorder (leaked on
// purpose: its ShardWriter belongs to the parent's connection, its mutexes may be held) and
// creates its own on its next event, with a pid shard. The interning tables survive (ids and
// registered-string handles stay valid), which is why their mutexes are held across fork().

void Recorder::PrepareFork() {
  pthread_mutex_lock(&g_create_mutex);
  Names().LockForFork();
  Domains().LockForFork();
}

void Recorder::ParentAfterFork() {
  Domains().UnlockAfterFork();
  Names().UnlockAfterFork();
  pthread_mutex_unlock(&g_create_mutex);
}

void Recorder::ChildAfterFork() {
  Domains().UnlockAfterFork();
  Names().UnlockAfterFork();
  g_forked_child = true;
  if (Recorder* parent = g_recorder.exchange(nullptr)) {
    // The parent holds the rank claim; the child's copy of the descriptor would keep it alive
    // after the parent exits.
    // The descriptors are reset too: the child may reuse the numbers, and a stale Wake() must
    // not write into someone else's file.
    if (parent->rank_lock_fd_ >= 0) ::close(parent->rank_lock_fd_);
    if (parent->wake_fd_ >= 0) ::close(parent->wake_fd_);
    parent->rank_lock_fd_ = -1;
    parent->wake_fd_ = -1;
  }
  ForgetThreadStateAfterFork();
  pthread_mutex_unlock(&g_create_mutex);
}

}  // namespace zb::profiler::inject
