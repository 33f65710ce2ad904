/* SPDX-License-Identifier: Apache-2.0 */
/* libzbrt: the zbkit runtime's C ABI, for trainers that replay a zbkit schedule and record what
 * really happened (Python through ctypes, C and C++ directly).
 *
 *  - Open a schedule (from a zbkit store or a zb-schedule/1 file) and query it: ranks, chunks,
 *    microbatches, placement, each rank's stages and ordered ops with their predicted times.
 *  - Record a replay, one recorder per rank: op begin/end marks (with an NVTX range named
 *    `zb:<kind>:s<stage>:mb<mb>` in CUDA builds, so zbkit's profiler attributes them), iteration
 *    marks and memory samples; closing the recorder writes the rank's shard (the profiler's
 *    per-process shard format, profiler/shard.sql).
 *  - Merge every rank's shard into one run of kind "replay" in the store, linked to the schedule.
 *
 * Conventions (runtime/README.md has the details):
 *  - Plain C: opaque handles, fixed-width integers, no C++ types. Every function except
 *    zbrt_abi_version(), zbrt_last_error(), zbrt_status_name() and zbrt_now_ns() returns a
 *    zbrt_status; on failure zbrt_last_error() gives a one-line message, per thread, until that
 *    thread's next failing call. Nothing throws, aborts or prints.
 *  - Versioning: ZBRT_ABI_VERSION is the SOVERSION of libzbrt.so. Adding functions or enum values
 *    keeps it; changing or removing anything (a signature, a struct layout, a meaning) bumps it.
 *    Check zbrt_abi_version() == ZBRT_ABI_VERSION after loading the library.
 *  - Times are int64 nanoseconds. Marks read CLOCK_REALTIME (one clock for every process on a
 *    host, and the clock of the profiler's shards).
 *  - Thread safety: a schedule handle is immutable once open and may be queried from any threads;
 *    a recorder is used by one thread at a time (one recorder per rank, typically per process).
 */
#ifndef ZBRT_H_
#define ZBRT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZBRT_ABI_VERSION 1

#if defined(ZBRT_BUILDING_LIBRARY)
#define ZBRT_API __attribute__((visibility("default")))
#else
#define ZBRT_API
#endif

typedef enum zbrt_status {
  ZBRT_OK = 0,
  ZBRT_ERROR_INVALID_ARGUMENT = 1, /* a null handle or pointer, a bad string */
  ZBRT_ERROR_OUT_OF_RANGE = 2,     /* a rank or op index outside the schedule */
  ZBRT_ERROR_STATE = 3,            /* a call out of order: op end without begin, begun twice */
  ZBRT_ERROR_NOT_FOUND = 4,        /* a file, store or schedule id that does not exist */
  ZBRT_ERROR_INVALID_INPUT = 5,    /* a malformed schedule file, shard or store record */
  ZBRT_ERROR_IO = 6,               /* reading or writing a file failed */
  ZBRT_ERROR_STORE = 7,            /* the SQLite store failed */
  ZBRT_ERROR_INTERNAL = 8          /* a bug in libzbrt, or out of memory */
} zbrt_status;

typedef enum zbrt_op_kind {
  ZBRT_OP_F = 0, /* forward */
  ZBRT_OP_B = 1, /* gradient w.r.t. the stage input */
  ZBRT_OP_W = 2, /* gradient w.r.t. the weights */
  ZBRT_OP_BW = 3 /* B and W fused */
} zbrt_op_kind;

typedef enum zbrt_placement {
  ZBRT_PLACEMENT_LOOP = 0, /* stage s on rank s mod p */
  ZBRT_PLACEMENT_V = 1     /* v = 2: rank r holds stages r and 2p-1-r */
} zbrt_placement;

/* One op of a rank's program. Layout is part of the ABI. */
typedef struct zbrt_op {
  int32_t kind;       /* zbrt_op_kind */
  int32_t stage;      /* global stage id */
  int32_t microbatch; /* 0 .. m-1 */
  int32_t chunk;      /* local chunk on the rank: index into the rank's stages */
  int64_t start_ns;   /* predicted start, 0 when the schedule carries no times */
  int64_t end_ns;     /* predicted end */
} zbrt_op;

typedef struct zbrt_schedule zbrt_schedule;
typedef struct zbrt_recorder zbrt_recorder;

/* ---- Library --------------------------------------------------------------------------------*/

/* The ABI version the library was built with (compare with ZBRT_ABI_VERSION). */
ZBRT_API int32_t zbrt_abi_version(void);
/* The message of this thread's last failing call, "" if none. Valid until this thread's next
 * failing call. */
ZBRT_API const char* zbrt_last_error(void);
/* "ZBRT_OK", "ZBRT_ERROR_NOT_FOUND", ...; "ZBRT_ERROR_UNKNOWN" for other values. */
ZBRT_API const char* zbrt_status_name(int32_t status);
/* CLOCK_REALTIME now, the clock of every mark. */
ZBRT_API int64_t zbrt_now_ns(void);

/* ---- Schedules ------------------------------------------------------------------------------*/

/* A zb-schedule/1 file (as `zb tune --out` writes it). */
ZBRT_API zbrt_status zbrt_schedule_open_file(const char* path, zbrt_schedule** out);
/* Schedule `schedule_id` of the zbkit store at `store_path` (opened read-only). */
ZBRT_API zbrt_status zbrt_schedule_open_store(const char* store_path, int64_t schedule_id,
                                              zbrt_schedule** out);
