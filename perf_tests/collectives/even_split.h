// The V-collectives' perf tests run the even split (count elements per rank, displacement
// r * count) to compare with their plain counterparts: these are the arrays.
#pragma once

#include <vector>

#include "tutti/tutti.h"

namespace tutti_perf {

struct EvenSplit {
  std::vector<size_t> counts, displs;
};

// The arrays for comm's rank count (kept in a static: the driver calls from one thread). Made
// again only when the rank count or count changes, so the timed loop only reads them.
inline tuttiResult_t evenSplit(tuttiComm_t comm, size_t count, const EvenSplit** out) {
  static EvenSplit split;
  int n = 0;
  tuttiResult_t res = tuttiCommCount(comm, &n);
  if (res != tuttiSuccess) return res;
  if (split.counts.size() != static_cast<size_t>(n) || (n > 0 && split.counts[0] != count)) {
    split.counts.assign(n, count);
    split.displs.resize(n);
    for (int j = 0; j < n; ++j) split.displs[j] = j * count;
  }
  *out = &split;
  return tuttiSuccess;
}

}  // namespace tutti_perf
