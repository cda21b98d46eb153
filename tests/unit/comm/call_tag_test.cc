// Call tags (src/comm/call_tag.h): a packed all-reduce's and a fused group's tags carry the
// digest of their members' shapes, so members that differ give different tags even where the
// counts add up alike; the call number reads back from every kind; the descriptions name the
// kind of call.
#include "comm/call_tag.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace tutti {
namespace {

uint64_t digestOf(std::initializer_list<uint64_t> counts) {
  ShapeDigest d;
  for (uint64_t c : counts) d.add(c);
  return d.value();
}

TEST(CallTag, PackedTagsOfDifferentMembersDiffer) {
  const CallTag a = packedCallTag(tuttiFloat32, tuttiSum, 2, digestOf({16, 32}), 7);
  const CallTag b = packedCallTag(tuttiFloat32, tuttiSum, 2, digestOf({32, 16}), 7);
  const CallTag c = packedCallTag(tuttiFloat32, tuttiSum, 2, digestOf({16, 32}), 7);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, c);
  // Every digest bit counts: two digests that differ only above bit 40 give different tags.
  const uint64_t low = digestOf({5});
  EXPECT_NE(packedCallTag(tuttiInt32, tuttiMax, 1, low, 1),
            packedCallTag(tuttiInt32, tuttiMax, 1, low ^ (uint64_t{1} << 60), 1));
  EXPECT_NE(fusedCallTag(3, low, 1), fusedCallTag(3, low ^ (uint64_t{1} << 50), 1));
  // Datatype, op and the member count are in the tag too.
  EXPECT_NE(a, packedCallTag(tuttiInt32, tuttiSum, 2, digestOf({16, 32}), 7));
  EXPECT_NE(a, packedCallTag(tuttiFloat32, tuttiMax, 2, digestOf({16, 32}), 7));
  EXPECT_NE(a, packedCallTag(tuttiFloat32, tuttiSum, 3, digestOf({16, 32}), 7));
}

TEST(CallTag, PackedTagIsNeverAPlainAllReduce) {
  algo::CollArgs args;
  args.coll = algo::Coll::kAllReduce;
  args.count = 48;
  args.dtype = tuttiFloat32;
  for (uint64_t digest : {uint64_t{0}, uint64_t{48}, digestOf({16, 32})})
    EXPECT_NE(collectiveCallTag(args, tuttiSum, false, 3),
              packedCallTag(tuttiFloat32, tuttiSum, 2, digest, 3));
}

TEST(CallTag, CallNumbersAndDescriptions) {
  const CallTag packed = packedCallTag(tuttiFloat64, tuttiMax, 3, digestOf({1, 2, 3}), 12345);
  EXPECT_EQ(collectiveCallNumber(packed), 12345u);
  const std::string text = describeCallTag(packed);
  EXPECT_NE(text.find("packed all-reduce of 3 calls"), std::string::npos) << text;
  EXPECT_NE(text.find("max"), std::string::npos) << text;
  EXPECT_NE(text.find("#12345"), std::string::npos) << text;
  const CallTag fused = fusedCallTag(1024, digestOf({9}), 99);
  EXPECT_EQ(collectiveCallNumber(fused), 99u);
  EXPECT_NE(describeCallTag(fused).find("fused group of 1024 collectives"), std::string::npos)
      << describeCallTag(fused);
}

}  // namespace
}  // namespace tutti
