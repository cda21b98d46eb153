#include "bootstrap/bootstrap.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bootstrap/unique_id.h"
#include "common/env.h"
#include "common/error.h"

namespace tutti::bootstrap {

namespace {
constexpr auto kWatchGrace = std::chrono::seconds(1);
}  // namespace

Bootstrap::Bootstrap(std::shared_ptr<Store> store, int rank, int nranks, std::string prefix,
                     int useRing)
    : store_(std::move(store)),
      rank_(rank),
      nranks_(nranks),
      prefix_(std::move(prefix)),
      useRing_(useRing >= 0 ? useRing != 0
                            : store_ != nullptr && store_->onNetwork() &&
                                  env::getBool("TUTTI_BOOTSTRAP_RING")) {
  TUTTI_CHECK_ARG(store_ != nullptr, "Bootstrap: null store");
  TUTTI_CHECK_ARG(nranks_ > 0, "Bootstrap: nranks ", nranks_, " must be positive");
  TUTTI_CHECK_ARG(rank_ >= 0 && rank_ < nranks_, "Bootstrap: rank ", rank_, " out of range 0..",
                  nranks_ - 1);
}

Bootstrap::~Bootstrap() = default;

std::string Bootstrap::seqPrefix(uint64_t seq) const {
  return prefix_ + "/" + std::to_string(seq) + "/";
}

std::string Bootstrap::base(const std::string& tag, uint64_t seq) const {
  return seqPrefix(seq) + tag;
}

void Bootstrap::eraseBefore(uint64_t upTo) {
  for (; erasedSeq_ < upTo; ++erasedSeq_) store_->erasePrefix(seqPrefix(erasedSeq_));
}

std::vector<int> Bootstrap::missing(const std::string& b) {
  std::vector<std::string> keys;
  keys.reserve(nranks_);
  for (int r = 0; r < nranks_; ++r) keys.push_back(b + "/" + std::to_string(r));
  std::vector<bool> present = store_->checkEach(keys);  // one request over TCP
  std::vector<int> out;
  for (int r = 0; r < nranks_; ++r)
    if (!present[r]) out.push_back(r);
  return out;
}

void Bootstrap::throwMissing(const std::string& what, const std::string& tag, const std::string& b,
                             const Deadline& deadline, const std::string& stalled) {
  std::vector<int> miss = missing(b);
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f", deadline.totalSeconds());
  const std::string call = what + " '" + tag + "' within " + secs + " s";
  if (miss.empty())  // every rank came, but the call did not complete in time
    fail(tuttiTimeout, "bootstrap ", prefix_, ": every rank of ", nranks_, " arrived at ", call,
         " but it did not complete",
         stalled.empty() ? std::string(" (they arrived just before the deadline)")
                         : " (" + stalled + ")");
  std::string list;
  constexpr size_t kListed = 32;
  for (size_t i = 0; i < miss.size() && i < kListed; ++i) {
    list += (i ? ", " : "") + std::to_string(miss[i]);
    if (describe_) list += " (" + describe_(miss[i]) + ")";
  }
  if (miss.size() > kListed) list += " and " + std::to_string(miss.size() - kListed) + " more";
  const bool roll = tag == "join";
  fail(tuttiTimeout, "bootstrap ", prefix_, ": rank(s) ", list, " of ", nranks_,
       " did not arrive at ", call,
       roll ? std::string(": no process claimed them (the launcher did not start them, they "
                          "were given another unique id, store or rank count, or they are "
                          "still starting)")
            : std::string());
}

// Keys of a join (b = its base): claim/<r> counts the processes claiming rank r; who/<r>/<k>
// describes the k-th of them; arrived counts the processes; size holds the first arrival's
// rank count, against which every later one compares its own; verdict is "ok" (from the
// arrival that completes nranks, after checking every rank was claimed once) or the error
// found by a process, whichever comes first (decided counts the candidates). Every process
// waits for the verdict.
void Bootstrap::join(const std::string& self, const Deadline& deadline) {
  std::string b = base("join", seq_++);
  if (nranks_ == 1) return;
  const std::string me = "rank " + std::to_string(rank_) + " (" + self + ")";
  // The first process to decide sets the verdict (an error found later, by a process that
  // arrived after the ranks had all been counted, fails that process alone).
  auto decide = [&]() { return store_->add(b + "/decided", 1) == 1; };
  auto refuse = [&](const std::string& what) {
    std::string text = "bootstrap " + prefix_ + ": " + what;
    if (decide()) store_->setString(b + "/verdict", text);
    fail(tuttiInvalidUsage, text);
  };
  const int64_t claim = store_->add(b + "/claim/" + std::to_string(rank_), 1);
  store_->setString(b + "/who/" + std::to_string(rank_) + "/" + std::to_string(claim),
                    std::to_string(nranks_) + "\n" + self);
  if (claim > 1) {
    std::string first = "another process";
    try {
      std::string v = store_->getString(b + "/who/" + std::to_string(rank_) + "/1", Deadline(1.0));
      first = v.substr(v.find('\n') + 1);
    } catch (const Error&) {
    }
    refuse("two processes claim rank " + std::to_string(rank_) + ": " + first + " and " + self +
           " (each rank of the " + std::to_string(nranks_) + " must be given to one process)");
  }
  const int64_t arrival = store_->add(b + "/arrived", 1);
  if (arrival == 1) {
    store_->setString(b + "/size", std::to_string(nranks_) + "\n" + me);
  } else {
    std::string ref;
    try {
      ref = store_->getString(b + "/size", deadline);
    } catch (const Error& e) {
      if (e.code() != tuttiTimeout) throw;
      throwMissing("init", "join", b + "/claim", deadline);
    }
    size_t nl = ref.find('\n');
    int theirs = std::atoi(ref.substr(0, nl).c_str());
    if (theirs != nranks_)
      refuse("the processes disagree on the number of ranks: " + me +
             " says nranks=" + std::to_string(nranks_) + " but " + ref.substr(nl + 1) +
             " says nranks=" + std::to_string(theirs));
  }
  if (arrival == nranks_) {
    std::string unclaimed, twice;
    for (int r = 0; r < nranks_; ++r) {
      int64_t n = store_->add(b + "/claim/" + std::to_string(r), 0);
      if (n == 0) unclaimed += (unclaimed.empty() ? "" : ", ") + std::to_string(r);
      if (n > 1) twice += (twice.empty() ? "" : ", ") + std::to_string(r);
    }
    if (unclaimed.empty() && twice.empty()) {
      if (decide()) store_->setString(b + "/verdict", "ok");
    } else {
      refuse(std::to_string(nranks_) + " processes arrived but rank(s) " +
             (unclaimed.empty() ? "?" : unclaimed) + " of " + std::to_string(nranks_) +
             " were not claimed" +
             (twice.empty() ? "" : " and rank(s) " + twice + " were claimed twice"));
    }
  }
  std::string verdict;
  try {
    verdict = store_->getString(b + "/verdict", deadline);
  } catch (const Error& e) {
    if (e.code() != tuttiTimeout) throw;
    throwMissing("init", "join", b + "/claim", deadline);
  }
  if (verdict != "ok") fail(tuttiInvalidUsage, verdict);
}

std::vector<std::vector<std::byte>> Bootstrap::allGather(const std::string& tag,
                                                         std::span<const std::byte> mine,
                                                         const Deadline& deadline, bool eraseNow) {
  return gather("allGather", tag, mine, deadline, eraseNow);
}

std::vector<std::vector<std::byte>> Bootstrap::gather(const char* what, const std::string& tag,
                                                      std::span<const std::byte> mine,
                                                      const Deadline& deadline, bool eraseNow) {
  const uint64_t seq = seq_++;
  std::string b = base(tag, seq);
  if (nranks_ == 1) return {std::vector<std::byte>(mine.begin(), mine.end())};
  auto all = useRing_ ? ringAllGather(what, tag, b, mine, deadline)
                      : storeAllGather(what, tag, b, mine, deadline);
  // Rank 0 has every rank's entry of this call: every rank has started it, so has finished
  // the earlier calls, whose keys nobody reads again (a communicator that only splits would
  // otherwise keep each split's keys until it is destroyed).
  if (rank_ == 0) eraseBefore(seq_ - 1);
  if (eraseNow && store_->add(b + "/finished", 1) == nranks_) store_->erasePrefix(seqPrefix(seq));
  return all;
}

std::vector<std::vector<std::byte>> Bootstrap::storeAllGather(const char* what,
                                                              const std::string& tag,
                                                              const std::string& b,
                                                              std::span<const std::byte> mine,
                                                              const Deadline& deadline) {
  store_->set(b + "/" + std::to_string(rank_), mine);
  std::vector<std::vector<std::byte>> all(nranks_);
  all[rank_].assign(mine.begin(), mine.end());
  for (int i = 1; i < nranks_; ++i) {
    int r = (rank_ + i) % nranks_;  // staggered so ranks do not all wait on rank 0 first
    try {
      all[r] = store_->get(b + "/" + std::to_string(r), deadline);
    } catch (const Error& e) {
      if (e.code() != tuttiTimeout) throw;
      throwMissing(what, tag, b, deadline);
    }
  }
  return all;
}

std::vector<std::vector<std::byte>> Bootstrap::ringAllGather(const char* what,
                                                             const std::string& tag,
                                                             const std::string& b,
                                                             std::span<const std::byte> mine,
                                                             const Deadline& deadline) {
  BootstrapRing* ring = nullptr;
  bool fresh = false;
  {
    std::lock_guard lock(ringMu_);
    if (aborted_) fail(tuttiRemoteError, "bootstrap ", prefix_, ": aborted");
    if (!ring_) {
      ring_ = std::make_unique<BootstrapRing>("bootstrap " + prefix_, rank_, nranks_);
      fresh = true;
    }
    ring = ring_.get();
  }
  ring->setWatch(watchFor(b));
  try {
    if (fresh && !adopted_) {
      // The first all-gather publishes the ring addresses as its arrival keys.
      ring->connect(*store_, b + "/" + std::to_string(rank_),
                    b + "/" + std::to_string((rank_ + 1) % nranks_), ringHost(), deadline);
    } else {
      store_->set(b + "/" + std::to_string(rank_), {});  // arrival, for a timeout's message
      if (fresh) {  // a split child's ring: addresses passed by the parent
        ring->connect(std::move(*adopted_), adoptedNext_, deadline);
        adopted_.reset();
      }
    }
    const std::string label = std::string(what) + " '" + tag + "'";
    if (std::string_view(what) == "barrier") {  // nothing to gather: the ring's tree barrier
      ring->barrier(deadline, label);
      return {};
    }
    return ring->allGather(mine, deadline, label);
  } catch (const Error& e) {
    if (watchThrew_) throw;  // the watch's own verdict (e.g. a rank's process is gone)
    if (e.code() == tuttiRemoteError) throwGoneRecord(b);
    if (e.code() == tuttiRemoteError && !missing(b).empty()) {
      // A neighbour gave up because some rank never came: report those ranks at the
      // deadline, as every other rank will.
      ring->sleepUntil(deadline);
      throwMissing(what, tag, b, deadline);
    }
    if (e.code() != tuttiTimeout) throw;
    throwMissing(what, tag, b, deadline, e.what());
  }
}

std::string Bootstrap::ringHost() const {
  std::string host = store_->localHost();
  return host.empty() ? advertisedAddress().host() : host;
}

void Bootstrap::setWatch(std::function<std::vector<int>()> gone,
                         std::function<void(int, const std::string&)> dead) {
  gone_ = std::move(gone);
  dead_ = std::move(dead);
}

std::function<void()> Bootstrap::watchFor(const std::string& b) {
  if (!gone_ || !dead_) return {};
  // Not in the first second of a call: most calls end by then, and ranks that finished the
  // job's last call exit, so checks would find them gone (and arrived) at every wait.
  auto start = std::chrono::steady_clock::now();
  auto arrived = std::make_shared<std::vector<bool>>(nranks_, false);
  return [this, b, start, arrived] {
    if (std::chrono::steady_clock::now() - start < kWatchGrace) return;
    try {
      for (int r : gone_()) {
        if (r == rank_ || (*arrived)[r]) continue;
        try {
          // An arrival key stays until every rank has finished this call.
          (*arrived)[r] = store_->check({b + "/" + std::to_string(r)});
        } catch (const Error&) {
          // The store is unreachable (its process may be the one gone): not arrived.
        }
        if ((*arrived)[r]) continue;
        try {
          store_->setString(b + "/gone", std::to_string(r) + " " + std::to_string(rank_));
        } catch (const Error&) {
        }
        dead_(r, "its process is gone");
      }
    } catch (...) {
      watchThrew_ = true;
      throw;
    }
  };
}

void Bootstrap::throwGoneRecord(const std::string& b) {
  if (!dead_) return;
  std::string record;
  try {
    if (!store_->check({b + "/gone"})) return;
    record = store_->getString(b + "/gone", Deadline(1.0));
  } catch (const Error&) {
    return;  // the store is gone too: the caller reports what it knows
  }
  int gone = -1, finder = -1;
  if (std::sscanf(record.c_str(), "%d %d", &gone, &finder) != 2 || gone < 0 || gone >= nranks_)
    return;
  dead_(gone, "its process is gone, found by rank " + std::to_string(finder) + " on its host");
}

void Bootstrap::adoptRing(RingListener listener, std::string nextAddress) {
  TUTTI_CHECK_ARG(useRing_ && seq_ == 0, "Bootstrap::adoptRing: before any call, with the ring");
  adopted_ = std::make_unique<RingListener>(std::move(listener));
  adoptedNext_ = std::move(nextAddress);
}

void Bootstrap::barrier(const std::string& tag, const Deadline& deadline) {
  if (useRing_ || nranks_ == 1) {
    gather("barrier", tag, {}, deadline, false);  // ends once every rank has started it
    return;
  }
  std::string b = base(tag, seq_++);
  store_->set(b + "/" + std::to_string(rank_), {});
  if (store_->add(b + "/count", 1) == nranks_) store_->set(b + "/done", {});
  try {
    store_->get(b + "/done", deadline);
  } catch (const Error& e) {
    if (e.code() != tuttiTimeout) throw;
    throwMissing("barrier", tag, b, deadline);
  }
  // Every rank has finished every earlier call: their keys are not read again.
  if (rank_ == 0) eraseBefore(seq_ - 1);
}

void Bootstrap::leave(const Deadline& deadline) {
  std::string b = base("leave", seq_++);
  if (rank_ != 0) {
    store_->set(b + "/" + std::to_string(rank_), {});
    return;
  }
  for (int r = 1; r < nranks_; ++r) {
    try {
      store_->get(b + "/" + std::to_string(r), deadline);
    } catch (const Error& e) {
      if (e.code() != tuttiTimeout) throw;
      store_->set(b + "/0", {});  // rank 0 is not missing
      throwMissing("leave", "leave", b, deadline);
    }
  }
  store_->erasePrefix(prefix_ + "/");  // everyone is done with this bootstrap's keys
  erasedSeq_ = seq_;
}

void Bootstrap::abort() {
  store_->abort();
  std::lock_guard lock(ringMu_);
  aborted_ = true;
  if (ring_) ring_->abort();
}

}  // namespace tutti::bootstrap
