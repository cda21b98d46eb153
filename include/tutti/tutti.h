/* tutti: a collective communication library (NCCL-shaped C API).
 *
 * Every function returns a tuttiResult_t and never throws. Collective buffers may be
 * host memory (always) or CUDA device memory (when built with CUDA); tuttiSend/tuttiRecv
 * and tuttiAllReduceCompressed take host memory only. Calls on one communicator must be
 * made in the same order on every rank, as with NCCL. */
#ifndef TUTTI_TUTTI_H_
#define TUTTI_TUTTI_H_

#include <stddef.h>
#include <stdint.h>

#include "tutti/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TUTTI_MAJOR 0
#define TUTTI_MINOR 1
#define TUTTI_PATCH 0
#define TUTTI_VERSION_CODE (TUTTI_MAJOR * 10000 + TUTTI_MINOR * 100 + TUTTI_PATCH)

typedef enum {
  tuttiSuccess = 0,
  tuttiSystemError = 1,     /* a system call failed (errno text in the message) */
  tuttiInternalError = 2,   /* a bug in tutti */
  tuttiInvalidArgument = 3, /* a bad argument (null pointer, bad count, bad rank, ...) */
  tuttiInvalidUsage = 4,    /* the call sequence is wrong (mismatched calls, wrong state) */
  tuttiRemoteError = 5,     /* a peer failed, closed its connection or died */
  tuttiTimeout = 6,         /* a peer did not answer within TUTTI_TIMEOUT */
  tuttiInProgress = 7,      /* a non-blocking operation has not finished yet */
  tuttiUnsupported = 8,     /* not supported by this build or this machine */
  tuttiNumResults = 9
} tuttiResult_t;

typedef enum {
  tuttiInt8 = 0,
  tuttiChar = 0,
  tuttiUint8 = 1,
  tuttiInt32 = 2,
  tuttiInt = 2,
  tuttiUint32 = 3,
  tuttiInt64 = 4,
  tuttiUint64 = 5,
  tuttiFloat16 = 6,
  tuttiHalf = 6,
  tuttiFloat32 = 7,
  tuttiFloat = 7,
  tuttiFloat64 = 8,
  tuttiDouble = 8,
  tuttiBfloat16 = 9,
  tuttiInt16 = 10, /* int16 and uint16: tutti additions (as Gloo's), after NCCL's values */
  tuttiUint16 = 11,
  tuttiNumTypes = 12
} tuttiDataType_t;

/* Integer sum and prod wrap modulo 2^bits; avg divides the sum by the rank count (integers
 * truncate). The bitwise ops (band, bor, bxor, as Gloo's) apply to the integer types only: a
 * floating type (half, bfloat16, float, double) with a bitwise op is tuttiInvalidArgument, the
 * message naming both. */
typedef enum {
  tuttiSum = 0,
  tuttiProd = 1,
  tuttiMax = 2,
  tuttiMin = 3,
  tuttiAvg = 4,
  tuttiBand = 5, /* bitwise and */
  tuttiBor = 6,  /* bitwise or */
  tuttiBxor = 7, /* bitwise exclusive or */
  tuttiNumOps = 8
} tuttiRedOp_t;

/* Opaque communicator handle. */
typedef struct tuttiComm* tuttiComm_t;

/* A stream: NULL (the call blocks until done), a host stream from tuttiStreamCreate (the call
 * is checked, enqueued and returns at once; see "Host streams" below), or a cudaStream_t for
 * device buffers (ignored for host buffers). */
typedef void* tuttiStream_t;

/* Opaque event handle: a position in a host stream (tuttiEventRecord). */
typedef struct tuttiEvent* tuttiEvent_t;

#define TUTTI_UNIQUE_ID_BYTES 128
/* Produced by tuttiGetUniqueId on one rank and passed to every rank out of band.
 * Carries the rendezvous address and a random 128-bit secret. */
typedef struct {
  char internal[TUTTI_UNIQUE_ID_BYTES];
} tuttiUniqueId;

#define TUTTI_CONFIG_MAGIC 0x74757474u /* "tutt" */
#define TUTTI_CONFIG_VERSION 1
#define TUTTI_CONFIG_UNDEF_INT (-2147483647 - 1)

/* Size- and version-tagged configuration. Always initialise with TUTTI_CONFIG_INITIALIZER;
 * fields left undefined take their value from the environment, then from the default. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;          /* 1: init blocks until the communicator is ready (default) */
  int timeoutMs;         /* deadline of every wait; TUTTI_TIMEOUT (seconds) otherwise */
  int deterministic;     /* 1: bitwise reproducible reductions (TUTTI_DETERMINISTIC) */
  const char* algo;      /* e.g. "allreduce:ring;broadcast:tree" (TUTTI_ALGO); NULL: automatic */
  const char* transport; /* force one transport: "shm", "tcp", ... (TUTTI_TRANSPORT) */
  const char* commName;  /* shows in log lines */
} tuttiConfig_t;

#define TUTTI_CONFIG_INITIALIZER                                                             \
  {                                                                                          \
    sizeof(tuttiConfig_t), TUTTI_CONFIG_MAGIC, TUTTI_CONFIG_VERSION, TUTTI_CONFIG_UNDEF_INT, \
        TUTTI_CONFIG_UNDEF_INT, TUTTI_CONFIG_UNDEF_INT, NULL, NULL, NULL                     \
  }

#define TUTTI_SPLIT_NOCOLOR (-1)

