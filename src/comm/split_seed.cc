// Split records and the child's seed (split_seed.h).
#include "comm/split_seed.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"

namespace tutti {

std::string splitRecord(int color, int key, const SplitSeed& seed) {
  std::string mine = std::to_string(color) + " " + std::to_string(key);
  if (color == TUTTI_SPLIT_NOCOLOR) return mine;
  return mine + "\n" + (seed.ring ? seed.ring->address() : std::string()) + "\n" +
         (seed.myStandby ? seed.myStandby->address().encode() : std::string());
}

int seedFromRecords(const std::vector<std::vector<std::byte>>& records, int color, int myRank,
                    const Membership& parent, SplitSeed& seed) {
  struct Member {
    int key, rank;
    std::string ring, standby;
  };
  std::vector<Member> members;
  for (int r = 0; r < static_cast<int>(records.size()); ++r) {
    std::string s(reinterpret_cast<const char*>(records[r].data()), records[r].size());
    int c = 0, k = 0;
    if (std::sscanf(s.c_str(), "%d %d", &c, &k) != 2)
      fail(tuttiInternalError, "bad split record from ", parent.describeRank(r));
    if (c != color) continue;
    size_t nl1 = s.find('\n');
    size_t nl2 = nl1 == std::string::npos ? nl1 : s.find('\n', nl1 + 1);
    if (nl2 == std::string::npos)
      fail(tuttiInternalError, "bad split record from ", parent.describeRank(r));
    members.push_back({k, r, s.substr(nl1 + 1, nl2 - nl1 - 1), s.substr(nl2 + 1)});
  }
  std::stable_sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.key != b.key ? a.key < b.key : a.rank < b.rank;
  });
  const int n = static_cast<int>(members.size());
  int newRank = 0;
  for (int i = 0; i < n; ++i) {
    const Member& m = members[i];
    if (m.rank == myRank) newRank = i;
    seed.peers.push_back(parent.peers[m.rank]);
    seed.peers.back().rank = i;
    seed.places.push_back(parent.places[m.rank]);
    seed.standbyOf.push_back(bootstrap::StandbyAddress::parse(m.standby));
  }
  if (seed.ring) {
    const Member& next = members[(newRank + 1) % n];
    seed.nextRing = next.ring;
    if (seed.nextRing.empty())
      fail(tuttiInternalError, "split: ", parent.describeRank(next.rank),
           " sent no bootstrap ring address");
  }
  return newRank;
}

}  // namespace tutti
