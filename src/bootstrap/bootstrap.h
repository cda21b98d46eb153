// Collective rendezvous over a Store for one communicator: all-gather and barrier with a
// deadline. Keys are "<prefix>/<seq>/<tag>/..." where seq counts this object's calls, so a
// tag may repeat. A deadline that passes throws tuttiTimeout naming the missing ranks:
//   "bootstrap comm0: rank(s) 3, 5 of 8 did not arrive at allGather 'peers' within 5.0 s"
// All-gathers and barriers go over a BootstrapRing (ring.h: the ring and its chords at powers
// of two, ceil(log2 nranks) rounds per all-gather) set up at the first one: each rank then
// makes one store request per call (its arrival key, for that message) instead of
// nranks - 1 GETs (all-gather) or 3 (barrier); TUTTI_BOOTSTRAP_RING=0 keeps them in the
// store. A split child's ring is set up without the store (adoptRing). Keys no longer needed
// are erased by rank 0: those of earlier calls when an all-gather or barrier completes, all
// at leave().
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/ring.h"
#include "bootstrap/store.h"

namespace tutti::bootstrap {

class Bootstrap {
 public:
  // useRing: -1 = TUTTI_BOOTSTRAP_RING when the store is on the network (Store::onNetwork;
  // else through the store: a caller's store or a file store opens no port), 0 = through the
  // store, 1 = the ring.
  Bootstrap(std::shared_ptr<Store> store, int rank, int nranks, std::string prefix,
            int useRing = -1);
  ~Bootstrap();

  // The first call at init: every process claims its rank and states its rank count, so a
  // rank claimed twice or ranks that disagree on nranks are a tuttiInvalidUsage on every
  // rank that took part, naming the ranks, values and processes (`self`: "host H, pid P"),
  // as soon as the offending process arrives, instead of a timeout. A timeout names the
  // ranks that never arrived.
  void join(const std::string& self, const Deadline& deadline);
  // Every rank contributes `mine`; returns all contributions indexed by rank.
  // eraseNow: the last rank to finish erases this call's keys at once (one more store
  // request per rank), for calls after which the communicator may make no other for long
  // (split).
  std::vector<std::vector<std::byte>> allGather(const std::string& tag,
                                                std::span<const std::byte> mine,
                                                const Deadline& deadline, bool eraseNow = false);
  // Returns once every rank has called barrier: the ring's tree barrier (one store request per
  // rank), else through the store (three per rank).
  void barrier(const std::string& tag, const Deadline& deadline);
  // The ring's listener, made before the ranks knew their neighbours, and the next rank's
  // RingListener::address() (a split passes both through its parent's all-gather): the ring
  // connects at the first all-gather without asking the store. Before any call; with the ring.
  void adoptRing(RingListener listener, std::string nextAddress);
  // A check for ranks that can no longer come, while a ring call waits (from its first second
  // on, at least every 100 ms): `gone` lists ranks whose process is gone (a cheap check of the
  // caller's, which may look at a slice of the ranks each time); each one that has not
  // arrived at the call (its arrival key is absent: one store check per gone rank and call)
  // is recorded in the store for the other ranks (one set) and goes to `dead` (rank, how it
  // was found), which throws (e.g. an error naming it); that exception ends the call
  // unchanged. The ranks whose ring neighbour then gives up read the record (one get) and
  // call `dead` with it too, so every rank names the rank that died, not its neighbour. A gone
  // rank that has arrived may have finished the call and exited, as ranks do after their
  // last call: it is not reported. Between calls, from their thread.
  void setWatch(std::function<std::vector<int>()> gone,
                std::function<void(int, const std::string&)> dead);
  // "host H, pid P" of a rank, for the ranks a timeout names (once the caller knows them).
  void setDescribe(std::function<std::string(int)> describe) { describe_ = std::move(describe); }
  // The last use of the store: ranks > 0 announce they are done with it and return at once
  // (their announcement is acknowledged by the store); rank 0 returns once all have, after
  // which it may stop the TcpStoreServer without failing anyone's pending request.
  void leave(const Deadline& deadline);
  // Fails every current and future wait (the underlying store and the ring are aborted).
  void abort();
  bool usesRing() const { return useRing_; }
  // Where this rank's ring listens: the address it reaches the store from, else the
  // advertised one (TUTTI_BOOTSTRAP_IFNAME).
  std::string ringHost() const;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const std::shared_ptr<Store>& store() const { return store_; }

 private:
  std::string base(const std::string& tag, uint64_t seq) const;
  std::string seqPrefix(uint64_t seq) const;
  // `what` names the call in errors: "allGather" or "barrier" (over the ring: its tree
  // barrier, returning no entries).
  std::vector<std::vector<std::byte>> gather(const char* what, const std::string& tag,
                                             std::span<const std::byte> mine,
                                             const Deadline& deadline, bool eraseNow);
  std::vector<std::vector<std::byte>> storeAllGather(const char* what, const std::string& tag,
                                                     const std::string& b,
                                                     std::span<const std::byte> mine,
                                                     const Deadline& deadline);
  std::vector<std::vector<std::byte>> ringAllGather(const char* what, const std::string& tag,
                                                    const std::string& b,
                                                    std::span<const std::byte> mine,
                                                    const Deadline& deadline);
  // The ring's watch for the call whose keys are under b (setWatch).
  std::function<void()> watchFor(const std::string& b);
  // Rank 0: erases the keys of calls [erasedSeq_, upTo).
  void eraseBefore(uint64_t upTo);
  // Ranks whose key base/<r> does not exist now (one checkEach request).
  std::vector<int> missing(const std::string& base);
  // tuttiTimeout naming the ranks missing from the call (at most 32, with describe_'s text);
  // when none is missing, that the call did not complete and why (stalled: the wait's error).
  [[noreturn]] void throwMissing(const std::string& what, const std::string& tag,
                                 const std::string& base, const Deadline& deadline,
                                 const std::string& stalled = "");

  std::shared_ptr<Store> store_;
  int rank_;
  int nranks_;
  std::string prefix_;
  uint64_t seq_ = 0;
  uint64_t erasedSeq_ = 0;
  bool useRing_;
  std::mutex ringMu_;  // guards ring_ creation against abort() from another thread
  std::unique_ptr<BootstrapRing> ring_;
  bool aborted_ = false;
  std::unique_ptr<RingListener> adopted_;  // adoptRing's, until the ring connects
  std::string adoptedNext_;
  std::function<std::vector<int>()> gone_;
  std::function<void(int, const std::string&)> dead_;
  std::function<std::string(int)> describe_;
  // After a ring neighbour gave up in call base b: calls dead_ with the rank another rank's
  // watch recorded as gone in this call, if any (else returns).
  void throwGoneRecord(const std::string& b);
  bool watchThrew_ = false;
};

}  // namespace tutti::bootstrap
