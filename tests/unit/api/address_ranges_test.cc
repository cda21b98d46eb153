// AddressRanges (src/api/address_ranges.h), the union of byte ranges the group fusion uses to
// find dependent calls: against a byte map, with random ranges that touch, nest, overlap and
// repeat, and the edges (empty ranges, ranges that only touch).
#include "address_ranges.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <vector>

namespace tutti::api {
namespace {

TEST(AddressRanges, EdgesAndTouchingRanges) {
  std::vector<std::byte> mem(100);
  AddressRanges r;
  EXPECT_FALSE(r.overlaps(mem.data(), 100));
  r.add(mem.data() + 10, 10);  // [10, 20)
  EXPECT_FALSE(r.overlaps(mem.data(), 10));
  EXPECT_FALSE(r.overlaps(mem.data() + 20, 5));
  EXPECT_TRUE(r.overlaps(mem.data() + 19, 1));
  EXPECT_TRUE(r.overlaps(mem.data() + 9, 2));
  EXPECT_FALSE(r.overlaps(mem.data() + 15, 0));  // an empty range overlaps nothing
  r.add(mem.data() + 20, 5);                     // touches: [10, 25)
  r.add(mem.data() + 50, 0);                     // empty: nothing added
  EXPECT_FALSE(r.overlaps(mem.data() + 50, 1));
  EXPECT_TRUE(r.overlaps(mem.data() + 24, 1));
  r.add(mem.data() + 30, 10);  // [30, 40): a gap of 5 bytes
  EXPECT_FALSE(r.overlaps(mem.data() + 25, 5));
  r.add(mem.data(), 100);  // swallows everything
  EXPECT_TRUE(r.overlaps(mem.data() + 27, 1));
}

TEST(AddressRanges, AgreesWithAByteMap) {
  std::mt19937 rng(7);
  constexpr size_t kBytes = 4096;
  std::vector<std::byte> mem(kBytes);
  for (int trial = 0; trial < 50; ++trial) {
    AddressRanges r;
    std::vector<bool> taken(kBytes, false);
    for (int step = 0; step < 200; ++step) {
      const size_t at = rng() % kBytes;
      const size_t len = std::min<size_t>(kBytes - at, rng() % (trial % 2 ? 300 : 20));
      bool want = false;
      for (size_t i = at; i < at + len; ++i) want = want || taken[i];
      ASSERT_EQ(r.overlaps(mem.data() + at, len), want)
          << "trial " << trial << " step " << step << " [" << at << ", " << at + len << ")";
      if (rng() % 2) {
        r.add(mem.data() + at, len);
        for (size_t i = at; i < at + len; ++i) taken[i] = true;
      }
    }
  }
}

}  // namespace
}  // namespace tutti::api
