// Host pieces of cuda_ipc: the control segment (a memfd the peer maps through
// /proc/<pid>/fd/<n>) and a watch on the peer process (pidfd; kill(pid, 0) where pidfd_open
// is unavailable).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "common/unique_fd.h"

namespace tutti::transport::cudaipc {

class SharedSegment {
 public:
  SharedSegment() = default;
  SharedSegment(SharedSegment&& o) noexcept;
  SharedSegment& operator=(SharedSegment&& o) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  // A new zero-filled memfd segment of `bytes`, fully allocated (no SIGBUS on first touch).
  static SharedSegment create(size_t bytes, const std::string& name);
  // Maps the segment that process `pid` holds as fd `fd` (/proc/<pid>/fd/<fd>).
  static SharedSegment openPeer(pid_t pid, int fd, size_t bytes);

  std::byte* data() const { return static_cast<std::byte*>(addr_); }
  size_t size() const { return bytes_; }
  int fd() const { return fd_.get(); }

 private:
  void reset();
  void* addr_ = nullptr;
  size_t bytes_ = 0;
  UniqueFd fd_;
};

class PeerWatch {
 public:
  PeerWatch() = default;
  explicit PeerWatch(pid_t pid);
  PeerWatch(PeerWatch&& o) noexcept;
  PeerWatch& operator=(PeerWatch&& o) noexcept;

  bool alive() const;                   // never blocks
  int fd() const { return fd_.get(); }  // readable once the peer exited (-1 without pidfd)

 private:
  pid_t pid_ = 0;
  UniqueFd fd_;
};

}  // namespace tutti::transport::cudaipc
