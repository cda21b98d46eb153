#include "bootstrap/pmix_launch.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/error.h"
#include "tutti/config.h"

#if TUTTI_HAVE_PMIX
#include <pmix.h>
#endif

namespace tutti::bootstrap {

bool underPmixServer() {
  auto set = [](const char* n) {
    const char* v = std::getenv(n);
    return v != nullptr && *v != '\0';
  };
  return set("PMIX_NAMESPACE") && set("PMIX_RANK");
}

#if TUTTI_HAVE_PMIX

bool pmixAvailable() { return true; }

namespace {

std::mutex pmixMu;
bool pmixReady = false;
pmix_proc_t self;
PmixJob job;

[[noreturn]] void pmixFail(const std::string& what, pmix_status_t rc, const std::string& hint) {
  fail(tuttiSystemError, "PMIx launch: ", what, " failed: ", PMIx_Error_string(rc), " (",
       static_cast<int>(rc), ")", hint.empty() ? "" : ": ", hint);
}

void finalizeAtExit() {
  std::lock_guard lock(pmixMu);
  if (!pmixReady) return;
  pmixReady = false;
  PMIx_Finalize(nullptr, 0);
}

// Gets an integer attribute of `proc`; -1 when the server does not have it and !required.
long getInt(const pmix_proc_t& proc, const char* key, bool required) {
  pmix_value_t* val = nullptr;
  pmix_status_t rc = PMIx_Get(&proc, key, nullptr, 0, &val);
  if (rc != PMIX_SUCCESS) {
    if (!required) return -1;
    pmixFail(std::string("PMIx_Get(") + key + ")", rc, "the PMIx server does not provide it");
  }
  long v = -1;
  switch (val->type) {
    case PMIX_UINT32:
      v = val->data.uint32;
      break;
    case PMIX_UINT16:
      v = val->data.uint16;
      break;
    case PMIX_INT:
      v = val->data.integer;
      break;
    case PMIX_UINT:
      v = val->data.uint;
      break;
    case PMIX_PROC_RANK:
      v = val->data.rank;
      break;
    default:
      break;
  }
  PMIX_VALUE_RELEASE(val);
  if (v < 0 && required) fail(tuttiSystemError, "PMIx launch: ", key, " has an unexpected type");
  return v;
}

}  // namespace

PmixJob pmixJob() {
  std::lock_guard lock(pmixMu);
  if (pmixReady) return job;
  pmix_status_t rc = PMIx_Init(&self, nullptr, 0);
  if (rc != PMIX_SUCCESS)
    pmixFail("PMIx_Init", rc,
             "cannot reach the PMIx server named by PMIX_SERVER_URI* (was this process started "
             "by mpirun or srun --mpi=pmix?)");
  pmixReady = true;
  static bool registered = false;
  if (!registered) {
    std::atexit(finalizeAtExit);
    registered = true;
  }
  pmix_proc_t wild;
  PMIX_PROC_CONSTRUCT(&wild);
  PMIX_LOAD_PROCID(&wild, self.nspace, PMIX_RANK_WILDCARD);
  job.nspace = self.nspace;
  job.rank = static_cast<int>(self.rank);
  job.nranks = static_cast<int>(getInt(wild, PMIX_JOB_SIZE, true));
  job.localRank = static_cast<int>(getInt(self, PMIX_LOCAL_RANK, false));
  if (job.nranks <= 0 || job.rank < 0 || job.rank >= job.nranks)
    fail(tuttiSystemError, "PMIx launch: rank ", job.rank, " of job size ", job.nranks,
         " from the PMIx server is out of range");
  return job;
}

std::string pmixBroadcastFromRank0(const std::string& key, const std::string& value,
                                   const Deadline& deadline) {
  PmixJob j = pmixJob();
  std::string fullKey = "tutti." + key;
  if (j.rank == 0) {
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_STRING;
    v.data.string = const_cast<char*>(value.c_str());  // PMIx_Put copies it
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, fullKey.c_str(), &v);
    if (rc != PMIX_SUCCESS) pmixFail("PMIx_Put(" + fullKey + ")", rc, "");
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) pmixFail("PMIx_Commit", rc, "");
  }
  int secs = static_cast<int>(deadline.secondsLeft() + 0.999);
  if (secs < 1) secs = 1;
  bool collect = true;
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &secs, PMIX_INT);
  pmix_proc_t wild;
  PMIX_PROC_CONSTRUCT(&wild);
  PMIX_LOAD_PROCID(&wild, j.nspace.c_str(), PMIX_RANK_WILDCARD);
  pmix_status_t rc = PMIx_Fence(&wild, 1, info, 2);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (rc != PMIX_SUCCESS)
    pmixFail("PMIx_Fence for '" + fullKey + "' (rank " + std::to_string(j.rank) + " of " +
                 std::to_string(j.nranks) + ", timeout " + std::to_string(secs) + " s)",
             rc,
             rc == PMIX_ERR_TIMEOUT ? "not every rank of the job reached tutti's init in time"
                                    : "a rank of the job may have died before tutti's init");
  pmix_proc_t root;
  PMIX_PROC_CONSTRUCT(&root);
  PMIX_LOAD_PROCID(&root, j.nspace.c_str(), 0);
  pmix_value_t* val = nullptr;
  rc = PMIx_Get(&root, fullKey.c_str(), nullptr, 0, &val);
  if (rc != PMIX_SUCCESS) pmixFail("PMIx_Get(" + fullKey + ") from rank 0", rc, "");
  if (val->type != PMIX_STRING || val->data.string == nullptr) {
    PMIX_VALUE_RELEASE(val);
    fail(tuttiSystemError, "PMIx launch: rank 0's ", fullKey, " is not a string");
  }
  std::string out = val->data.string;
  PMIX_VALUE_RELEASE(val);
  return out;
}

#else  // !TUTTI_HAVE_PMIX

bool pmixAvailable() { return false; }

PmixJob pmixJob() {
  fail(tuttiUnsupported,
       "PMIx launch: tutti was built without PMIx (install libpmix-dev and "
       "rebuild, or set TUTTI_ADDR=host:port)");
}

std::string pmixBroadcastFromRank0(const std::string&, const std::string&, const Deadline&) {
  pmixJob();
  return {};
}

#endif

}  // namespace tutti::bootstrap