/* ---- Library ---- */
TUTTI_API const char* tuttiGetErrorString(tuttiResult_t result);
/* The message of the last error on this communicator (or of this thread when comm is NULL). */
TUTTI_API const char* tuttiGetLastError(tuttiComm_t comm);
TUTTI_API tuttiResult_t tuttiGetVersion(int* version);

/* ---- Communicator lifecycle ---- */
TUTTI_API tuttiResult_t tuttiGetUniqueId(tuttiUniqueId* uniqueId);
TUTTI_API tuttiResult_t tuttiCommInitRank(tuttiComm_t* comm, int nranks, tuttiUniqueId commId,
                                          int rank);
TUTTI_API tuttiResult_t tuttiCommInitRankConfig(tuttiComm_t* comm, int nranks, tuttiUniqueId commId,
                                                int rank, tuttiConfig_t* config);
/* Rank, size and rendezvous address from the environment (docs/launching.md), first match:
 * TUTTI_RANK/TUTTI_WORLD_SIZE/TUTTI_ADDR (set by tuttirun); torchrun-style RANK, WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT (tutti uses MASTER_PORT + 1 or TUTTI_PORT); a PMIx server
 * (mpirun, srun --mpi=pmix; builds with PMIx): nothing to set; Open MPI (OMPI_COMM_WORLD_*)
 * with TUTTI_ADDR; Slurm (SLURM_PROCID, SLURM_NTASKS) with the address derived from the
 * step's first node and the job and step ids. */
TUTTI_API tuttiResult_t tuttiCommInitFromEnv(tuttiComm_t* comm, tuttiConfig_t* config);
/* Collective over MPI_COMM_WORLD-style handle `mpiComm` (an MPI_Comm passed by address);
 * tuttiUnsupported when built without MPI. */
TUTTI_API tuttiResult_t tuttiCommInitMPI(tuttiComm_t* comm, void* mpiComm, tuttiConfig_t* config);
/* A caller's key-value store for the rendezvous (tutti addition, in the spirit of Gloo's
 * rendezvous store and torch's c10d::Store): every rank passes an equivalent store and no
 * port is opened by tutti for the rendezvous (each rank listens on one standby socket for
 * recovery, as every communicator does: tuttiCommShrink). The callbacks may be called from any
 * thread, including after init (by tuttiCommSplit and tuttiCommDestroy), so ctx must stay valid
 * until tuttiCommDestroy returns; each returns 0 on success and non-zero on failure. Each
 * communicator needs a store (or key namespace) of its own. */
typedef struct {
  void* ctx;
  /* Stores size bytes under key (overwrites). */
  int (*set)(void* ctx, const char* key, const void* value, size_t size);
  /* Called only for a key check() reported present: hands its value to sink once. */
  int (*get)(void* ctx, const char* key,
             void (*sink)(void* sinkCtx, const void* value, size_t size), void* sinkCtx);
  /* *exists = 1 when key is present now, else 0; must not wait. */
  int (*check)(void* ctx, const char* key, int* exists);
  /* Atomically adds delta to the decimal integer at key (absent: 0); *result = new value. */
  int (*add)(void* ctx, const char* key, int64_t delta, int64_t* result);
} tuttiStore_t;
/* Blocking or not as tuttiCommInitRankConfig; a wait for a key polls check() until the
 * config's timeout (or TUTTI_TIMEOUT), and tuttiCommAbort ends it. */
TUTTI_API tuttiResult_t tuttiCommInitRankStore(tuttiComm_t* comm, int nranks, int rank,
                                               const tuttiStore_t* store, tuttiConfig_t* config);
TUTTI_API tuttiResult_t tuttiCommSplit(tuttiComm_t comm, int color, int key, tuttiComm_t* newcomm,
                                       tuttiConfig_t* config);
/* Shrink (NCCL 2.27's ncclCommShrink): the ranks of comm not in excludeRanksList build a new
 * communicator without the excluded ones, renumbered in order (the lowest becomes rank 0).
 * Collective over exactly those ranks, which must pass the same list (else tuttiInvalidUsage
 * on every one of them); the excluded ranks do not call and are never waited for, dead or
 * alive. Works on a failed communicator and when the rank serving comm's store (rank 0 of an
 * init from a unique id or the environment) is among the dead: the ranks meet at a standby
 * store of the lowest surviving rank, whose address every rank published at init
 * (docs/reliability.md). config NULL: comm's settings. shrinkFlags: TUTTI_SHRINK_DEFAULT, or
 * TUTTI_SHRINK_ABORT to abort comm first (calls in progress on other threads return an error;
 * comm then only accepts tuttiCommDestroy). Errors: tuttiInvalidArgument for a rank out of
 * range or twice in the list, all ranks excluded, or the caller in the list; tuttiRemoteError
 * naming a rank not in the list that has failed; tuttiTimeout naming a live rank that did not
 * call within the timeout. With TUTTI_SHRINK_DEFAULT comm stays as it was (usable when it
 * was healthy). Works whatever store comm was made over (a unique id, the environment, a
 * file store, a caller's store, a shrink); tuttiUnsupported only when a rank could not open
 * its standby socket at init (it warned then). */
#define TUTTI_SHRINK_DEFAULT 0x00
#define TUTTI_SHRINK_ABORT 0x01
TUTTI_API tuttiResult_t tuttiCommShrink(tuttiComm_t comm, int* excludeRanksList,
                                        int excludeRanksCount, tuttiComm_t* newcomm,
                                        tuttiConfig_t* config, int shrinkFlags);
