// LocalLiveness: which ranks on this host have lost their process. A rank is visible when
// it runs on this host in this pid namespace; its process is gone when kill(2) finds no such
// pid or /proc shows it a zombie (exited, not yet reaped by its launcher). It knows nothing
// of communicators: it is given the pids and answers by rank.
//
// Waits that watch for dead ranks ask sweep() every 100 ms or so; with n ranks on a host,
// checking every peer at every sweep would cost the host n^2 process checks per interval
// (at 384 ranks on 2 cores that starved the ranks it watched). A sweep checks a slice of the
// peers instead, rotating from a start that differs per rank, so the host makes about
// max(kHostChecksPerSweep, n) checks per interval and every peer is still checked by some
// rank at about every sweep (by the rank before it, at least).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <vector>

#include "common/process_gone.h"

namespace tutti {

class LocalLiveness {
 public:
  // Checks of all the ranks of a host together per sweep interval (each rank's slice is
  // this divided by the visible ranks, at least 1).
  static constexpr size_t kHostChecksPerSweep = 256;

  // pids[r]: rank r's pid, or 0 when this process cannot see it (another host or pid
  // namespace). self: this rank (never reported).
  LocalLiveness(std::vector<pid_t> pids, int self);

  bool visible(int r) const;
  // Visible and its process is gone.
  bool gone(int r) const;
  // The gone ranks among the next slice of visible peers (rotating; see above).
  std::vector<int> sweep();
  // The number of peers one sweep checks.
  size_t sliceSize() const { return slice_; }

 private:
  std::vector<pid_t> pids_;
  int self_;
  std::vector<int> peers_;  // visible ranks other than self, ascending
  size_t cursor_ = 0;       // index into peers_ of the next sweep's first check
  size_t slice_ = 0;
};

}  // namespace tutti
