#include "bootstrap/unique_id.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "bootstrap/host_id.h"
#include "bootstrap/rendezvous.h"
#include "common/error.h"
#include "harness/threads_harness.h"

namespace tutti::bootstrap {
namespace {

TEST(UniqueId, RoundTripIPv4AndIPv6) {
  for (const char* hp : {"10.1.2.3:29500", "[fe80::1:2]:65535", "127.0.0.1:1"}) {
    UniqueIdInfo info{SockAddr::parse(hp, "test"), randomSecret()};
    tuttiUniqueId id = encodeUniqueId(info);
    UniqueIdInfo back = decodeUniqueId(id);
    EXPECT_EQ(back.addr.toString(), hp);
    EXPECT_EQ(back.secret, info.secret);
    // Bytes after the used fields are zero (stable, comparable ids).
    for (int i = 48; i < TUTTI_UNIQUE_ID_BYTES; ++i) EXPECT_EQ(id.internal[i], 0);
  }
}

TEST(UniqueId, RejectsGarbage) {
  tuttiUniqueId id;
  std::memset(&id, 0, sizeof(id));
  EXPECT_THROW(decodeUniqueId(id), Error);
  id = encodeUniqueId({SockAddr::parse("1.2.3.4:5", "t"), randomSecret()});
  id.internal[4] = 9;  // version
  try {
    decodeUniqueId(id);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("version"), std::string::npos);
  }
}

TEST(UniqueId, SecretsDiffer) {
  EXPECT_NE(randomSecret(), randomSecret());
  Secret s = randomSecret();
  EXPECT_EQ(secretFromHex(secretToHex(s)), s);
  EXPECT_THROW(secretFromHex("xyz"), Error);
  EXPECT_THROW(secretFromHex(std::string(32, 'g')), Error);
}

TEST(UniqueId, BadIfnameListsInterfaces) {
  ::setenv("TUTTI_BOOTSTRAP_IFNAME", "nosuchif0", 1);
  try {
    advertisedAddress();
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), tuttiInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("nosuchif0"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("lo"), std::string::npos) << e.what();
  }
  ::setenv("TUTTI_BOOTSTRAP_IFNAME", "lo", 1);
  EXPECT_EQ(advertisedAddress().host(), "127.0.0.1");
  ::unsetenv("TUTTI_BOOTSTRAP_IFNAME");
}

TEST(UniqueId, RankZeroTakesTheServerAndAllRanksRendezvous) {
  ::setenv("TUTTI_BOOTSTRAP_IFNAME", "lo", 1);
  tuttiUniqueId id = makeUniqueId();
  ::unsetenv("TUTTI_BOOTSTRAP_IFNAME");
  constexpr int n = 4;
  std::vector<Rendezvous> rv(n);
  tutti::test::runThreads(n, [&](int rank) {
    rv[rank] = rendezvousFromUniqueId(id, rank, Deadline(5));
    rv[rank].store->setString("r" + std::to_string(rank), "x");
    for (int r = 0; r < n; ++r) rv[rank].store->get("r" + std::to_string(r), Deadline(5));
  });
  EXPECT_NE(rv[0].server, nullptr);
  for (int r = 1; r < n; ++r) EXPECT_EQ(rv[r].server, nullptr);
  EXPECT_EQ(takeServer(decodeUniqueId(id)), nullptr);  // owned by rank 0 now
}

TEST(UniqueId, ForkedChildNeverTakesTheParentsServer) {
  ::setenv("TUTTI_BOOTSTRAP_IFNAME", "lo", 1);
  tuttiUniqueId id = makeUniqueId();
  ::unsetenv("TUTTI_BOOTSTRAP_IFNAME");
  pid_t pid = ::fork();
  if (pid == 0) {
    // The copy's server has no thread here; the child must connect to the parent's.
    bool ok = takeServer(decodeUniqueId(id)) == nullptr;
    try {
      auto rv = rendezvousFromUniqueId(id, 0, Deadline(5));
      rv.store->setString("child", "x");
    } catch (...) {
      ok = false;
    }
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto server = takeServer(decodeUniqueId(id));
  ASSERT_NE(server, nullptr);
  TcpStore store(server->sockAddr(), server->secret(), Deadline(5));
  EXPECT_EQ(store.getString("child", Deadline(1)), "x");
}

TEST(HostId, OverrideAndDefault) {
  ::unsetenv("TUTTI_HOSTID");
  std::string a = localHostId();
  EXPECT_EQ(a, localHostId());
  EXPECT_NE(a.find(':'), std::string::npos);
  EXPECT_GT(a.size(), 10u);
  ::setenv("TUTTI_HOSTID", "node-a", 1);
  EXPECT_EQ(localHostId(), "node-a");
  ::unsetenv("TUTTI_HOSTID");
}

}  // namespace
}  // namespace tutti::bootstrap