/* Agreement on the failed ranks (in the spirit of MPI ULFM's MPI_Comm_agree over the failed
 * group): collective over the ranks of comm that are alive, on a healthy or a failed comm.
 * failedRanks (room for comm's size) receives the failed ranks in ascending order and
 * *failedCount their number. Every rank that returns tuttiSuccess gets the same list: the
 * lowest live rank collects every rank's call and decides; a rank counts as failed when it
 * did not take part and its standby address refuses connections or does not answer within
 * 2 s (a process that died; a host that is gone). A rank that is alive but does not call
 * within the timeout is a tuttiTimeout naming it. A rank that fails during the call may
 * leave the others with an error instead of a list. Then pass the list to tuttiCommShrink. */
TUTTI_API tuttiResult_t tuttiCommAgreeFailedRanks(tuttiComm_t comm, int* failedRanks,
                                                  int* failedCount);
/* Non-blocking; may be called from any thread; unblocks any call in progress on comm,
 * which then returns an error. The handle must still be freed with tuttiCommDestroy. */
TUTTI_API tuttiResult_t tuttiCommAbort(tuttiComm_t comm);
/* Frees the handle and everything it holds, always. On a healthy communicator it waits
 * (bounded) until every rank is done with the rendezvous store. After a call on comm failed
 * because a peer died or did not answer (tuttiRemoteError, tuttiTimeout) it returns at once
 * without waiting for the other ranks, and returns that original code (the cause is in
 * tuttiGetLastError(NULL)) unless tuttiCommAbort was called first. */
TUTTI_API tuttiResult_t tuttiCommDestroy(tuttiComm_t comm);
/* tuttiInProgress while a non-blocking init runs, its result after; then the communicator's
 * first failure (tuttiRemoteError, tuttiTimeout), if any. */
TUTTI_API tuttiResult_t tuttiCommGetAsyncError(tuttiComm_t comm, tuttiResult_t* asyncError);
TUTTI_API tuttiResult_t tuttiCommCount(const tuttiComm_t comm, int* count);
TUTTI_API tuttiResult_t tuttiCommUserRank(const tuttiComm_t comm, int* rank);

/* ---- Collectives ---- */
/* Buffers may overlap only in place: sendbuff == recvbuff for all-reduce, broadcast, reduce
 * and all-to-all; sendbuff == recvbuff + rank*sendcount elements for all-gather; recvbuff ==
 * sendbuff + rank*recvcount elements for reduce-scatter. Any other overlap is
 * tuttiInvalidArgument, before anything moves. */
/* Device buffers are staged through pinned host memory (the host waits for stream once per
 * call). With TUTTI_CUDA_DIRECT=1 an all-reduce of device buffers whose ranks all share one
 * host runs on the device instead: enqueued on stream, returning without a host
 * synchronisation; a failure found afterwards (a dead or stalled peer) shows in
 * tuttiCommGetAsyncError and fails the next call (docs/cuda.md). */
TUTTI_API tuttiResult_t tuttiAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       tuttiDataType_t datatype, tuttiRedOp_t op, tuttiComm_t comm,
                                       tuttiStream_t stream);
TUTTI_API tuttiResult_t tuttiBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                       tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                       tuttiStream_t stream);
TUTTI_API tuttiResult_t tuttiReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    tuttiDataType_t datatype, tuttiRedOp_t op, int root,
                                    tuttiComm_t comm, tuttiStream_t stream);
/* sendcount elements from each rank; recvbuff holds nranks*sendcount. */
TUTTI_API tuttiResult_t tuttiAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                       tuttiDataType_t datatype, tuttiComm_t comm,
                                       tuttiStream_t stream);
/* sendbuff holds nranks*recvcount; each rank gets its reduced block of recvcount. */
TUTTI_API tuttiResult_t tuttiReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           tuttiDataType_t datatype, tuttiRedOp_t op,
                                           tuttiComm_t comm, tuttiStream_t stream);
/* count elements to and from each rank (buffers hold nranks*count). */
TUTTI_API tuttiResult_t tuttiAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                                      tuttiDataType_t datatype, tuttiComm_t comm,
                                      tuttiStream_t stream);
TUTTI_API tuttiResult_t tuttiBarrier(tuttiComm_t comm, tuttiStream_t stream);

/* Uneven collectives (MPI-shaped; tutti additions). Counts and displacements are in
 * elements of datatype; the displacement of a zero-count block is not used. Each is a
 * collective of the algorithm registry ("linear": one round in which every pair the
 * call connects exchanges its non-empty blocks, plus a local copy of the rank's own block;
 * TUTTI_ALGO=allgatherv:linear etc.). Every rank passes the counts (and displacements) arrays of
 * the call, the same on every rank where the signature says so; inside tuttiGroupStart/End a call
 * is recorded (its arrays copied) and runs at tuttiGroupEnd, in call order with the group's other
 * collectives and before the group's tuttiSend/tuttiRecv. Receive bytes outside the blocks a call
 * writes are left untouched; receive blocks that overlap (non-empty ones, e.g. every displacement
 * 0) are tuttiInvalidArgument, as no element can hold two ranks' data. A send range that overlaps
 * the receive range other than as the call's in-place layout is copied to a temporary first. Device
 * (CUDA) buffers take the staged path of the other collectives (copied through pinned host memory,
 * synchronising the host with stream); stream is ignored for host buffers. Counts must agree
 * between ranks (the elements rank a sends to rank b equal those b expects from a); where they do
 * not, the call fails: tuttiInvalidUsage naming the size mismatch (or the ranks' different calls),
 * or, where one side's block is empty, the error of a wait that makes no progress (tuttiTimeout
 * naming the peer) instead of a hang.
 *
 * All-gather with per-rank counts: recvbuff on every rank gets rank r's sendcount_r elements at
 * element offset displs[r]. recvcounts[r] must equal rank r's sendcount (checked for the
 * calling rank). In place: sendbuff == recvbuff + displs[rank] * sizeof(datatype). */
