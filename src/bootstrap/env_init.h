// Rank, size and rendezvous address from a launcher's environment, first match wins:
//   tuttirun  TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK, TUTTI_ADDR, TUTTI_SECRET
//   torchrun  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR + MASTER_PORT
//   Open MPI  OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK
//   Slurm     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
// The address is TUTTI_ADDR if set, else MASTER_ADDR:MASTER_PORT (not needed when
// TUTTI_STORE_FILE names a file store). The secret is TUTTI_SECRET if set, else one derived
// from the address and the job id (keeps jobs apart, is no protection against attackers).
// This file is the only place that reads the foreign (non-TUTTI_) variables.
#pragma once

#include <string>

namespace tutti::bootstrap {

struct LaunchInfo {
  int rank = -1;
  int nranks = 0;
  int localRank = -1;     // -1: the launcher did not say
  std::string addr;       // "host:port" of rank 0's TCP store ("" with TUTTI_STORE_FILE)
  std::string secretHex;  // 32 hex digits
  std::string source;     // "tuttirun", "torchrun", "openmpi", "slurm"
};

// Throws tuttiInvalidArgument naming the variable on a missing/non-numeric/out-of-range
// value, and when no launcher's variables are present.
LaunchInfo launchInfoFromEnv();

}  // namespace tutti::bootstrap
