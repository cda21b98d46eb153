// Recovery after failures (recovery.h).
#include "comm/recovery.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include "bootstrap/tcp_store.h"
#include "bootstrap/unique_id.h"
#include "comm/test_die.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti {

namespace {

constexpr double kLeaderGoneGraceSeconds = 2.0;  // a broken leader's process seen gone within
constexpr double kFirstProbeSeconds = 0.05;      // missing ranks are probed first after this,
constexpr double kProbePeriodSeconds = 0.5;      // then this often
constexpr double kHandshakeTrySeconds = 2.0;     // one try at a standby store's handshake
constexpr const char* kEpochKey = "agree/epoch";  // the leader's current round

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s.empty() ? "none" : s;
}

std::vector<int> parseRankList(const std::string& text) {
  std::vector<int> out;
  std::istringstream in(text);
  int r = 0;
  while (in >> r) out.push_back(r);
  return out;
}

std::string encodeRankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : " ") + std::to_string(r);
  return s;
}

double secondsSince(const Deadline& d) { return d.totalSeconds() - d.secondsLeft(); }

}  // namespace

std::unique_ptr<bootstrap::StandbyStore> openStandby(bootstrap::Store& store) {
  try {
    std::string host = store.localHost();
    if (host.empty()) host = bootstrap::advertisedAddress().host();
    return std::make_unique<bootstrap::StandbyStore>(host);
  } catch (const Error& e) {
    TUTTI_WARN(kInit, "no standby store, tuttiCommShrink will fail: " << e.what());
    return nullptr;
  }
}

Recovery::Recovery(int rank, std::shared_ptr<const Membership> membership, const PeerProbe& probe,
                   std::unique_ptr<bootstrap::StandbyStore> standby)
    : rank_(rank),
      nranks_(membership->size()),
      membership_(std::move(membership)),
      probe_(probe),
      standby_(std::move(standby)) {}

std::shared_ptr<bootstrap::Store> Recovery::connectStandby(int r, const Deadline& deadline) {
  if (!membership_->standbyOf[r].valid())
    fail(tuttiUnsupported, describe(r),
         " has no standby store (it could not listen at init: see its warning), so this "
         "communicator cannot shrink or agree");
  if (r == rank_) standby_->serve();
  for (;;) {
    if (probe_.probe(r, deadline) != bootstrap::Liveness::kAlive && r != rank_) return nullptr;
    if (deadline.expired())
      fail(tuttiTimeout, describe(r), " did not serve its standby store at ",
           membership_->standbyOf[r].addr.toString(), " within ", deadline.totalSeconds(),
           " s (alive, but not in this call?)");
    // The rank may not have reached this call yet: its kernel holds the connection until
    // it serves; a try that times out is repeated as long as the rank is alive.
    Deadline attempt(std::min(kHandshakeTrySeconds, std::max(0.0, deadline.secondsLeft())));
    try {
      return std::make_shared<bootstrap::TcpStore>(membership_->standbyOf[r].addr,
                                                   membership_->standbyOf[r].secret, attempt);
    } catch (const Error& e) {
      if (e.code() == tuttiInvalidArgument) throw;
      TUTTI_TRACE(kInit, "rank " << rank_ << ": standby store of rank " << r << ": " << e.what());
    }
  }
}

std::map<int, std::string> Recovery::gatherMembers(bootstrap::Store& store, const std::string& base,
                                                   const std::vector<int>& members,
                                                   const std::string& mine,
                                                   const Deadline& deadline,
                                                   const std::string& what) {
  std::map<int, std::string> values;
  values[rank_] = mine;
  std::vector<int> pending;
  for (int r : members)
    if (r != rank_) pending.push_back(r);
  auto failIfOneFailed = [&] {
    for (int r : pending) {
      bootstrap::Liveness l = probe_.probe(r, deadline);
      if (l != bootstrap::Liveness::kAlive)
        fail(tuttiRemoteError, what, ": ", describe(r),
             " has failed (its standby address: ", bootstrap::livenessName(l),
             "); pass it in excludeRanksList (tuttiCommAgreeFailedRanks lists the failed ranks)");
    }
  };
  try {
    store.setString(base + "/" + std::to_string(rank_), mine);
    gatherPending(store, base, values, pending, deadline, what, failIfOneFailed);
  } catch (const Error& e) {
    // The meeting store went away (its rank gave up, having found a failed member first):
    // name that member rather than the store.
    if (e.code() != tuttiRemoteError || pending.empty()) throw;
    failIfOneFailed();
    throw;
  }
  return values;
}

