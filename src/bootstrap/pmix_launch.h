// The PMIx launch environment (Open MPI's mpirun, Slurm's srun --mpi=pmix, PRRTE): rank,
// size and local rank from the PMIx server, and a broadcast from rank 0 through
// PMIx_Put / PMIx_Commit / PMIx_Fence / PMIx_Get, so a job needs no address of its own.
// Built only with libpmix (TUTTI_WITH_PMIX); without it pmixAvailable() is false and the
// other calls throw tuttiUnsupported.
#pragma once

#include <string>

#include "common/clock.h"

namespace tutti::bootstrap {

// True when the environment names a PMIx server (PMIX_NAMESPACE and PMIX_RANK are set).
bool underPmixServer();
// True when this build links libpmix.
bool pmixAvailable();

struct PmixJob {
  std::string nspace;
  int rank = -1;
  int nranks = 0;
  int localRank = -1;  // -1 when the server does not give it
};

// Connects to the server once per process (PMIx_Init; PMIx_Finalize runs at exit) and reads
// the job. Throws tuttiSystemError naming the PMIx call and its status on failure.
PmixJob pmixJob();

// Collective over every process of the namespace, each calling it once with the same key:
// rank 0's `value` is put and committed, all fence (with the deadline as PMIX_TIMEOUT), and
// every rank returns rank 0's value. A fence that fails or times out throws naming the key.
std::string pmixBroadcastFromRank0(const std::string& key, const std::string& value,
                                   const Deadline& deadline);

}  // namespace tutti::bootstrap
