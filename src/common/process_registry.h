// ProcessRegistry<Fn>: callbacks of live objects of one process (communicators), each
// registered until its Registration is destroyed, called from any thread. Destroying a
// registration waits for a call of its callback in progress and the callback is never called
// after; a forked child never calls its parent's callbacks (their objects' sockets and memory
// are the parent's). Knows nothing of what the callbacks do.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace tutti {

template <class Fn>
class ProcessRegistry {
  struct Entry {
    std::mutex mutex;  // held while the callback runs, and to retire the entry
    bool live = true;
    Fn fn;
    pid_t pid = 0;  // the registering process
  };

 public:
  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)), entry_(std::move(other.entry_)) {}
    Registration& operator=(Registration&& other) noexcept {
      if (this != &other) {
        release();
        owner_ = std::exchange(other.owner_, nullptr);
        entry_ = std::move(other.entry_);
      }
      return *this;
    }
    ~Registration() { release(); }

   private:
    friend class ProcessRegistry;
    Registration(ProcessRegistry* owner, std::shared_ptr<Entry> entry)
        : owner_(owner), entry_(std::move(entry)) {}
    void release() {
      if (owner_ != nullptr && entry_) owner_->remove(entry_);
      owner_ = nullptr;
      entry_.reset();
    }
    ProcessRegistry* owner_ = nullptr;
    std::shared_ptr<Entry> entry_;
  };

  Registration add(Fn fn) {
    auto entry = std::make_shared<Entry>();
    entry->fn = std::move(fn);
    entry->pid = ::getpid();
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(entry);
    return Registration(this, std::move(entry));
  }

  // visit(fn) for every live callback of this process but `except`'s, in registration order,
  // until visit returns true.
  template <class Visit>
  void visit(Visit&& visit, const Registration* except = nullptr) const {
    std::vector<std::shared_ptr<Entry>> entries;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      entries = entries_;
    }
    for (const auto& entry : entries) {
      if ((except != nullptr && entry == except->entry_) || entry->pid != ::getpid()) continue;
      std::lock_guard<std::mutex> hold(entry->mutex);
      if (entry->live && visit(entry->fn)) return;
    }
  }

 private:
  void remove(const std::shared_ptr<Entry>& entry) {
    {
      std::lock_guard<std::mutex> retire(entry->mutex);  // after a call in progress
      entry->live = false;
      entry->fn = nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase(entries_, entry);
  }

  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Entry>> entries_;
};

}  // namespace tutti