/* Frees the handle; null is accepted. Recorders opened from it stay valid (they copy what they
 * need). */
ZBRT_API zbrt_status zbrt_schedule_close(zbrt_schedule* schedule);

ZBRT_API zbrt_status zbrt_schedule_ranks(const zbrt_schedule* schedule, int32_t* out);
ZBRT_API zbrt_status zbrt_schedule_microbatches(const zbrt_schedule* schedule, int32_t* out);
ZBRT_API zbrt_status zbrt_schedule_chunks(const zbrt_schedule* schedule, int32_t* out);
/* zbrt_placement */
ZBRT_API zbrt_status zbrt_schedule_placement(const zbrt_schedule* schedule, int32_t* out);
/* The generator's name ("zb-h1", "zb-v", ...; "" if unknown). The string lives as long as the
 * handle. */
ZBRT_API zbrt_status zbrt_schedule_family(const zbrt_schedule* schedule, const char** out);
/* The store's schedule id, or -1 when opened from a file. */
ZBRT_API zbrt_status zbrt_schedule_id(const zbrt_schedule* schedule, int64_t* out);
/* Predicted makespan; *has_prediction = 0 (and *out = 0) when the schedule carries none. */
ZBRT_API zbrt_status zbrt_schedule_makespan_ns(const zbrt_schedule* schedule, int64_t* out,
                                               int32_t* has_prediction);

/* Global stage ids of `rank` by local chunk: writes min(capacity, chunks) of them to `stages`
 * (may be null when capacity is 0) and the rank's chunk count to *count. */
ZBRT_API zbrt_status zbrt_rank_stages(const zbrt_schedule* schedule, int32_t rank, int32_t* stages,
                                      int32_t capacity, int32_t* count);
ZBRT_API zbrt_status zbrt_rank_op_count(const zbrt_schedule* schedule, int32_t rank, int64_t* out);
/* Op `index` (execution order) of `rank`. */
ZBRT_API zbrt_status zbrt_rank_op(const zbrt_schedule* schedule, int32_t rank, int64_t index,
                                  zbrt_op* out);

/* ---- Recording a replay ---------------------------------------------------------------------*/

/* A recorder for `rank` of `schedule`; its shard is written to `shard_path` at close (created or
 * replaced; name it "<dir>/rank<R>.zbshard" to keep the profiler's convention). Memory for one
 * iteration's marks is allocated here, so marks do not allocate. */
ZBRT_API zbrt_status zbrt_recorder_open(const zbrt_schedule* schedule, int32_t rank,
                                        const char* shard_path, zbrt_recorder** out);
/* Marks the begin / end of op `op_index` of the recorder's rank (zbrt_rank_op order) now. An op
 * may run again only after its end (next iteration). */
ZBRT_API zbrt_status zbrt_op_begin(zbrt_recorder* recorder, int64_t op_index);
ZBRT_API zbrt_status zbrt_op_end(zbrt_recorder* recorder, int64_t op_index);
/* Records op `op_index` as having run from begin_ns to end_ns, times on zbrt_now_ns's clock, for
 * an op timed by something else than this call (an emulated device, a GPU's events): the op must
 * not be open, 0 <= begin_ns <= end_ns. No NVTX range. Added to ABI version 1 after its release
 * (a library without it lacks the symbol; nothing else changed). */
ZBRT_API zbrt_status zbrt_op_record(zbrt_recorder* recorder, int64_t op_index, int64_t begin_ns,
                                    int64_t end_ns);
/* Iteration `iteration` (a training step) begins / the open one ends. Optional; they become
 * `zb:iter:<n>` ranges, which the profiler uses to split iterations. The range-name contract
 * holds iteration numbers in 32 bits: `iteration` must be in 0..INT32_MAX
 * (ZBRT_ERROR_OUT_OF_RANGE otherwise; the parameter is 64-bit for ABI version 1's sake). */
ZBRT_API zbrt_status zbrt_iteration_begin(zbrt_recorder* recorder, int64_t iteration);
ZBRT_API zbrt_status zbrt_iteration_end(zbrt_recorder* recorder);
/* A sample: `bytes` of memory held on the rank from now on. */
ZBRT_API zbrt_status zbrt_record_memory(zbrt_recorder* recorder, int64_t bytes);
/* Writes the shard and frees the recorder (also when writing fails; null is accepted). Ops still
 * open are not written; that is an error (ZBRT_ERROR_STATE) after the shard is written. */
ZBRT_API zbrt_status zbrt_recorder_close(zbrt_recorder* recorder);

/* ---- Merging ---------------------------------------------------------------------------------*/

/* Reads every rank's shard and stores one run of kind "replay" of schedule `schedule_id` (its
 * job), with its measured timeline (every recorded op, t = 0 at the first record; memory samples),
 * in the store at `store_path`. `shards` is a directory (every *.zbshard in it) or shard files
 * separated by ':'. `command` is recorded with the run (may be null). */
ZBRT_API zbrt_status zbrt_merge_run(const char* store_path, int64_t schedule_id, const char* shards,
                                    const char* command, int64_t* run_id);

#ifdef __cplusplus
}
#endif

#endif /* ZBRT_H_ */
