// The simulator's own checks: matching, sizes, bounds, overlap rules and deadlocks produce
// precise errors; a hand-written exchange moves and reduces data.
#include "exec/simulator.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/error.h"

namespace tutti::exec {
namespace {

using S = Schedule;

std::string simError(std::vector<Schedule> s, size_t bytes = 64) {
  std::vector<std::vector<std::byte>> mem(s.size(), std::vector<std::byte>(2 * bytes));
  std::vector<SimRankBuffers> b;
  for (auto& m : mem) b.push_back({m.data(), bytes, m.data() + bytes, bytes});
  try {
    simulate(s, b);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Slice in(size_t off, size_t n) { return {Buf::kInput, off, n}; }
Slice out(size_t off, size_t n) { return {Buf::kOutput, off, n}; }

TEST(Simulator, ExchangeAndReduce) {
  std::vector<Schedule> s(2);
  for (int r = 0; r < 2; ++r) {
    s[r].algorithm = "test";
    s[r].dtype = tuttiInt32;
    s[r].op = tuttiSum;
    s[r].newRound().ops = {S::send(1 - r, in(0, 16)), S::recvReduce(1 - r, in(0, 16), out(0, 16))};
  }
  std::vector<int32_t> a = {1, 2, 3, 4}, b = {10, 20, 30, 40}, oa(4), ob(4);
  std::vector<SimRankBuffers> bufs = {
      {reinterpret_cast<std::byte*>(a.data()), 16, reinterpret_cast<std::byte*>(oa.data()), 16},
      {reinterpret_cast<std::byte*>(b.data()), 16, reinterpret_cast<std::byte*>(ob.data()), 16}};
  SimOptions opt;
  opt.cost = [](int, int) { return LinkCost{2.0, 0.5}; };
  SimResult res = simulate(s, bufs, opt);
  EXPECT_EQ(oa, (std::vector<int32_t>{11, 22, 33, 44}));
  EXPECT_EQ(ob, oa);
  EXPECT_EQ(res.ranks[0].bytesSent, 16u);
  EXPECT_EQ(res.ranks[1].bytesRecv, 16u);
  EXPECT_EQ(res.ranks[0].messagesSent, 1u);
  EXPECT_EQ(res.ranks[0].reducedBytes, 16u);
  EXPECT_EQ(res.totalBytes, 32u);
  EXPECT_DOUBLE_EQ(res.predictedSeconds, 2.0 + 0.5 * 16);
}

TEST(Simulator, SizeMismatchNamesBothSides) {
  std::vector<Schedule> s(2);
  s[0].newRound().ops = {S::send(1, in(0, 8))};
  s[1].newRound().ops = {S::recv(0, out(0, 4))};
  std::string e = simError(s);
  EXPECT_NE(e.find("receives 4 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("sends 8"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 1 round 0"), std::string::npos) << e;
}

TEST(Simulator, CountMismatch) {
  std::vector<Schedule> s(2);
  s[0].newRound().ops = {S::send(1, in(0, 8))};
  s[0].newRound().ops = {S::send(1, in(8, 8))};
  s[1].newRound().ops = {S::recv(0, out(0, 8))};
  std::string e = simError(s);
  EXPECT_NE(e.find("posts only 1 receives"), std::string::npos) << e;
}

TEST(Simulator, Deadlock) {
  std::vector<Schedule> s(2);
  for (int r = 0; r < 2; ++r) {
    s[r].newRound().ops = {S::recv(1 - r, out(0, 8))};
    s[r].newRound().ops = {S::send(1 - r, in(0, 8))};
  }
  std::string e = simError(s);
  EXPECT_NE(e.find("deadlock"), std::string::npos) << e;
  EXPECT_NE(e.find("posts the match in round 1 but is in round 0"), std::string::npos) << e;
}

TEST(Simulator, WithinRoundOverlapAndBounds) {
  std::vector<Schedule> s(2);
  s[0].newRound().ops = {S::send(1, out(0, 8)), S::recv(1, out(4, 8))};
  s[1].newRound().ops = {S::send(0, out(0, 8)), S::recv(0, out(16, 8))};
  EXPECT_NE(simError(s).find("reads bytes that op 1"), std::string::npos) << simError(s);
  s[0].rounds[0].ops = {S::recv(1, out(0, 8)), S::recv(1, out(4, 8))};
  s[1].rounds[0].ops = {S::send(0, out(0, 8)), S::send(0, out(8, 8))};
  EXPECT_NE(simError(s).find("also receives into"), std::string::npos) << simError(s);
  s[0].rounds[0].ops = {S::recv(1, out(60, 8))};
  s[1].rounds[0].ops = {S::send(0, out(0, 8))};
  EXPECT_NE(simError(s).find("exceeds the out buffer of 64 bytes"), std::string::npos)
      << simError(s);
  s[0].rounds[0].ops = {S::send(0, out(0, 8))};
  EXPECT_NE(simError(s).find("invalid peer 0"), std::string::npos) << simError(s);
  s[0].rounds[0].ops = {S::copy(out(0, 8), out(4, 8))};
  s[1].rounds[0].ops = {};
  EXPECT_NE(simError(s).find("overlap partially"), std::string::npos) << simError(s);
}

TEST(Simulator, InPlaceAliasingIsSeen) {
  // Input and output are the same memory: a send of in[0..8) and a receive into out[0..8)
  // in one round conflict.
  std::vector<Schedule> s(2);
  s[0].newRound().ops = {S::send(1, in(0, 8)), S::recv(1, out(0, 8))};
  s[1].newRound().ops = {S::send(0, in(0, 8)), S::recv(0, out(8, 8))};
  std::vector<std::byte> m0(64), m1(64);
  std::vector<SimRankBuffers> b = {{m0.data(), 64, m0.data(), 64}, {m1.data(), 64, m1.data(), 64}};
  EXPECT_THROW(simulate(s, b), Error);
  SimOptions costOnly;
  costOnly.moveData = false;
  std::vector<SimRankBuffers> nb = {{nullptr, 64, nullptr, 64}, {nullptr, 64, nullptr, 64}};
  EXPECT_NO_THROW(simulate(s, nb, costOnly));  // without addresses no aliasing is known
}

}  // namespace
}  // namespace tutti::exec