TUTTI_API tuttiResult_t tuttiAllGatherV(const void* sendbuff, size_t sendcount, void* recvbuff,
                                        const size_t* recvcounts, const size_t* displs,
                                        tuttiDataType_t datatype, tuttiComm_t comm,
                                        tuttiStream_t stream);
/* Reduce-scatter with per-rank counts: sendbuff holds every rank's block, block r of
 * recvcounts[r] elements at offset displs[r]; rank r receives the reduction of block r over all
 * ranks (recvcounts[r] elements) in recvbuff. In place: recvbuff == sendbuff + displs[rank] *
 * sizeof(datatype). Reduced in rank order (((x0 op x1) op x2) ...), deterministic whatever
 * the rank count or TUTTI_DETERMINISTIC. */
TUTTI_API tuttiResult_t tuttiReduceScatterV(const void* sendbuff, void* recvbuff,
                                            const size_t* recvcounts, const size_t* displs,
                                            tuttiDataType_t datatype, tuttiRedOp_t op,
                                            tuttiComm_t comm, tuttiStream_t stream);
/* Gather with per-rank counts: the root receives rank r's sendcount_r elements at element
 * offset displs[r] of recvbuff (ignored, may be NULL, on other ranks). Every rank passes
 * recvcounts and displs (recvcounts[r] must equal rank r's sendcount; checked for the calling
 * rank). In place on the root: sendbuff == recvbuff + displs[root] * sizeof(datatype). */
TUTTI_API tuttiResult_t tuttiGatherV(const void* sendbuff, size_t sendcount, void* recvbuff,
                                     const size_t* recvcounts, const size_t* displs,
                                     tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                     tuttiStream_t stream);
/* Scatter with per-rank counts: rank r receives sendcounts[r] elements from offset displs[r] of
 * the root's sendbuff (ignored, may be NULL, on other ranks) in recvbuff. Every rank passes
 * sendcounts and displs (sendcounts[rank] must equal recvcount). In place on the root:
 * recvbuff == sendbuff + displs[root] * sizeof(datatype). */
TUTTI_API tuttiResult_t tuttiScatterV(const void* sendbuff, const size_t* sendcounts,
                                      const size_t* displs, void* recvbuff, size_t recvcount,
                                      tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                      tuttiStream_t stream);
/* All-to-all with per-peer counts: sendcounts[j] elements from sdispls[j] go to rank j;
 * recvcounts[j] elements from rank j land at rdispls[j]. sendcounts[j] on rank i must equal
 * recvcounts[i] on rank j. A send range overlapping the receive range (e.g. sendbuff ==
 * recvbuff) is allowed: the send data is copied to a temporary first. Algorithms: "linear"
 * (one round), and "hier" across hosts (the host's ranks exchange their sendcounts first; forced
 * with TUTTI_ALGO=alltoallv:hier, docs/algorithms.md). */
TUTTI_API tuttiResult_t tuttiAllToAllV(const void* sendbuff, const size_t* sendcounts,
                                       const size_t* sdispls, void* recvbuff,
                                       const size_t* recvcounts, const size_t* rdispls,
                                       tuttiDataType_t datatype, tuttiComm_t comm,
                                       tuttiStream_t stream);
/* Rooted collectives (MPI-shaped; tutti additions), scheduled like the collectives above (an
 * algorithm of the registry: "linear" or "binomial", chosen automatically (the cost model,
 * refined by measurement: docs/tuning.md) or forced with TUTTI_ALGO=gather:NAME / scatter:NAME).
 * Gather: root receives nranks*count elements in recvbuff, rank r's count at offset r*count;
 * recvbuff is ignored (may be NULL) on other ranks. In place on the root: sendbuff == recvbuff +
 * root*count*sizeof(datatype). count must be the same on every rank; 0 returns at once. */
TUTTI_API tuttiResult_t tuttiGather(const void* sendbuff, void* recvbuff, size_t count,
                                    tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                    tuttiStream_t stream);
/* Scatter: root's sendbuff holds nranks*count elements; rank r receives block r (offset
 * r*count) in recvbuff. sendbuff is ignored (may be NULL) on other ranks. In place on the root:
 * recvbuff == sendbuff + root*count*sizeof(datatype). count must be the same on every rank; 0
 * returns at once. */
TUTTI_API tuttiResult_t tuttiScatter(const void* sendbuff, void* recvbuff, size_t count,
                                     tuttiDataType_t datatype, int root, tuttiComm_t comm,
                                     tuttiStream_t stream);

/* ---- Point to point ---- */
/* Host memory only: a CUDA device buffer is tuttiInvalidArgument. Outside a group a blocking
 * call runs alone and may wait for its peer: a rank that both sends and receives in one step puts
 * them in a group, or issues them on host streams (see "Host streams and events"). */