void Recovery::gatherPending(bootstrap::Store& store, const std::string& base,
                             std::map<int, std::string>& values, std::vector<int>& pending,
                             const Deadline& deadline, const std::string& what,
                             const std::function<void()>& failIfOneFailed) {
  double nextProbe = nowSeconds() + kFirstProbeSeconds;
  while (!pending.empty()) {
    for (auto it = pending.begin(); it != pending.end();) {
      std::string key = base + "/" + std::to_string(*it);
      if (store.check({key})) {
        values[*it] = store.getString(key, deadline);
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    if (pending.empty()) break;
    if (nowSeconds() >= nextProbe) {
      failIfOneFailed();
      nextProbe = nowSeconds() + kProbePeriodSeconds;
    }
    if (deadline.expired())
      fail(tuttiTimeout, what, ": rank(s) ", rankList(pending), " did not take part within ",
           deadline.totalSeconds(), " s (they are alive: their standby addresses answer)");
    ::usleep(5000);
  }
}

std::vector<int> Recovery::survivorsWithout(std::span<const int> exclude) const {
  std::vector<bool> out(nranks_, false);
  for (int x : exclude) {
    TUTTI_CHECK_ARG(x >= 0 && x < nranks_, "excludeRanksList holds rank ", x, ", out of range [0, ",
                    nranks_, ")");
    TUTTI_CHECK_ARG(!out[x], "excludeRanksList holds rank ", x, " twice");
    out[x] = true;
  }
  TUTTI_CHECK_ARG(static_cast<int>(exclude.size()) < nranks_, "excludeRanksList excludes all ",
                  nranks_, " ranks: no communicator is left");
  TUTTI_CHECK_ARG(!out[rank_], "this rank (", rank_,
                  ") is in excludeRanksList: excluded ranks do not call tuttiCommShrink");
  std::vector<int> survivors;
  for (int r = 0; r < nranks_; ++r)
    if (!out[r]) survivors.push_back(r);
  return survivors;
}

Recovery::Meeting Recovery::meetSurvivors(std::vector<int> survivors, std::span<const int> exclude,
                                          const Deadline& deadline) {
  const char* what = "tuttiCommShrink";
  std::vector<int> excluded(exclude.begin(), exclude.end());
  std::sort(excluded.begin(), excluded.end());
  const int leader = survivors[0];
  Meeting m;
  m.newRank =
      static_cast<int>(std::find(survivors.begin(), survivors.end(), rank_) - survivors.begin());
  m.prefix = "shrink" + std::to_string(shrinkCount_++);
  if (leader == rank_) m.server = standby_ ? standby_->serve() : nullptr;
  m.store = connectStandby(leader, deadline);
  if (!m.store)
    fail(tuttiRemoteError, what, ": ", describe(leader),
         ", the new communicator's rank 0, has failed (its standby address refuses connections "
         "or does not answer); pass it in excludeRanksList");
  // Every survivor must exclude the same ranks: a difference is an error on every rank.
  auto lists = gatherMembers(*m.store, m.prefix + "/exclude", survivors, encodeRankList(excluded),
                             deadline, what);
  for (const auto& [r, list] : lists) {
    if (list == encodeRankList(excluded)) continue;
    fail(tuttiInvalidUsage, what, ": rank ", rank_, " excludes ranks {", rankList(excluded),
         "} but rank ", r, " excludes {", rankList(parseRankList(list)),
         "}: every surviving rank must pass the same excludeRanksList");
  }
  TUTTI_INFO(kInit, "rank " << rank_ << ": shrinking to " << survivors.size() << " ranks without {"
                            << rankList(excluded) << "}, new rank " << m.newRank
                            << " (rendezvous at rank " << leader << "'s standby store, "
                            << secondsSince(deadline) << " s)");
  m.survivors = std::move(survivors);
  return m;
}

void Recovery::buildWatched(const Meeting& meeting, const std::function<void()>& build) {
  const std::vector<int>& survivors = meeting.survivors;
  bootstrap::Store* store = meeting.store.get();
  // The other survivors are probed at their standby addresses while the new communicator is
  // built: one that dies meanwhile ends the build at once (its waits would last the whole
  // timeout) and is named in this communicator's numbering.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int died = -1;
  std::thread watcher([&] {
    std::unique_lock lock(mu);
    auto period = std::chrono::milliseconds(250);
    while (!cv.wait_for(lock, period, [&] { return done; })) {
      lock.unlock();
      int found = -1;
      for (int r : survivors) {
        if (r == rank_) continue;
        Deadline probeDeadline(PeerProbe::kProbeSeconds);
        if (probe_.probe(r, probeDeadline) != bootstrap::Liveness::kAlive) {
          found = r;
          break;
        }
      }
      lock.lock();
      if (found >= 0) {
        died = found;
        store->abort();
        return;
      }
      period = std::chrono::milliseconds(500);
    }
  });
  auto stopWatching = [&] {
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_all();
    watcher.join();
  };
  const std::string numbering = "new ranks 0-" + std::to_string(survivors.size() - 1) +
                                " are ranks " + rankList(survivors) +
                                " of the communicator being shrunk";
  try {
    build();
    stopWatching();
  } catch (const Error& e) {
    stopWatching();
    if (died >= 0) {
      const auto at = std::find(survivors.begin(), survivors.end(), died) - survivors.begin();
      fail(tuttiRemoteError, "tuttiCommShrink: ", describe(died), " (new rank ", at,
           ") failed during the shrink (its standby address no longer answers); ", numbering);
    }
    fail(e.code(), e.what(), "; ", numbering);
  }
}

// Rounds of the agreement are numbered by their leader, in its own standby store: the leader
// posts "agree/epoch" = e when it starts leading a call, and every key of that round lives
// under "agree/<e>". A follower posts in the leader's current round and follows it to the next
// when the leader starts one (its previous round timed out): ranks whose calls start out of
// step -- one late from a split that waited for a dead rank, the others already retrying --
// still meet in the leader's round (issue 68, F2). A local call counter would have put them
// in different rounds forever.
std::vector<int> Recovery::agreeFailedRanks(const Deadline& deadline) {
  std::vector<bool> dead(nranks_, false);
  for (;;) {
    // The lowest rank not known dead leads; every rank finds the same one, as a dead
    // rank's standby address refuses everyone.
    int leader = 0;
    while (dead[leader]) ++leader;
    std::vector<int> failed;
    try {
      std::shared_ptr<bootstrap::Store> store = connectStandby(leader, deadline);
      if (!store) {
        dead[leader] = true;
        continue;
      }
      if (leader == rank_) {
        const long epoch = ++ledEpochs_;
        store->setString(kEpochKey, std::to_string(epoch));
        failed = leadAgreement(*store, "agree/" + std::to_string(epoch), deadline);
      } else {
        failed = followAgreement(*store, leader, deadline);
      }
    } catch (const Error& e) {
      // The leader went away (its store closed the connection): when it has failed, the
      // next lowest rank leads. Every follower must fail over alike, or their agreements
      // drift apart (issue 30, E2).
      if (leader == rank_ || e.code() == tuttiTimeout || !leaderGone(leader, deadline)) throw;
      dead[leader] = true;
      continue;
    }
    TUTTI_INFO(kInit, "rank " << rank_ << ": agreed failed ranks {" << rankList(failed)
                              << "} (led by rank " << leader << ", " << secondsSince(deadline)
                              << " s)");
    return failed;
  }
}

long Recovery::leaderEpochAfter(bootstrap::Store& store, long after, const Deadline& deadline) {
  for (;;) {
    if (store.check({kEpochKey})) {
      const long e = std::stol(store.getString(kEpochKey, deadline));
      if (e > after) return e;
    }
    if (deadline.expired())
      fail(tuttiTimeout, "tuttiCommAgreeFailedRanks: rank ", rank_,
           ": the leader did not start a round of the agreement within ", deadline.totalSeconds(),
           " s (alive, but not in this call?)");
    ::usleep(5000);
  }
}

std::vector<int> Recovery::followAgreement(bootstrap::Store& store, int leader,
                                           const Deadline& deadline) {
  long& done = followedEpochs_[leader];  // the last round of this leader this rank finished
  long epoch = leaderEpochAfter(store, done, deadline);
  for (;;) {
    const std::string base = "agree/" + std::to_string(epoch);
    store.setString(base + "/in/" + std::to_string(rank_), "");
    for (;;) {
      if (store.check({base + "/out"})) {
        std::vector<int> failed = parseRankList(store.getString(base + "/out", deadline));
        // A round that ended without this rank (taken for failed: a stalled probe) is not its
        // answer: it waits for the leader's next round.
        if (std::find(failed.begin(), failed.end(), rank_) == failed.end()) {
          store.setString(base + "/ack/" + std::to_string(rank_), "");
          done = epoch;
          return failed;
        }
        done = epoch;
        epoch = leaderEpochAfter(store, epoch, deadline);
        break;
      }
      // The leader gave this round up (it timed out) and leads a new one: post there.
      if (const long now = std::stol(store.getString(kEpochKey, deadline)); now != epoch) {
        epoch = now;
        break;
      }
      if (deadline.expired())
        fail(tuttiTimeout, "tuttiCommAgreeFailedRanks: rank ", rank_, ": no answer from ",
             describe(leader), ", the agreement's leader, within ", deadline.totalSeconds(), " s");
      ::usleep(5000);
    }
  }
}

std::vector<int> Recovery::leadAgreement(bootstrap::Store& store, const std::string& base,
                                         const Deadline& deadline) {
  // Waits for every rank to post, or to be found dead at its standby address.
  std::vector<bool> took(nranks_, false), dead(nranks_, false);
  took[rank_] = true;
  std::vector<int> pending;
  for (int r = 0; r < nranks_; ++r)
    if (r != rank_) pending.push_back(r);
  auto waitFor = [&](const std::string& sub, bool failAtDeadline) {
    double nextProbe = nowSeconds() + kFirstProbeSeconds;
    while (!pending.empty()) {
      for (auto it = pending.begin(); it != pending.end();) {
        if (store.check({base + "/" + sub + "/" + std::to_string(*it)})) {
          took[*it] = true;
          it = pending.erase(it);
        } else {
          ++it;
        }
      }
      if (pending.empty()) return;
      // Test-only (TUTTI_TEST_DIE_AT=agree:<rank>): the leader dies once a follower posted.
      if (sub == "in" && pending.size() + 1 < static_cast<size_t>(nranks_))
        testDieAt("agree", rank_);
      if (nowSeconds() >= nextProbe) {
        for (auto it = pending.begin(); it != pending.end();) {
          if (probe_.probe(*it, deadline) != bootstrap::Liveness::kAlive) {
            dead[*it] = true;
            took[*it] = false;
            it = pending.erase(it);
          } else {
            ++it;
          }
        }
        nextProbe = nowSeconds() + kProbePeriodSeconds;
      }
      if (deadline.expired()) {
        if (!failAtDeadline) return;
        fail(tuttiTimeout, "tuttiCommAgreeFailedRanks: rank(s) ", rankList(pending),
             " did not call within ", deadline.totalSeconds(),
             " s, but are alive (their standby addresses answer)");
      }
      ::usleep(5000);
    }
  };
  waitFor("in", true);
  std::vector<int> failed;
  for (int r = 0; r < nranks_; ++r)
    if (!took[r]) failed.push_back(r);
  store.setString(base + "/out", encodeRankList(failed));
  // The others read the answer before this rank may go on (and stop serving it).
  for (int r = 0; r < nranks_; ++r)
    if (took[r] && r != rank_) pending.push_back(r);
  waitFor("ack", false);
  return failed;
}

bool Recovery::leaderGone(int leader, const Deadline& deadline) const {
  // Its connection may break a moment before its process is seen gone (its sockets close one
  // by one as it exits): look again for up to kLeaderGoneGraceSeconds.
  const double until = std::min(nowSeconds() + kLeaderGoneGraceSeconds,
                                nowSeconds() + std::max(0.0, deadline.secondsLeft()));
  for (;;) {
    Deadline probe(std::min(PeerProbe::kProbeSeconds, std::max(0.05, deadline.secondsLeft())));
    if (!probe_.alive(leader, probe)) return true;
    if (nowSeconds() >= until) return false;
    ::usleep(20000);
  }
}

}  // namespace tutti
