#include "bootstrap/hostlist.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace tutti::bootstrap {
namespace {

using V = std::vector<std::string>;

V expand(const std::string& s) { return expandHostlist(s, "LIST"); }

void expectBad(const std::string& list, const std::string& needle) {
  try {
    expandHostlist(list, "SLURM_JOB_NODELIST");
    ADD_FAILURE() << "'" << list << "' expanded without an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
    std::string m = e.what();
    EXPECT_NE(m.find("SLURM_JOB_NODELIST='" + list + "'"), std::string::npos) << m;
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  }
  EXPECT_THROW(firstHost(list, "X"), Error) << list;
}

TEST(Hostlist, PlainNames) {
  EXPECT_EQ(expand("vm"), V{"vm"});
  EXPECT_EQ(expand("a,b,c-1.example"), (V{"a", "b", "c-1.example"}));
}

TEST(Hostlist, RangesAndSingles) {
  EXPECT_EQ(expand("node[01-04,07]"), (V{"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(expand("a,b[1-2]"), (V{"a", "b1", "b2"}));
  EXPECT_EQ(expand("n[3]"), V{"n3"});
  EXPECT_EQ(expand("gpu[9-11]-ib"), (V{"gpu9-ib", "gpu10-ib", "gpu11-ib"}));
}

TEST(Hostlist, PaddingFollowsTheLowerBound) {
  EXPECT_EQ(expand("node[08-10]"), (V{"node08", "node09", "node10"}));
  EXPECT_EQ(expand("node[098-101]"), (V{"node098", "node099", "node100", "node101"}));
  EXPECT_EQ(expand("n[8-10]"), (V{"n8", "n9", "n10"}));
  EXPECT_EQ(expand("n[0-1]"), (V{"n0", "n1"}));  // a lone 0 is no padding
  EXPECT_EQ(expand("n[007,5]"), (V{"n007", "n5"}));
}

TEST(Hostlist, SeveralGroupsMultiplyLeftmostSlowest) {
  EXPECT_EQ(expand("r[1-2]-n[01-03]"),
            (V{"r1-n01", "r1-n02", "r1-n03", "r2-n01", "r2-n02", "r2-n03"}));
  EXPECT_EQ(expand("x[1-2],r[5]n[7,9]"), (V{"x1", "x2", "r5n7", "r5n9"}));
}

TEST(Hostlist, FirstHostMatchesTheExpansion) {
  for (const char* l : {"vm", "node[01-04,07]", "a,b[1-2]", "r[2-3]-n[08-09]", "[5-6]x"})
    EXPECT_EQ(firstHost(l, "L"), expand(l).front()) << l;
}

TEST(Hostlist, MalformedInputIsAnErrorSayingWhy) {
  expectBad("", "empty");
  expectBad("a,,b", "an empty host name");
  expectBad("a,", "an empty host name");
  expectBad("node[1-3", "'[' without ']'");
  expectBad("node1-3]", "']' without '['");
  expectBad("node[1-[2]]", "nested");
  expectBad("node[]", "an empty range");
  expectBad("node[1,,2]", "an empty range");
  expectBad("node[4-2]", "runs backwards");
  expectBad("node[a-b]", "not a number");
  expectBad("node[1-]", "not a number");
  expectBad("node[-3]", "not a number");
  expectBad("node a", "space");
}

TEST(Hostlist, TooManyHostsIsAnError) {
  EXPECT_EQ(expandHostlist("n[1-4]", "L", 4).size(), 4u);
  EXPECT_THROW(expandHostlist("n[1-4],m", "L", 4), Error);
  EXPECT_THROW(expandHostlist("n[1-1000]x[1-1000]y[1-1000]", "L"), Error);
  // The first host does not expand the rest.
  EXPECT_EQ(firstHost("n[1-1000]x[1-1000]y[1-1000]", "L"), "n1x1y1");
}

}  // namespace
}  // namespace tutti::bootstrap
