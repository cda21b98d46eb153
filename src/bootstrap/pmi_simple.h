// The PMI-1 "simple" wire protocol of Hydra (MPICH's and Intel MPI's mpiexec): a launched
// process finds its rank in PMI_RANK, the job size in PMI_SIZE and an open socket to its
// proxy in PMI_FD, and talks to the proxy in lines of "cmd=... key=value ...". tutti uses it
// as PMIx is used under Open MPI (pmix_launch.h): rank 0 puts its rendezvous address in the
// job's key-value space, every rank meets in a barrier and reads it, so `mpiexec -n 4 ./app`
// needs no address of its own. Needs no library (the protocol is a few text lines).
#pragma once

#include <string>

#include "common/clock.h"

namespace tutti::bootstrap {

// True when the environment comes from a PMI-1 launcher: PMI_RANK and PMI_SIZE are set, and
// PMI_FD (the socket to the proxy; PMI_PORT alone, Hydra's -pmi-port mode, is refused when
// used).
bool underPmiSimple();

struct PmiSimpleJob {
  int rank = -1;
  int nranks = 0;
  int localRank = -1;  // MPI_LOCALRANKID (Hydra sets it); -1 when absent
};

// Rank, size and local rank from the environment. Throws tuttiInvalidArgument naming the
// variable when one is missing or out of range.
PmiSimpleJob pmiSimpleJob();

// Collective over every process of the job, each calling it once per key with its rank (as
// the launch environment gave it): rank 0's `value`
// is put into the job's key-value space, all enter the proxy's barrier (until the deadline),
// and every rank returns rank 0's value. Connects on the first call (cmd=init, PMI version
// 1.1) and sends cmd=finalize at process exit. Throws tuttiSystemError naming the command and
// the proxy's answer, or tuttiTimeout when the barrier does not end by the deadline.
std::string pmiSimpleBroadcastFromRank0(int rank, const std::string& key, const std::string& value,
                                        const Deadline& deadline);

}  // namespace tutti::bootstrap
