// Fuzz target: the TCP store server's handshake and request handling (what anyone who can
// reach rank 0's port may send), through TcpStoreServerDriver: the server's own code without
// sockets. The bytes are a script of chunks, each [connection u8][length u16][bytes]:
// connection % 4 picks one of three connections that presented the right secret first, or
// (3) a fresh connection that did not; bit 2 closes the connection after the chunk.
// Afterwards a new client must still be served (SET then GET returns its value): no request
// may break the server for others.
#include <array>
#include <cstring>
#include <vector>

#include "bootstrap/secret.h"
#include "bootstrap/tcp_store.h"
#include "bootstrap/tcp_store_protocol.h"
#include "fuzz_util.h"

namespace {

using tutti::bootstrap::Secret;
using tutti::bootstrap::TcpStoreServerDriver;
namespace proto = tutti::bootstrap::proto;

Secret fuzzSecret() {
  Secret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(0xa5 ^ i);
  return s;
}

std::vector<uint8_t> hello(const Secret& s) {
  std::vector<uint8_t> out;
  proto::Writer w(out);
  w.bytes(proto::kMagic, sizeof(proto::kMagic));
  w.u32(proto::kVersion);
  w.bytes(s.data(), s.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("TUTTI_DEBUG", "ERROR", 1);  // refused connections are WARN lines
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti;
  const Secret secret = fuzzSecret();
  const std::vector<uint8_t> helloBytes = hello(secret);
  TcpStoreServerDriver server(secret);
  std::array<size_t, 3> conns{};
  for (auto& c : conns) {
    c = server.connect();
    server.receive(c, helloBytes);
    if (server.takeOutput(c) != std::vector<uint8_t>{proto::kHelloOk})
      fuzz::bug("the right secret was not accepted");
  }
  fuzz::Input in(data, size);
  while (!in.empty()) {
    uint8_t sel = in.u8();
    std::string_view chunk = in.take(in.u16());
    size_t c = (sel & 3) == 3 ? server.connect() : conns[sel & 3];
    server.receive(c, {reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size()});
    (void)server.takeOutput(c);
    if (sel & 4) server.disconnect(c);
  }
  // A new client is still served.
  size_t probe = server.connect();
  std::vector<uint8_t> req = helloBytes;
  proto::Writer w(req);
  const std::string key = "fuzz-probe-key";
  const uint8_t value[3] = {7, 8, 9};
  w.u8(proto::kSet);
  w.key(key);
  w.u64(sizeof(value));
  w.bytes(value, sizeof(value));
  w.u8(proto::kGet);
  w.key(key);
  server.receive(probe, req);
  const std::vector<uint8_t> want = {
      proto::kHelloOk, proto::kOk, proto::kOk, 3, 0, 0, 0, 0, 0, 0, 0, 7, 8, 9};
  if (server.closed(probe) || server.takeOutput(probe) != want)
    fuzz::bug("after the fuzzed requests a new client's SET/GET was not answered");
  return 0;
}
