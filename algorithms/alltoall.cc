// All-to-all by pairwise exchange: local copy of the own block, then n-1 rounds where rank r
// sends block (r+s) % n to rank (r+s) % n and receives block (r-s) % n from rank (r-s) % n.
// In-place all-to-all (input == output) is not supported (NCCL does not define it either).
#include "builder.h"
#include "builders.h"

namespace tutti::algo::detail {

Schedule allToAllPairwise(const CollArgs& a) {
  Schedule s = start(a, "pairwise");
  Ctx c(a);
  size_t cnt = a.count;
  int n = c.n;
  copy(at(s, 0), c.in(c.r * cnt, cnt), c.out(c.r * cnt, cnt));
  for (int st = 1; st < n; ++st) {
    int to = (c.r + st) % n, from = (c.r - st + n) % n;
    Round& rd = at(s, st - 1);
    send(rd, to, c.in(to * cnt, cnt));
    recv(rd, from, c.out(from * cnt, cnt));
  }
  trim(s);
  return s;
}

}  // namespace tutti::algo::detail