TUTTI_API tuttiResult_t tuttiSend(const void* sendbuff, size_t count, tuttiDataType_t datatype,
                                  int peer, tuttiComm_t comm, tuttiStream_t stream);
TUTTI_API tuttiResult_t tuttiRecv(void* recvbuff, size_t count, tuttiDataType_t datatype, int peer,
                                  tuttiComm_t comm, tuttiStream_t stream);
/* Receives the first tuttiSend message to arrive from any peer (MPI_ANY_SOURCE) and sets *peer
 * to its sender (on a host stream: when the stream reaches the call). Messages from one peer
 * still arrive in order; a collective's message is never taken. The message must hold count
 * elements: another size is tuttiInvalidUsage and the message stays for a receive of its size.
 * Not in a group (tuttiInvalidUsage); host memory only (a cudaStream_t is ignored: the call
 * blocks); over transports that carry no message headers (ibverbs, cuda_ipc) tuttiUnsupported.
 * Waits up to the communicator's timeout (tuttiTimeout, which fails the communicator as any
 * timed-out call does); a connected peer that closed its connection or died fails it too. */
TUTTI_API tuttiResult_t tuttiRecvAny(void* recvbuff, size_t count, tuttiDataType_t datatype,
                                     int* peer, tuttiComm_t comm, tuttiStream_t stream);

/* ---- Group calls ----
 * Calls between Start and End (nestable; per thread) are recorded and run at the outermost End. Per
 * communicator: first its collectives, with the results of the calls one after another in call
 * order, then its sends and receives, issued together as one batch (any order of matching pairs
 * works). Collectives fuse: a run of consecutive tuttiAllReduce, tuttiAllGather, tuttiReduceScatter
 * and tuttiAllToAll calls on host buffers (all-reduces of at most 8 KiB, the others' buffers at
 * most 16 KiB; the all-reduces and reduce-scatters of one datatype and op; up to 512 KiB and 1024
 * calls; no call reading or writing what another call of the run writes, or writing what another
 * reads) runs as one call whose schedule interleaves theirs round by round (each with an algorithm
 * whose rounds merge: the forced one if it does, else the cost model's best of them; with none, or
 * above 64 ranks, the calls run one after another), its all-reduces packed into one all-reduce of a
 * packed copy; a run of all-reduces alone runs as that packed all-reduce (which may use the shared
 * window). So 64 small all-reduces cost about one, and a mixed run pays its round trips once
 * instead of once per call (tuttiCommLastAlgorithm says "fused" after it). A mismatch between
 * ranks' groups is then named as the fused or packed call's. Other collectives (and larger calls)
 * run one after another. Several communicators progress at the same time (one thread each beyond
 * the first), so ranks may record the communicators in different orders, and one thread may drive
 * several ranks of one communicator. A blocking init (tuttiCommInitRank*, tuttiCommInitFromEnv,
 * tuttiCommInitMPI) inside a group returns tuttiSuccess at once and initialises on a thread of its
 * own; End waits for it (returning its error) before running the group's calls, so one thread can
 * init several ranks as with NCCL. A split inside a group is not deferred (it blocks until its
 * peers split). A collective, send or receive refused inside the group (its own error code at
 * once) makes End return that code and run none of the group's calls on this thread, as
 * ncclGroupEnd does. End returns the first failure; the text is in tuttiGetLastError(NULL) and on
 * the failed communicator. A communicator's calls in one group name one stream: when it is a host
 * stream, End enqueues them there as one task and returns without waiting for them (their failure
 * is the stream's); a call naming another stream than the group's earlier calls on that
 * communicator is tuttiInvalidUsage. */
TUTTI_API tuttiResult_t tuttiGroupStart(void);
TUTTI_API tuttiResult_t tuttiGroupEnd(void);

/* What tuttiGroupSimulateEnd reports (ncclSimInfo_t's shape). Initialise with
 * TUTTI_SIM_INFO_INITIALIZER. */
typedef struct {
  size_t size;          /* sizeof(tuttiSimInfo_t) */
  unsigned int magic;   /* TUTTI_SIM_INFO_MAGIC */
  unsigned int version; /* TUTTI_VERSION_CODE */
  float estimatedTime;  /* out: microseconds */
} tuttiSimInfo_t;
#define TUTTI_SIM_INFO_MAGIC 0x74757369u /* "tusi" */
#define TUTTI_SIM_INFO_INITIALIZER \
  { sizeof(tuttiSimInfo_t), TUTTI_SIM_INFO_MAGIC, TUTTI_VERSION_CODE, 0.0f }

/* Ends the group as tuttiGroupEnd does, but runs none of its calls: simInfo->estimatedTime gets
 * the time the cost model predicts for them (docs/tuning.md), in microseconds. Per communicator
 * the group's calls add up (each collective timed with the algorithm the model would choose for
 * it, or the forced one; a V-collective as the plain one of its average block; its sends and
 * receives as one batch); communicators progress at the
 * same time, so the estimate is the largest of their sums. Local: no rank talks to another, and
 * every rank may estimate alone. Online refinement's measured choices and the line all-reduce's
 * own protocol are not taken into account (the model's time of the schedule it shares is).
 * Inits started in the group finish as at tuttiGroupEnd; a tuttiNeighborAllReduce recorded in it
 * (which the model cannot price: tuttiUnsupported) still advances its graph's step.
 * tuttiInvalidArgument for a NULL
 * simInfo or one not made with TUTTI_SIM_INFO_INITIALIZER; tuttiInvalidUsage inside a nested
 * group (only the outermost End may simulate) or without a matching tuttiGroupStart. */
