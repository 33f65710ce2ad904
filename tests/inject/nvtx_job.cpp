// SPDX-License-Identifier: Apache-2.0
// A CPU-only stand-in for a pipeline-parallel training job, for testing the injection library
// without a GPU. It uses only the nvtx3 headers, like any application; the tool comes in through
// NVTX_INJECTION64_PATH.
//
//   nvtx_job [--workers N] [--iters I] [--microbatches M] [--forever] [--fork-child]
//            [--simulate-driver] [--own-sigterm] [--exit-code C] [--truth PATH]
//            [--open-thread-ranges] [--burst N] [--crash segv|abort|bus|kill]
//
// With --workers N > 0 and no RANK in the environment it is the launcher (like torchrun): it
// fork+execs itself N times with RANK=r, LOCAL_RANK=r, WORLD_SIZE=N added to its environment,
// waits, and prints one line per worker. It makes no NVTX call itself. Otherwise it is one
// worker (rank = RANK, else 0) emitting the ZB fork's names (B8): `iter_{rank}_{iter}` around
// `F{mb}.0.0`, a registered-string range "ncclSend" in domain "NCCL", then `B{mb}.0.0` and
// `W{mb}.0.0`, each busy for the durations of nvtx_job_plan.h; an auxiliary thread adds nested
// ranges and ends a start/end range the main thread started.
//
//   --forever          keep iterating until killed (the SIGTERM test)
//   --fork-child       after the iterations fork a child that records its own ranges and exits
//   --simulate-driver  do what the CUDA driver does at cuInit: dlopen CUDA_INJECTION64_PATH and
//                      call its InitializeInjection (twice: it must be idempotent)
//   --own-sigterm      install a SIGTERM handler that prints a line and exits with 143
//   --exit-code C      the launcher's (or single worker's) exit status on success
//   --open-thread-ranges  first a thread pushes three ranges, closes one and ends with two open
//   --burst N          after the iterations, N empty push/pop pairs as fast as it can (to overflow
//                      a small ring: ZBKIT_RING_EVENTS)
//   --crash KIND       after the iterations, inside an open range "crash_site": a null-pointer
//                      write (segv), abort(), raise(SIGBUS) or raise(SIGKILL)
//   --truth PATH       each worker writes "<name> <ns>" per F/B/W/ncclSend range to PATH.rank<R>:
//                      how long it really was inside the range, by its own clock (on a loaded
//                      machine the planted durations stretch; this is what the profiler must see)
//
// stdout depends only on the arguments, so a run with the tool can be compared with one without.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nvtx_job_plan.h"

namespace {

using namespace zb::nvtx_job;

struct Options {
  int workers = 0;
  int iters = 3;
  int microbatches = 4;
  bool forever = false;
  bool fork_child = false;
  bool simulate_driver = false;
  bool own_sigterm = false;
  int exit_code = 0;
  std::string truth;
  bool open_thread_ranges = false;
  int burst = 0;
  std::string crash;
};

struct Measured {
  std::string name;
  int64_t ns;
};
std::vector<Measured> g_measured;
bool g_record_measured = false;  // --truth: off otherwise, --forever would grow it without end

void Spin(int64_t us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Spins for `us` inside a range that `push` opened and `pop` closes, and remembers under `name`
// how long the job really was between the two calls (push returned .. pop called): with the
// machine to itself that is `us`, preempted it is more, and either way it is what the range must
// measure. Remembered after the pop, so that the bookkeeping stays outside the range.
template <typename Push, typename Pop>
void BusyRange(const std::string& name, int64_t us, Push push, Pop pop) {
  push();
  const auto start = std::chrono::steady_clock::now();
  Spin(us);
  const auto end = std::chrono::steady_clock::now();
  pop();
  if (g_record_measured) {
    g_measured.push_back(
        {name, std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()});
  }
}

// A fresh heap string per call, like Python's f-strings: the tool must key names by content.
void Push(const std::string& name) {
  nvtxRangePushA(name.c_str());
}

void SimulateDriver() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr) return;
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return;
  auto init = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  if (init == nullptr) return;
  init();
  init();
}

extern "C" void OnSigterm(int) {
  static const char kLine[] = "nvtx_job: SIGTERM handled by the job\n";
  ssize_t ignored = write(STDOUT_FILENO, kLine, sizeof(kLine) - 1);
  (void)ignored;
  _exit(143);
}

int64_t Iteration(int rank, int iter, int microbatches, nvtxDomainHandle_t nccl,
                  nvtxStringHandle_t send) {
  int64_t ranges = 0;
  Push("iter_" + std::to_string(rank) + "_" + std::to_string(iter));
  const auto pop = [] { nvtxRangePop(); };
  for (int mb = 0; mb < microbatches; ++mb) {
    const std::string forward = "F" + std::to_string(mb) + ".0.0";
    BusyRange(
        forward, ForwardUs(rank), [&] { Push(forward); }, pop);
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attributes.message.registered = send;
    BusyRange(
        "ncclSend", kSendUs, [&] { nvtxDomainRangePushEx(nccl, &attributes); },
        [&] { nvtxDomainRangePop(nccl); });
    ranges += 2;
  }
  for (int mb = 0; mb < microbatches; ++mb) {
    const std::string backward = "B" + std::to_string(mb) + ".0.0";
    BusyRange(
        backward, BackwardUs(rank), [&] { Push(backward); }, pop);
    const std::string weight = "W" + std::to_string(mb) + ".0.0";
    BusyRange(
        weight, WeightUs(rank), [&] { Push(weight); }, pop);
    ranges += 2;
  }
  nvtxRangePop();
  return ranges + 1;
}

