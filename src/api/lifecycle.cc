// Communicator lifecycle: unique id, init (blocking or not), from env, MPI, split, shrink and
// the agreement on failed ranks, abort, destroy, queries.
#include <unistd.h>

#include <span>
#include <vector>

#include "api_guard.h"
#include "bootstrap/callback_store.h"
#include "bootstrap/env_init.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/unique_id.h"
#include "comm_handle.h"
#include "common/env.h"
#include "group.h"
#include "ordered_call.h"
#include "tutti/config.h"

#if TUTTI_HAVE_MPI
#include <mpi.h>
#endif

using tutti::api::guarded;

namespace {

using StoreMaker = std::function<tutti::bootstrap::Rendezvous(const tutti::Deadline&)>;

// Applies the config fields that are set over the environment's values.
tutti::CommOptions optionsFrom(const tuttiConfig_t* config) {
  tutti::CommOptions o = tutti::commOptionsFromEnv();
  if (config == nullptr) return o;
  TUTTI_CHECK_ARG(config->magic == TUTTI_CONFIG_MAGIC,
                  "config not initialised with TUTTI_CONFIG_INITIALIZER (bad magic)");
  TUTTI_CHECK_ARG(config->size >= offsetof(tuttiConfig_t, commName) + sizeof(const char*) &&
                      config->version >= 1,
                  "config has an unknown size/version (", config->size, "/", config->version, ")");
  if (config->timeoutMs != TUTTI_CONFIG_UNDEF_INT) {
    TUTTI_CHECK_ARG(config->timeoutMs > 0, "config.timeoutMs must be > 0");
    o.timeoutSec = config->timeoutMs / 1000.0;
  }
  if (config->deterministic != TUTTI_CONFIG_UNDEF_INT) o.deterministic = config->deterministic;
  if (config->algo != nullptr) {
    o.algo = config->algo;
    o.algoFrom = "config.algo";
  }
  if (config->transport != nullptr) o.transport = config->transport;
  if (config->commName != nullptr) o.name = config->commName;
  return o;
}

bool isBlocking(const tuttiConfig_t* config) {
  return config == nullptr || config->blocking == TUTTI_CONFIG_UNDEF_INT || config->blocking != 0;
}

// The body of every init: rendezvous, then build the communicator.
void initInto(tuttiComm_t handle, const StoreMaker& makeStore, const std::string& prefix, int rank,
              int nranks, const tutti::CommOptions& options) {
  tutti::Deadline deadline(options.timeoutSec);
  auto rv = makeStore(deadline);
  {
    std::lock_guard<std::mutex> lock(handle->initMutex);
    handle->store = rv.store;
    handle->storeServer = rv.server;
    if (handle->abortRequested) rv.store->abort();
  }
  auto impl = std::make_unique<tutti::Communicator>(rv.store, prefix, rank, nranks, options);
  tutti::api::CommLanes lanes;
  lanes.open(*impl, static_cast<int>(options.streamLanes));
  std::lock_guard<std::mutex> lock(handle->initMutex);
  handle->impl = std::move(impl);
  handle->lanes = std::move(lanes);
  if (handle->abortRequested) {
    handle->impl->abort();
    handle->lanes.abort();
  }
}

tuttiResult_t startInit(tuttiComm_t* out, const char* fn, StoreMaker makeStore,
                        const std::string& prefix, int rank, int nranks,
                        const tuttiConfig_t* config) {
  TUTTI_CHECK_ARG(out != nullptr, "comm is NULL");
  *out = nullptr;
  TUTTI_CHECK_ARG(nranks >= 1, "nranks must be >= 1 (got ", nranks, ")");
  TUTTI_CHECK_ARG(rank >= 0 && rank < nranks, "rank ", rank, " out of range [0, ", nranks, ")");
  tutti::CommOptions options = optionsFrom(config);
  auto handle = std::make_unique<tuttiComm>();
  // Inside a group a blocking init runs on its own thread and tuttiGroupEnd waits for it (as
  // NCCL's inits in a group): one thread may init several ranks of one communicator.
  const bool inGroup = tutti::api::groupDepth() > 0;
  if (isBlocking(config) && !inGroup) {
    tuttiComm_t raw = handle.get();
    tuttiResult_t r = guarded(nullptr, fn, [&] {
      initInto(raw, makeStore, prefix, rank, nranks, options);
      return tuttiSuccess;
    });
    if (r != tuttiSuccess) return r;
    *out = handle.release();
    return tuttiSuccess;
  }
  // Non-blocking: init proceeds on a thread; tuttiCommGetAsyncError reports completion and
  // tuttiCommAbort unblocks it.
  tuttiComm_t raw = handle.release();
  raw->asyncError = tuttiInProgress;
  raw->initThread = std::thread([raw, makeStore, prefix, rank, nranks, options, fn] {
    tutti::log::setThreadRank(rank);
    tuttiResult_t r = guarded(raw, fn, [&] {
      initInto(raw, makeStore, prefix, rank, nranks, options);
      return tuttiSuccess;
    });
    raw->asyncError = r;
  });
  *out = raw;
  if (isBlocking(config)) {
    tutti::api::deferInit(raw);
    return tuttiSuccess;
  }
  return tuttiInProgress;
}

// Shrink and agreement errors go to comm's last error without failing comm (their failures
// name other ranks; comm's own state is its calls').
template <typename F>
tuttiResult_t recoveryCall(tuttiComm_t comm, const char* fn, F&& body) {
  tuttiResult_t r = guarded(nullptr, fn, std::forward<F>(body));
  if (r != tuttiSuccess && comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->errorMutex);
    comm->lastError = tutti::api::threadLastError();
  }
  return r;
}

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiGetUniqueId(tuttiUniqueId* uniqueId) {
  return guarded(nullptr, "tuttiGetUniqueId", [&] {
    TUTTI_CHECK_ARG(uniqueId != nullptr, "uniqueId is NULL");
    *uniqueId = tutti::bootstrap::makeUniqueId();
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCommInitRankConfig(tuttiComm_t* comm, int nranks, tuttiUniqueId commId,
                                                int rank, tuttiConfig_t* config) {
  return guarded(nullptr, "tuttiCommInitRank", [&] {
    auto info = tutti::bootstrap::decodeUniqueId(commId);  // validates before any thread
    (void)info;
    StoreMaker make = [commId, rank](const tutti::Deadline& d) {
      return tutti::bootstrap::rendezvousFromUniqueId(commId, rank, d);
    };
    return startInit(comm, "tuttiCommInitRank", make, "comm", rank, nranks, config);
  });
}

TUTTI_API tuttiResult_t tuttiCommInitRank(tuttiComm_t* comm, int nranks, tuttiUniqueId commId,
                                          int rank) {
  return tuttiCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

TUTTI_API tuttiResult_t tuttiCommInitRankStore(tuttiComm_t* comm, int nranks, int rank,
                                               const tuttiStore_t* store, tuttiConfig_t* config) {
  return guarded(nullptr, "tuttiCommInitRankStore", [&] {
    TUTTI_CHECK_ARG(store != nullptr, "store is NULL");
    auto shared = std::make_shared<tutti::bootstrap::CallbackStore>(*store);
    StoreMaker make = [shared](const tutti::Deadline&) {
      return tutti::bootstrap::Rendezvous{nullptr, shared};
    };
    return startInit(comm, "tuttiCommInitRankStore", make, "comm", rank, nranks, config);
  });
}

TUTTI_API tuttiResult_t tuttiCommInitFromEnv(tuttiComm_t* comm, tuttiConfig_t* config) {
  return guarded(nullptr, "tuttiCommInitFromEnv", [&] {
    tutti::bootstrap::LaunchInfo info = tutti::bootstrap::launchInfoFromEnv();
    StoreMaker make = [info](const tutti::Deadline& d) {
      return tutti::bootstrap::rendezvousFromLaunchInfo(info, d);
    };
    // Every process of the job inits from the environment the same number of times: the
    // n-th communicator of each uses the key prefix "env<n>" on the shared launch store.
    static std::atomic<int> initCount{0};
    std::string prefix = "env" + std::to_string(initCount++);
    return startInit(comm, "tuttiCommInitFromEnv", make, prefix, info.rank, info.nranks, config);
  });
}

TUTTI_API tuttiResult_t tuttiCommInitMPI(tuttiComm_t* comm, void* mpiComm, tuttiConfig_t* config) {
#if TUTTI_HAVE_MPI
  return guarded(nullptr, "tuttiCommInitMPI", [&] {
    TUTTI_CHECK_ARG(mpiComm != nullptr, "mpiComm is NULL (pass &MPI_COMM_WORLD-like handle)");
    MPI_Comm mc = *static_cast<MPI_Comm*>(mpiComm);
    int rank = 0, size = 0, flag = 0;
    MPI_Initialized(&flag);
    if (!flag) tutti::fail(tuttiInvalidUsage, "MPI is not initialised (call MPI_Init first)");
    MPI_Comm_rank(mc, &rank);
    MPI_Comm_size(mc, &size);
    tuttiUniqueId id{};
    if (rank == 0) id = tutti::bootstrap::makeUniqueId();
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mc);
    StoreMaker make = [id, rank](const tutti::Deadline& d) {
      return tutti::bootstrap::rendezvousFromUniqueId(id, rank, d);
    };
    return startInit(comm, "tuttiCommInitMPI", make, "comm", rank, size, config);
  });
#else
  tutti::api::threadLastError() = "tuttiCommInitMPI: tutti was built without MPI";
  return tuttiUnsupported;
#endif
}

TUTTI_API tuttiResult_t tuttiCommSplit(tuttiComm_t comm, int color, int key, tuttiComm_t* newcomm,
                                       tuttiConfig_t* config) {
  return guarded(comm, "tuttiCommSplit", [&] {
    TUTTI_CHECK_ARG(newcomm != nullptr, "newcomm is NULL");
    *newcomm = nullptr;
    TUTTI_CHECK_ARG(color >= 0 || color == TUTTI_SPLIT_NOCOLOR,
                    "color must be >= 0 or TUTTI_SPLIT_NOCOLOR (got ", color, ")");
    auto& parent = tutti::api::ready(comm);
    tutti::api::BlockingTurn turn(comm);
    tutti::CommOptions options = config ? optionsFrom(config) : parent.options();
    auto child = parent.split(color, key, options);
    if (child == nullptr) return tuttiSuccess;
    auto handle = std::make_unique<tuttiComm>();
    handle->store = comm->store;
    handle->storeServer = comm->storeServer;
    handle->ownsStore = false;
    handle->lanes.open(*child, static_cast<int>(options.streamLanes));
    handle->impl = std::move(child);
    *newcomm = handle.release();
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCommShrink(tuttiComm_t comm, int* excludeRanksList,
                                        int excludeRanksCount, tuttiComm_t* newcomm,
                                        tuttiConfig_t* config, int shrinkFlags) {
  return recoveryCall(comm, "tuttiCommShrink", [&] {
    TUTTI_CHECK_ARG(newcomm != nullptr, "newcomm is NULL");
    *newcomm = nullptr;
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(excludeRanksCount >= 0, "excludeRanksCount ", excludeRanksCount,
                    " is negative");
    TUTTI_CHECK_ARG(excludeRanksCount == 0 || excludeRanksList != nullptr,
                    "excludeRanksList is NULL with excludeRanksCount ", excludeRanksCount);
    TUTTI_CHECK_ARG((shrinkFlags & ~TUTTI_SHRINK_ABORT) == 0, "shrinkFlags ", shrinkFlags,
                    " has unknown bits: use TUTTI_SHRINK_DEFAULT or TUTTI_SHRINK_ABORT");
    auto& parent = tutti::api::initialised(comm);
    // Its calls in flight on host streams end first: revoked (TUTTI_SHRINK_ABORT), or waited
    // for.
    if ((shrinkFlags & TUTTI_SHRINK_ABORT) != 0) {
      parent.revoke();
      comm->lanes.revoke();
    }
    tutti::api::BlockingTurn turn(comm);
    tutti::CommOptions options = config ? optionsFrom(config) : parent.options();
    std::span<const int> exclude(excludeRanksList, static_cast<size_t>(excludeRanksCount));
    auto shrunk = parent.shrink(exclude, (shrinkFlags & TUTTI_SHRINK_ABORT) != 0, options);
    auto handle = std::make_unique<tuttiComm>();
    handle->store = std::move(shrunk.store);
    handle->storeServer = std::move(shrunk.server);
    handle->lanes.open(*shrunk.comm, static_cast<int>(options.streamLanes));
    handle->impl = std::move(shrunk.comm);
    *newcomm = handle.release();
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCommAgreeFailedRanks(tuttiComm_t comm, int* failedRanks,
                                                  int* failedCount) {
  return recoveryCall(comm, "tuttiCommAgreeFailedRanks", [&] {
    TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
    TUTTI_CHECK_ARG(failedRanks != nullptr, "failedRanks is NULL");
    TUTTI_CHECK_ARG(failedCount != nullptr, "failedCount is NULL");
    *failedCount = 0;
    std::vector<int> failed = tutti::api::initialised(comm).agreeFailedRanks();
    for (size_t i = 0; i < failed.size(); ++i) failedRanks[i] = failed[i];
    *failedCount = static_cast<int>(failed.size());
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCommAbort(tuttiComm_t comm) {
  if (comm == nullptr) {
    tutti::api::threadLastError() = "tuttiCommAbort: comm is NULL";
    return tuttiInvalidArgument;
  }
  if (std::string why = tutti::api::forkedAway(comm->forkGeneration, comm->creatorPid);
      !why.empty()) {
    // The parent's communicator: aborting it from here would end the parent's calls.
    return tutti::api::recordError(comm, "tuttiCommAbort", tuttiInvalidUsage, why);
  }
  comm->abortRequested = true;
  try {
    std::lock_guard<std::mutex> lock(comm->initMutex);
    if (comm->store && comm->ownsStore) comm->store->abort();
    if (comm->impl) comm->impl->abort();
    comm->lanes.abort();
  } catch (...) {
  }
  return tuttiSuccess;
}

TUTTI_API tuttiResult_t tuttiCommDestroy(tuttiComm_t comm) {
  if (comm == nullptr) return tuttiSuccess;
  if (std::string why = tutti::api::forkedAway(comm->forkGeneration, comm->creatorPid);
      !why.empty()) {
    // The child's copy is left as it is: releasing it would close connections and mark
    // shared segments that the parent still uses, or join threads the child does not have.
    tutti::api::threadLastError() =
        "tuttiCommDestroy: " + why + " (the child's copy of it is left alone)";
    return tuttiInvalidUsage;
  }
  if (comm->initThread.joinable()) comm->initThread.join();
  comm->order.waitIdle();  // its calls on host streams (they end early after an abort)
  std::unique_ptr<tuttiComm> owned(comm);
  // After a detected failure the other ranks may never arrive at the leave handshake (a dead
  // rank) or may have left already: release everything at once, and report the failure the
  // communicator ended with (NCCL's ncclCommDestroy also returns a pending error) unless the
  // caller aborted it, which is the expected way out of a failure.
  tuttiResult_t failure = comm->failure.load();
  bool aborted = comm->abortRequested.load() || (comm->impl && comm->impl->aborted());
  tuttiResult_t r = guarded(nullptr, "tuttiCommDestroy", [&] {
    tutti::api::logPerfSummary(comm);
    comm->lanes.close(failure == tuttiSuccess);  // before their parent: they share its store
    if (comm->impl && failure == tuttiSuccess) comm->impl->leave();
    comm->impl.reset();
    comm->store.reset();
    comm->storeServer.reset();
    return tuttiSuccess;
  });
  if (r != tuttiSuccess || failure == tuttiSuccess || aborted) return r;
  std::string cause;
  {
    std::lock_guard<std::mutex> lock(comm->errorMutex);
    cause = comm->failureText;
  }
  tutti::api::threadLastError() =
      "tuttiCommDestroy: the communicator had failed (" + cause +
      "); its resources were released without waiting for the other ranks";
  return failure;
}

TUTTI_API tuttiResult_t tuttiCommGetAsyncError(tuttiComm_t comm, tuttiResult_t* asyncError) {
  if (comm == nullptr || asyncError == nullptr)
    return tutti::api::recordError(comm, "tuttiCommGetAsyncError", tuttiInvalidArgument,
                                   comm == nullptr ? "comm is NULL" : "asyncError is NULL");
  *asyncError = comm->asyncError.load();
  if (*asyncError == tuttiSuccess) *asyncError = comm->failure.load();
  // A failure found outside any call (the direct device all-reduce's watchdog).
  if (*asyncError == tuttiSuccess && comm->impl) *asyncError = comm->impl->failure();
  if (*asyncError == tuttiSuccess && comm->impl && comm->impl->aborted())
    *asyncError = tuttiRemoteError;
  return tuttiSuccess;
}

TUTTI_API tuttiResult_t tuttiCommCount(const tuttiComm_t comm, int* count) {
  return guarded(comm, "tuttiCommCount", [&] {
    TUTTI_CHECK_ARG(count != nullptr, "count is NULL");
    *count = tutti::api::initialised(comm).size();
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiCommUserRank(const tuttiComm_t comm, int* rank) {
  return guarded(comm, "tuttiCommUserRank", [&] {
    TUTTI_CHECK_ARG(rank != nullptr, "rank is NULL");
    *rank = tutti::api::initialised(comm).rank();
    return tuttiSuccess;
  });
}

}  // extern "C"
