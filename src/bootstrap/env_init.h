// Rank, size and rendezvous address from a launcher's environment, first match wins:
//   tuttirun  TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK, TUTTI_ADDR, TUTTI_SECRET
//   torchrun  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR + MASTER_PORT
//   PMIx      a PMIx server (PMIX_NAMESPACE, PMIX_RANK: mpirun, srun --mpi=pmix) and no
//             TUTTI_ADDR / MASTER_ADDR / TUTTI_STORE_FILE: rank, size and local rank from
//             the server; the rendezvous address travels through PMIx (rendezvous.h)
//   Open MPI  OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK
//   Hydra     PMI_RANK, PMI_SIZE, MPI_LOCALRANKID (MPICH's and Intel MPI's mpiexec); with PMI_FD
//             and no TUTTI_ADDR / MASTER_ADDR / TUTTI_STORE_FILE the rendezvous address travels
//             through the PMI-1 key-value space (pmi_simple.h)
//   Slurm     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
// The address is TUTTI_ADDR if set, else MASTER_ADDR:MASTER_PORT (not needed when
// TUTTI_STORE_FILE names a file store); under Slurm with neither, the first host of the
// step's node list and a port from TUTTI_PORT, SLURM_STEP_RESV_PORTS or slurmPort(). The secret is
// TUTTI_SECRET if set, else one derived from the address and the job id (keeps jobs apart, is no
// protection against attackers). This file is the only place that reads the foreign (non-TUTTI_)
// variables.
#pragma once

#include <cstdint>
#include <string>

namespace tutti::bootstrap {

struct LaunchInfo {
  int rank = -1;
  int nranks = 0;
  int localRank = -1;     // -1: the launcher did not say
  std::string addr;       // "host:port" of rank 0's TCP store ("" with TUTTI_STORE_FILE)
  std::string bindAddr;   // where rank 0 listens when not addr (Slurm: the wildcard address)
  std::string secretHex;  // 32 hex digits
  std::string source;     // "tuttirun", "torchrun", "pmix", "openmpi", "hydra", "slurm"
  // addr and secretHex come from rank 0 through the launcher at rendezvous: PMIx (source
  // "pmix") or PMI-1 (source "hydra").
  bool viaLauncher = false;
};

// The rendezvous port of a Slurm step without TUTTI_PORT or reserved ports:
// kSlurmPortBase + (jobId * 16 + stepId) mod kSlurmPortRange.
constexpr int kSlurmPortBase = 20000;
constexpr int kSlurmPortRange = 20000;
int slurmPort(uint64_t jobId, uint64_t stepId);

// Throws tuttiInvalidArgument naming the variable on a missing/non-numeric/out-of-range
// value, and when no launcher's variables are present.
LaunchInfo launchInfoFromEnv();

}  // namespace tutti::bootstrap