int Worker(const Options& options, int rank) {
  g_record_measured = !options.truth.empty();
  if (options.own_sigterm) signal(SIGTERM, OnSigterm);
  if (options.simulate_driver) SimulateDriver();
  nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  nvtxStringHandle_t send = nvtxDomainRegisterStringA(nccl, "ncclSend");
  int64_t ranges = 0;

  // A start/end range opened here and closed by the auxiliary thread, which also nests its own.
  const nvtxRangeId_t handoff = nvtxRangeStartA(("handoff_" + std::to_string(rank)).c_str());
  std::thread aux([handoff] {
    nvtxRangePushA("aux_outer");
    Spin(kAuxUs);
    nvtxRangePushA("aux_inner");
    Spin(kAuxUs);
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangeEnd(handoff);
  });
  aux.join();
  ranges += 3;

  nvtxRangePushW(L"unicode_\u00b5");
  nvtxRangePop();
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = "attributes_ascii";
  nvtxRangePushEx(&attributes);
  nvtxMarkA("mark");
  nvtxRangePop();
  ranges += 3;

  if (options.open_thread_ranges) {
    std::thread leaver([] {
      nvtxRangePushA("left_open_outer");
      nvtxRangePushA("closed_inside");
      nvtxRangePop();
      nvtxRangePushA("left_open_inner");
    });  // the thread ends with two ranges open
    leaver.join();
    ranges += 1;
  }

  for (int iter = 0; options.forever || iter < options.iters; ++iter) {
    ranges += Iteration(rank, iter, options.microbatches, nccl, send);
  }

  for (int i = 0; i < options.burst; ++i) {
    nvtxRangePushA("burst");
    nvtxRangePop();
  }
  if (!options.crash.empty()) {
    std::fflush(stdout);
    nvtxRangePushA("crash_site");
    if (options.crash == "segv") {
      volatile int* nowhere = nullptr;
      *nowhere = 1;
    } else if (options.crash == "abort") {
      std::abort();
    } else if (options.crash == "bus") {
      raise(SIGBUS);
    } else if (options.crash == "kill") {
      raise(SIGKILL);
    }
    std::fprintf(stderr, "nvtx_job: unknown --crash %s\n", options.crash.c_str());
    return 2;
  }

  if (options.fork_child) {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      for (int k = 0; k < kForkChildRanges; ++k) {
        Push("child_" + std::to_string(k));
        Spin(1000);
        nvtxRangePop();
      }
      std::exit(0);  // a normal exit: the child's own shard is flushed at exit
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (options.workers == 0) {
      std::printf("fork child: %s\n",
                  WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "exit 0" : "failed");
    }
    // The parent records after the fork too: its shard must get these, not the child's.
    Push("after_fork");
    nvtxRangePop();
    ranges += 1;
  }
  if (!options.truth.empty()) {
    const std::string path = options.truth + ".rank" + std::to_string(rank);
    if (std::FILE* file = std::fopen(path.c_str(), "w")) {
      for (const Measured& m : g_measured) {
        std::fprintf(file, "%s %lld\n", m.name.c_str(), static_cast<long long>(m.ns));
      }
      std::fclose(file);
    }
  }
  if (options.workers == 0) std::printf("rank %d: %lld ranges\n", rank, (long long)ranges);
  return options.exit_code;
}

int Launcher(const Options& options, char** argv) {
  std::printf("launcher: %d workers, %d iterations, %d microbatches\n", options.workers,
              options.iters, options.microbatches);
  for (int r = 0; r < options.workers; ++r) {
    std::printf("stage %d: F %lld us, B %lld us, W %lld us\n", r, (long long)ForwardUs(r),
                (long long)BackwardUs(r), (long long)WeightUs(r));
  }
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int r = 0; r < options.workers; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string rank = std::to_string(r);
      setenv("RANK", rank.c_str(), 1);
      setenv("LOCAL_RANK", rank.c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(options.workers).c_str(), 1);
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    children.push_back(pid);
  }
  bool ok = true;
  for (int r = 0; r < options.workers; ++r) {
    int status = 0;
    waitpid(children[r], &status, 0);
    const bool worker_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::printf("worker %d: %s\n", r, worker_ok ? "ok" : "failed");
    ok = ok && worker_ok;
  }
  return ok ? options.exit_code : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (arg == "--workers") {
      options.workers = next();
    } else if (arg == "--iters") {
      options.iters = next();
    } else if (arg == "--microbatches") {
      options.microbatches = next();
    } else if (arg == "--forever") {
      options.forever = true;
    } else if (arg == "--fork-child") {
      options.fork_child = true;
    } else if (arg == "--simulate-driver") {
      options.simulate_driver = true;
    } else if (arg == "--own-sigterm") {
      options.own_sigterm = true;
    } else if (arg == "--exit-code") {
      options.exit_code = next();
    } else if (arg == "--open-thread-ranges") {
      options.open_thread_ranges = true;
    } else if (arg == "--burst") {
      options.burst = next();
    } else if (arg == "--crash" && i + 1 < argc) {
      options.crash = argv[++i];
    } else if (arg == "--truth" && i + 1 < argc) {
      options.truth = argv[++i];
    } else {
      std::fprintf(stderr, "nvtx_job: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  const char* rank = std::getenv("RANK");
  if (rank == nullptr && options.workers > 0) return Launcher(options, argv);
  // A launched worker prints nothing (the launcher reports for it, so that stdout does not
  // depend on scheduling) and exits 0 on success.
  if (rank != nullptr && options.workers > 0) {
    Options worker = options;
    worker.exit_code = 0;
    return Worker(worker, std::atoi(rank));
  }
  return Worker(options, rank != nullptr ? std::atoi(rank) : 0);
}
