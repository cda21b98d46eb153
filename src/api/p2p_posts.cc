#include "p2p_posts.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <utility>

#include "common/error.h"

namespace tutti::api {

P2pPosts::P2pPosts() : wakeFd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!wakeFd_.valid()) throwSystemError("eventfd for point-to-point calls");
}

P2pPosts::~P2pPosts() = default;

void P2pPosts::add(uint64_t ticket, std::shared_ptr<Post> post) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_.emplace(ticket, std::move(post));
  }
  const uint64_t one = 1;
  (void)!::write(wakeFd_.get(), &one, sizeof one);  // a full counter is still readable
}

bool P2pPosts::claim(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_.erase(ticket) != 0;
}

bool P2pPosts::absorbFollowing(uint64_t& last, std::vector<std::shared_ptr<Post>>& into) {
  uint64_t drained;
  (void)!::read(wakeFd_.get(), &drained, sizeof drained);
  std::lock_guard<std::mutex> lock(mutex_);
  bool moved = false;
  for (auto it = waiting_.find(last + 1); it != waiting_.end() && it->first == last + 1;
       it = waiting_.erase(it)) {
    it->second->absorbed = true;
    into.push_back(it->second);
    ++last;
    moved = true;
  }
  return moved;
}

}  // namespace tutti::api