TUTTI_API tuttiResult_t tuttiGroupSimulateEnd(tuttiSimInfo_t* simInfo);

/* ---- Host streams and events (tutti additions) ----
 * A host stream runs the calls given it (every collective, the V-collectives,
 * tuttiNeighborAllReduce, tuttiAllReduceCompressed, tuttiSend, tuttiRecv, and a group's calls on a
 * communicator, which then form one task) one after another, in the order they were issued, on a
 * worker thread of its own that sleeps while the stream is empty (or on the thread of a
 * tuttiStreamSynchronize or tuttiEventSynchronize outside a group that finds the worker asleep: it
 * runs the queued calls itself, in order, and so spares short calls two thread hand-offs). Such a
 * call checks its arguments, enqueues itself and returns tuttiSuccess at once; its buffers (and for
 * the V-collectives nothing else: the arrays are copied) belong to tutti until it completes: do not
 * read or write them before a synchronise, a query or an
 * event says so. A communicator's calls run in the order they were issued, whichever streams
 * carry them and whether or not they block (a blocking call waits for the communicator's
 * earlier stream calls), so calls on several streams never reorder a communicator's calls (as
 * NCCL orders them); calls of different communicators on different streams progress at the
 * same time. With TUTTI_STREAM_LANES=n > 1 (the same on every rank) a communicator has n lanes,
 * n - 1 of them duplicates of it with connections of their own, made at init: its k-th
 * collective (counted from 0 over its collectives, V-collectives, barriers and neighbour
 * all-reduces, in a group or not) runs on lane k mod n (lane 0 inside a group) and, on a host
 * stream, waits only for the earlier stream collectives of its lane and for every earlier call
 * of another kind (blocking calls, settings included, sends and receives, groups,
 * tuttiAllReduceCompressed), so collectives on different streams run at the same time; the
 * ranks must then group their collectives alike. Order between streams only through events
 * (tuttiStreamWaitEvent). A call that fails on a stream
 * (a dead or silent peer, ranks whose calls differ, an abort, an algorithm that does not apply)
 * leaves its error on the stream, reported by the next tuttiStreamSynchronize (which clears it),
 * tuttiStreamQuery and tuttiEventSynchronize/Query of an event after it, with its text (naming the
 * call and, where one is to blame, the rank) in tuttiGetLastError(NULL) and on the communicator
 * (tuttiGetLastError(comm), tuttiCommGetAsyncError when it failed the communicator). The
 * calls after it still run (on a failed communicator they fail at once). tuttiCommAbort ends
 * the communicator's calls in flight; tuttiCommDestroy waits for its calls issued before it;
 * the blocking calls tuttiCommSplit, tuttiCommShrink (after revoking them with
 * TUTTI_SHRINK_ABORT), tuttiCommSetAlgorithm, tuttiCommSetTimeout, tuttiCompressionStats and
 * tuttiCompressionResetKey wait for its earlier stream calls (which keep the algorithms and timeout
 * they were issued under). A communicator's calls come from one thread at a time (as without
 * streams). Sends and receives on host streams (and blocking ones once the communicator has had a
 * stream call) run in its call order, and consecutive ones run together: the one whose turn comes
 * takes in those issued after it, also while it waits for its peers, so a rank may post a receive
 * before the send its peer waits for, on one stream or several, in any order, without deadlock.
 * Messages between two ranks match in the order they were issued. A collective, a group or a send
 * to or from self between them ends such a run (the calls after it wait for it), and a blocking
 * call returns only after the calls run with it completed. The first operation with a peer connects
 * to it, which may wait until the peer connects too; sends and receives posted meanwhile join that
 * connect, so over shm and tcp a cycle of first contacts (every rank's first operation with a
 * different peer, each waiting for its peer) completes. Over ibverbs such a cycle whose later
 * operations are posted after the connect started stalls until the timeout: there, make first
 * contacts in a group or a collective that reaches those peers. */
TUTTI_API tuttiResult_t tuttiStreamCreate(tuttiStream_t* stream);
/* Waits for the stream's calls, then frees it. The error of a call not yet reported is
 * returned. */
TUTTI_API tuttiResult_t tuttiStreamDestroy(tuttiStream_t stream);
/* Waits for every call enqueued so far; returns the first failure among them not reported by
 * an earlier synchronise (and clears it), else tuttiSuccess. NULL: tuttiSuccess. Inside a host
 * function of the same stream it waits for nothing: it reports (and clears) the failure of the
 * calls enqueued before that function, which have all completed. */
TUTTI_API tuttiResult_t tuttiStreamSynchronize(tuttiStream_t stream);
/* tuttiSuccess when every call enqueued so far has completed, tuttiInProgress while some has
 * not, or the pending failure (not cleared). */
TUTTI_API tuttiResult_t tuttiStreamQuery(tuttiStream_t stream);
/* The stream's later calls wait until the event's position is reached (no-op for an event
 * never recorded, or recorded on the same stream). */
