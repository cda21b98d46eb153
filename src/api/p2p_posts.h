// The point-to-point calls of one communicator that wait for their turn in its call order
// (call_order.h), by ticket number: those issued on host streams, and blocking ones issued
// once the communicator has had a stream call. The call whose turn comes runs its operation
// and absorbs the waiting calls whose tickets follow its own without a gap, also while it
// runs (Communicator::runP2pOpen): they progress together, so a receive posted before the
// send its peer waits for, on any stream, cannot block that send. An absorbed call finds its
// operation done (or the failure it met) when its own turn comes, which is after the absorbing
// call finished. A ticket that is not a waiting point-to-point call (a collective, a group, a
// send to self) is a gap: the calls after it run after it. Knows nothing of communicators or
// streams.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/p2p_batch.h"
#include "common/unique_fd.h"
#include "tutti/tutti.h"

namespace tutti::api {

class P2pPosts {
 public:
  struct Post {
    P2pOp op;
    // Set by the call that absorbed it before that call's ticket finishes.
    bool absorbed = false;
    tuttiResult_t result = tuttiSuccess;
    std::string error;
  };

  P2pPosts();  // throws tuttiSystemError without an eventfd
  ~P2pPosts();
  P2pPosts(const P2pPosts&) = delete;
  P2pPosts& operator=(const P2pPosts&) = delete;

  // The call of `ticket` waits with `post`; wakes a running call (wakeFd).
  void add(uint64_t ticket, std::shared_ptr<Post> post);
  // The call of `ticket` runs now: true when its post was still waiting (now removed), false
  // when an earlier call absorbed it.
  bool claim(uint64_t ticket);
  // Moves the waiting posts of tickets last + 1, last + 2, ... (up to the first gap) into
  // `into`, marked absorbed, and advances last; whether it moved any. Drains wakeFd.
  bool absorbFollowing(uint64_t& last, std::vector<std::shared_ptr<Post>>& into);
  // Readable after add() until the next absorbFollowing().
  int wakeFd() const { return wakeFd_.get(); }

 private:
  std::mutex mutex_;
  std::map<uint64_t, std::shared_ptr<Post>> waiting_;
  UniqueFd wakeFd_;
};

}  // namespace tutti::api
