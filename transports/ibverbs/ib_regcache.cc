#include "ib_regcache.h"

#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "common/error.h"

namespace tutti::transport::ib {

RegCache::RegCache(std::shared_ptr<IbDevice> dev, bool keep, size_t maxEntries)
    : dev_(std::move(dev)), keep_(keep), maxEntries_(maxEntries < 1 ? 1 : maxEntries) {}

RegCache::~RegCache() {
  for (Entry& e : entries_)
    if (e.mr) dev_->api->deregMr(e.mr);
}

ibv_mr* RegCache::reg(uintptr_t begin, uintptr_t end) {
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  ibv_mr* mr = dev_->api->regMr(dev_->pd, reinterpret_cast<void*>(begin), end - begin, access);
  if (!mr) {
    int err = errno;
    std::ostringstream os;
    os << "ibverbs: ibv_reg_mr of " << (end - begin) << " bytes at 0x" << std::hex << begin
       << " on " << dev_->name;
    throwSystemError(
        os.str() + (err == ENOMEM || err == EPERM ? " (locked-memory limit? raise ulimit -l)" : ""),
        err);
  }
  ++registrations_;
  return mr;
}

RegCache::Handle RegCache::acquire(const void* p, size_t n) {
  static const uintptr_t kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n + kPage - 1) & ~(kPage - 1);
  Handle h;
  if (!keep_) {
    h.mr = reg(begin, end);
    return h;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.mr && e.begin <= begin && end <= e.end) {
      ++e.users;
      e.lastUse = ++clock_;
      ++hits_;
      return {e.mr, static_cast<int>(i)};
    }
  }
  // Evict the least recently used unused entry when full (or entries inside the new range).
  int victim = -1;
  size_t live = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (!e.mr) {
      if (victim < 0) victim = static_cast<int>(i);
      continue;
    }
    ++live;
    if (e.users == 0 && begin <= e.begin && e.end <= end) {  // superseded
      dev_->api->deregMr(e.mr);
      e.mr = nullptr;
      --live;
      if (victim < 0) victim = static_cast<int>(i);
    }
  }
  if (live >= maxEntries_) {
    int lru = -1;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (e.mr && e.users == 0 && (lru < 0 || e.lastUse < entries_[lru].lastUse))
        lru = static_cast<int>(i);
    }
    if (lru >= 0) {
      dev_->api->deregMr(entries_[lru].mr);
      entries_[lru].mr = nullptr;
      victim = lru;
    }
  }
  if (victim < 0) {
    entries_.emplace_back();
    victim = static_cast<int>(entries_.size() - 1);
  }
  Entry& e = entries_[victim];
  e.mr = reg(begin, end);
  e.begin = begin;
  e.end = end;
  e.users = 1;
  e.lastUse = ++clock_;
  return {e.mr, victim};
}

void RegCache::release(Handle& h) {
  if (!h.mr) return;
  if (h.entry < 0) {
    dev_->api->deregMr(h.mr);
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    --entries_[h.entry].users;
  }
  h = Handle{};
}

}  // namespace tutti::transport::ib