TUTTI_API tuttiResult_t tuttiStreamWaitEvent(tuttiStream_t stream, tuttiEvent_t event);
typedef tuttiResult_t (*tuttiHostFn_t)(void* userData);
/* A host function on a host stream (as cudaLaunchHostFunc): fn(userData) runs in the stream's
 * order, after the calls enqueued on it before and before those after, on the thread that runs
 * the stream's calls (its worker, or a synchronising thread); returns at once. A result other
 * than tuttiSuccess is the stream's failure, reported as a call's is. fn learns whether the
 * calls before it succeeded from tuttiStreamSynchronize of its own stream (which then returns
 * at once; a failure reported there is cleared, so each host function sees the failures since
 * the previous one that synchronised). fn must not wait for its own stream otherwise (destroy,
 * or an event recorded after it), and a blocking call it makes waits for
 * that communicator's calls issued before it, so it must not make one on a communicator with
 * calls enqueued after it. Not inside a group (tuttiInvalidUsage: the group's calls are enqueued
 * at tuttiGroupEnd, after it). tuttiInvalidArgument for a NULL fn or a stream that is not a host
 * stream. */
TUTTI_API tuttiResult_t tuttiStreamLaunchHostFunc(tuttiStream_t stream, tuttiHostFn_t fn,
                                                  void* userData);
TUTTI_API tuttiResult_t tuttiEventCreate(tuttiEvent_t* event);
/* Marks the stream's current end: the event completes when every call enqueued on it so far
 * has. Recording again moves the mark. */
TUTTI_API tuttiResult_t tuttiEventRecord(tuttiEvent_t event, tuttiStream_t stream);
/* tuttiSuccess once the recorded calls completed (or never recorded), tuttiInProgress before;
 * the failure of a call up to the mark, if one failed (not cleared). */
TUTTI_API tuttiResult_t tuttiEventQuery(tuttiEvent_t event);
/* Waits for the recorded calls; their failure, if one failed (not cleared). */
TUTTI_API tuttiResult_t tuttiEventSynchronize(tuttiEvent_t event);
TUTTI_API tuttiResult_t tuttiEventDestroy(tuttiEvent_t event);

/* ---- Introspection (tutti additions) ---- */
/* Name of the algorithm the last collective on comm used ("ring", "tree", ...). */
TUTTI_API const char* tuttiCommLastAlgorithm(tuttiComm_t comm);
/* Forces algorithms for comm's following calls, in TUTTI_ALGO syntax ("ring", or
 * "allreduce:direct;broadcast:binomial"); every name is checked now (tuttiInvalidArgument
 * names an unknown one). NULL or "" restores comm's own choice: its config's algo, else
 * TUTTI_ALGO as read at init, else automatic. Local: each rank must make the same call
 * before its next collective. Not inside a group. */
TUTTI_API tuttiResult_t tuttiCommSetAlgorithm(tuttiComm_t comm, const char* spec);
/* The timeout of comm's following calls, in milliseconds (> 0; a wait that makes no progress
 * for that long is tuttiTimeout naming the late rank), in place of its config's timeoutMs or
 * TUTTI_TIMEOUT (tutti addition: gloo's per-operation timeout, torch's per-call
 * opts.timeout). Local: ranks may differ. Not inside a group, nor while another thread is in
 * a call on comm. tuttiCommGetTimeout reads it. */
TUTTI_API tuttiResult_t tuttiCommSetTimeout(tuttiComm_t comm, int timeoutMs);
TUTTI_API tuttiResult_t tuttiCommGetTimeout(tuttiComm_t comm, int* timeoutMs);
/* The algorithms tutti has for a collective, by the names of TUTTI_ALGO: collective is
 * "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall" or
 * "neighborallreduce"; the result is comma-separated ("naive,ps,ring,..."), static, or NULL
 * for an unknown collective. Whether one applies depends on the call (rank count, hosts,
 * size): forced where it does not, a call is refused. The perf tests' `-A all` sweeps it. */
TUTTI_API const char* tuttiAlgorithms(const char* collective);
/* Comma-separated transports in use by comm's connections ("shm", "shm,tcp", ...). */
TUTTI_API const char* tuttiCommTransports(tuttiComm_t comm);
/* The flight recorder: appends comm's last 64 calls (number, call, algorithm, state, times;
 * oldest first) to the file at path, or writes them to stderr when path is NULL. Works on a
 * failed communicator too (TUTTI_TRACE_FILE writes the same when a call fails). Any thread. */
TUTTI_API tuttiResult_t tuttiCommDumpTrace(tuttiComm_t comm, const char* path);

/* ---- Compressed all-reduce (tutti addition; docs/compression.md) ---- */
/* recvbuff = sum over ranks of decode(encode(sendbuff_r)), identical bits on every rank.
 * datatype: tuttiFloat32, tuttiFloat16 or tuttiBfloat16 (accumulated in float32, converted
 * once at the end). compressor: "none", "topk:ratio=0.01", "topk:k=6", "qsgd:s=4,b=512", ...;
 * NULL or "" uses TUTTI_COMPRESS (and "none" when that is unset). key names the tensor: error
 * feedback residual and step counter (the RNG stream of QSGD) are kept per (comm, key). With
 * useErrorFeedback != 0 the residual of key is added before compression and updated after.
 * Every rank must pass the same count, datatype, compressor, key and useErrorFeedback.
 * Host memory; blocking with a NULL stream, enqueued on a host stream (see "Host streams");
 * not allowed between tuttiGroupStart and tuttiGroupEnd. */
