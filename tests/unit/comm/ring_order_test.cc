// ringOrderFromPlaces: hosts contiguous in order of their lowest rank, ranks by their device's
// ring position, and with several hosts each host entered and left through its NIC-nearest
// ranks, starting at its nearer end.
#include "comm/ring_order.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/error.h"

namespace tutti {
namespace {

RankPlace at(int pos, int nicClass = -1, std::string device = "") {
  RankPlace p;
  p.devicePos = pos;
  p.nicClass = nicClass;
  p.device = device.empty() && pos >= 0 ? "gpu:" + std::to_string(pos) : device;
  return p;
}

TEST(RingOrder, UnknownPlacesKeepRankOrder) {
  std::vector<RankPlace> places(5);
  EXPECT_EQ(ringOrderFromPlaces({0, 0, 0, 0, 0}, places), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(RingOrder, RanksFollowTheirDevicesRingPositions) {
  // Ranks 0..3 on devices at ring positions 2, 0, 3, 1; rank 4 unknown goes last.
  std::vector<RankPlace> places{at(2), at(0), at(3), at(1), at(-1)};
  EXPECT_EQ(ringOrderFromPlaces({0, 0, 0, 0, 0}, places), (std::vector<int>{1, 3, 0, 2, 4}));
}

TEST(RingOrder, RanksOfOneDeviceAreAdjacent) {
  std::vector<RankPlace> places{at(1), at(0), at(1), at(0)};
  EXPECT_EQ(ringOrderFromPlaces({0, 0, 0, 0}, places), (std::vector<int>{1, 3, 0, 2}));
}

TEST(RingOrder, InterleavedHostsBecomeContiguous) {
  std::vector<RankPlace> places(6);
  EXPECT_EQ(ringOrderFromPlaces({0, 1, 0, 1, 2, 2}, places), (std::vector<int>{0, 2, 1, 3, 4, 5}));
  // Host order is the order of the hosts' lowest ranks, not of their ids.
  EXPECT_EQ(ringOrderFromPlaces({7, 3, 7, 3}, std::vector<RankPlace>(4)),
            (std::vector<int>{0, 2, 1, 3}));
}

TEST(RingOrder, EachHostIsEnteredAndLeftThroughItsNicNearestRanks) {
  // Host 0: four GPUs in ring positions 0..3, the NIC under the switch of positions 2 and 3
  // (PIX = 2), the others across the CPU (SYS = 6). Host 1: the NIC next to position 0.
  std::vector<RankPlace> places{at(0, 6), at(1, 6), at(2, 2), at(3, 2),
                                at(0, 2), at(1, 6), at(2, 6), at(3, 6)};
  std::vector<int> order = ringOrderFromPlaces({0, 0, 0, 0, 1, 1, 1, 1}, places);
  // Host 0 as a path 3 0 1 2 (ends 3 and 2, both PIX), the device ring's cyclic order kept.
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 4), (std::vector<int>{3, 0, 1, 2}));
  // Host 1: one end at position 0 (PIX); the other end is SYS whatever the cut; the cut
  // leaves the ring between two devices: 4 first or last.
  std::vector<int> h1(order.begin() + 4, order.end());
  EXPECT_EQ(h1.front(), 4);  // the nearer end first (hier's leader)
  // On one host the cycle is kept as it is (no entry/exit).
  EXPECT_EQ(ringOrderFromPlaces({0, 0, 0, 0}, {places.begin(), places.begin() + 4}),
            (std::vector<int>{0, 1, 2, 3}));
}

TEST(RingOrder, CutInsideTheNicNearDeviceWhenBothEndsCanBeNear) {
  // Two ranks on each of devices A (position 0, NIC-near) and B (position 1), two hosts.
  std::vector<RankPlace> places{at(0, 2), at(0, 2), at(1, 6), at(1, 6), RankPlace{}, RankPlace{}};
  std::vector<int> order = ringOrderFromPlaces({0, 0, 0, 0, 1, 1}, places);
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 4), (std::vector<int>{1, 2, 3, 0}));
}

TEST(RingOrder, EachHostStartsAtItsNicNearestEnd) {
  // Host 0: positions 0, 1, 2 with the NIC next to position 2 only. The cuts 0 1 2 and 2 0 1
  // both have one NIC-near end; the host is walked from that end: 2 1 0 (the same links as
  // 0 1 2, reversed), so hier's leader, the host's first rank, is rank 2.
  std::vector<RankPlace> places{at(0, 6), at(1, 6), at(2, 2), RankPlace{}, RankPlace{}};
  std::vector<int> order = ringOrderFromPlaces({0, 0, 0, 1, 1}, places);
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 3), (std::vector<int>{2, 1, 0}));
}

TEST(RingOrder, MismatchedSizesAreRefused) {
  EXPECT_THROW(ringOrderFromPlaces({0, 0}, std::vector<RankPlace>(3)), Error);
}

}  // namespace
}  // namespace tutti
