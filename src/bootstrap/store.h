// Key-value store used for rendezvous (Gloo-style): set / get (waits) / check / add /
// erasePrefix.
// Backends: MemoryStore (threads in one process), FileStore (a shared directory),
// TcpStore (rank 0 serves; clients present the unique id's secret), PrefixStore (namespaces
// one communicator's keys). Every wait has a deadline and honours an abort flag.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"

namespace tutti::bootstrap {

class AbortSignal;

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, std::span<const std::byte> value) = 0;
  // Waits until key exists; throws tuttiTimeout naming the key when the deadline passes,
  // tuttiRemoteError if aborted.
  virtual std::vector<std::byte> get(const std::string& key, const Deadline& deadline) = 0;
  // The same, also ended (tuttiRemoteError) when `also` is raised: the abort of one
  // communicator sharing this store (PrefixStore), which must not abort the store itself.
  // This default polls check() with a growing pause (1 ms to 10 ms); TcpStore waits on the
  // server and the signal's fd instead.
  virtual std::vector<std::byte> get(const std::string& key, const Deadline& deadline,
                                     const AbortSignal& also);
  // True if all keys exist now (never waits).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Whether each key exists now, in order (never waits). This default asks check() once per
  // key; TcpStore answers in one request (a timeout's list of missing ranks at 1024 ranks).
  virtual std::vector<bool> checkEach(const std::vector<std::string>& keys);
  // Atomically adds delta to the integer stored at key (0 if absent); returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Makes every current and future wait on this store fail promptly (tuttiCommAbort).
  virtual void abort() = 0;
  // A client of the same store for another communicator (a split child), or null when this
  // one can be shared: one whose waits do not hold up other callers. TcpStore serves one
  // request at a time per connection, so two communicators progressing at once (threads,
  // groups over several communicators) need a connection each.
  virtual std::shared_ptr<Store> separateClient() { return nullptr; }
  // Removes every key that starts with `prefix` (never waits) and returns how many. A
  // backend that cannot delete keeps them and returns 0 (CallbackStore: tuttiStore_t has no
  // delete callback).
  virtual size_t erasePrefix(const std::string& prefix) {
    (void)prefix;
    return 0;
  }
  // The local address (host part) this process reaches the store from, "" when the store is
  // not on the network (the bootstrap ring listens there, else on the advertised address).
  virtual std::string localHost() { return ""; }
  // Whether the ranks reach this store over TCP (a TcpStore) or are threads of one process
  // (a MemoryStore): only then does the bootstrap set up its ring, which listens on a TCP
  // port of each rank, so a rendezvous over a caller's store or a file opens no port.
  virtual bool onNetwork() const { return false; }

  // Convenience.
  void setString(const std::string& key, const std::string& value) {
    set(key, std::as_bytes(std::span<const char>(value.data(), value.size())));
  }
  std::string getString(const std::string& key, const Deadline& deadline) {
    auto v = get(key, deadline);
    return std::string(reinterpret_cast<const char*>(v.data()), v.size());
  }
};

}  // namespace tutti::bootstrap