TUTTI_API tuttiResult_t tuttiAllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count,
                                                 tuttiDataType_t datatype, const char* compressor,
                                                 uint64_t key, int useErrorFeedback,
                                                 tuttiComm_t comm, tuttiStream_t stream);
typedef struct {
  uint64_t wireBytesLastCall;  /* payload bytes this rank sent in the last call (top-k: 8k) */
  uint64_t denseBytesLastCall; /* 4*count of the last call (the uncompressed float32 size) */
  uint64_t wireBytesTotal;     /* payload bytes over all calls on comm */
  uint64_t calls;              /* tuttiAllReduceCompressed calls completed on comm */
  uint64_t errorFeedbackKeys;  /* keys holding a residual */
} tuttiCompressionStats_t;
TUTTI_API tuttiResult_t tuttiCompressionStats(tuttiComm_t comm, tuttiCompressionStats_t* stats);
/* Forgets key's residual and step counter (e.g. after a model reload); local, not collective. */
TUTTI_API tuttiResult_t tuttiCompressionResetKey(tuttiComm_t comm, uint64_t key);

/* ---- Neighbour all-reduce: decentralized averaging over a graph (tutti addition;
 * docs/decentralized.md) ---- */
/* Opaque graph handle, made once per communicator (collectively) and used by
 * tuttiNeighborAllReduce on that communicator only. */
typedef struct tuttiGraph* tuttiGraph_t;
typedef enum {
  tuttiGraphRing = 0,        /* i <-> i-1, i+1 (2 ranks: one neighbour) */
  tuttiGraphTorus2D = 1,     /* rows x cols with wrap-around: up, down, left, right */
  tuttiGraphGrid2D = 2,      /* rows x cols without wrap-around (Metropolis-Hastings weights) */
  tuttiGraphHypercube = 3,   /* i <-> i xor 2^k; the node count must be a power of two */
  tuttiGraphExponential = 4, /* static exponential-2: i -> i + 2^k mod n for every 2^k < n */
  /* dynamic: call t of the graph, i -> i + 2^(t mod ceil(log2 n)) mod n, weights 1/2; after
   * log2(n) consecutive calls every rank holds the exact average (n a power of two) */
  tuttiGraphOnePeerExponential = 5,
  tuttiNumGraphKinds = 6
} tuttiGraphKind_t;
/* Built-in graph over comm's ranks. rows: rows of the 2-D torus / grid (must divide the node
 * count; 0 picks the squarest shape); must be 0 for the other kinds. Weights: uniform 1/(d+1)
 * on the regular graphs (ring, torus, hypercube, exponential), Metropolis-Hastings
 * w_ij = 1/(1 + max(d_i, d_j)) on the grid; every W is doubly stochastic. hierarchical != 0:
 * the graph's nodes are comm's hosts instead of its ranks; each call averages exactly inside
 * every host (over shm) and mixes the host averages over the graph between hosts (every host
 * must hold the same number of ranks). Collective over comm (every rank passes the same
 * arguments); not inside a group. */
TUTTI_API tuttiResult_t tuttiGraphCreate(tuttiComm_t comm, tuttiGraphKind_t kind, int rows,
                                         int hierarchical, tuttiGraph_t* graph);
/* User graph, in the manner of MPI_Dist_graph_create_adjacent: this rank receives from
 * sources[0..indegree) and sends to destinations[0..outdegree). With sourceWeights, this rank
 * computes x <- selfWeight * x + sum_k sourceWeights[k] * x_sources[k], and selfWeight plus the
 * source weights must sum to 1 (within 1e-6; columns are not checked: the average is kept only
 * when W is also column stochastic). With sourceWeights NULL on every rank, the graph must be
 * undirected (sources == destinations as sets) and gets Metropolis-Hastings weights (doubly
 * stochastic); selfWeight is then ignored. Checked on every rank after an all-gather of all
 * lists: ranks in range, no self or duplicate entries, every edge listed at both ends
 * (j in sources of i <=> i in destinations of j); tuttiInvalidArgument names rank and problem.
 * Collective over comm; not inside a group. */
TUTTI_API tuttiResult_t tuttiGraphCreateAdjacent(tuttiComm_t comm, int indegree, const int* sources,
                                                 const double* sourceWeights, double selfWeight,
                                                 int outdegree, const int* destinations,
                                                 tuttiGraph_t* graph);
/* Local; a graph may be destroyed once the calls that use it (including grouped ones, which
 * keep what they need) were issued. NULL is a no-op. */
TUTTI_API tuttiResult_t tuttiGraphDestroy(tuttiGraph_t graph);
/* Rank i's result: recvbuff = W_ii sendbuff_i + sum over its in-neighbours j of
 * W_ij sendbuff_j, W the graph's mixing matrix at this call (the dynamic graph advances one
 * step per call, counted per graph in issue order on every rank). datatype: tuttiFloat32,
 * tuttiFloat64, tuttiFloat16 or tuttiBfloat16; the sum runs self first, then in-neighbours by
 * ascending rank, without fused multiply-adds, in float32 (float16/bfloat16 rounded once at
 * the end) or float64, so results are the same bits on every run. In place when
 * sendbuff == recvbuff. Every rank passes the same count and datatype. Group calls: recorded
 * and run at tuttiGroupEnd like the other collectives. */
TUTTI_API tuttiResult_t tuttiNeighborAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                               tuttiDataType_t datatype, tuttiGraph_t graph,
                                               tuttiComm_t comm, tuttiStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TUTTI_TUTTI_H_ */
