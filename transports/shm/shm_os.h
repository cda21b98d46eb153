// Operating-system pieces of the shm transport: owned fds, shared segments (memfd or a named
// tmpfs file) with a free-space check and fallocate, doorbells (a pipe or a named FIFO the
// peer can open by path), and a watch on the peer process (pidfd).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/unique_fd.h"

namespace tutti::transport::shm {

enum class SegmentMode { kMemfd, kFile };

// Upper bound of TUTTI_SHM_FIFO_BYTES (refused above).
constexpr int64_t kMaxFifoBytes = int64_t{1} << 30;
const char* modeName(SegmentMode mode);

// An owned file descriptor (common/unique_fd.h).
using Fd = UniqueFd;

// Fails with a clear message unless the filesystem holding `dir` has `bytes` free.
// `what` says what the bytes are for (e.g. "3 FIFO segments of 4198400 bytes").
void checkRoom(const std::string& dir, size_t bytes, const std::string& what);

// Memory a new segment can take: MemAvailable of /proc/meminfo and, when the process's
// cgroup (v2, or v1's memory controller) or an ancestor has a limit, the least room
// (limit - usage) among them. Unknown values are nullopt.
struct MemoryRoom {
  std::optional<uint64_t> memAvailable;  // bytes
  std::optional<uint64_t> cgroupRoom;    // bytes
  std::optional<uint64_t> cgroupLimit;   // the limit of the cgroup with the least room
  std::string cgroupPath;                // that cgroup's directory
};
MemoryRoom readMemoryRoom();
// Parsers of the files readMemoryRoom reads (exposed for tests).
std::optional<uint64_t> parseMemAvailable(const std::string& meminfo);
std::optional<uint64_t> parseCgroupValue(const std::string& text);  // "max" -> nullopt

// "" when `bytes` fit in `room`, else what is left, e.g. "33554432 bytes (32.0 MiB) are left
// under the memory limit of cgroup /sys/fs/cgroup/job (67108864 bytes)" (`are`: the verb's
// tense, "are" or "were").
std::string roomShortfall(uint64_t bytes, const MemoryRoom& room, const char* are);

// Fails with a tuttiSystemError naming the segment size, the memory available and
// `variable` (the setting to lower) unless `bytes` fit in `room`.
void checkMemoryRoom(size_t bytes, const MemoryRoom& room, const std::string& what,
                     const char* variable);

// A shared memory segment mapped read-write. Created by one side (memfd or named file, fully
// allocated so that touching it can never SIGBUS), opened by the peer through path().
class Segment {
 public:
  Segment() = default;
  Segment(Segment&& o) noexcept;
  Segment& operator=(Segment&& o) noexcept;
  ~Segment();

  // sizeVariable: the setting that sized it (named when memory is short).
  static Segment create(SegmentMode mode, size_t bytes, const std::string& dir,
                        const std::string& name, const char* sizeVariable = "TUTTI_SHM_FIFO_BYTES");
  // populate: map every page now (MAP_POPULATE) instead of at first touch. The creator has
  // allocated the pages already, so a lazy mapping cannot fault for want of memory.
  static Segment open(const std::string& path, size_t bytes, bool populate = true);

  std::byte* data() const { return static_cast<std::byte*>(addr_); }
  size_t size() const { return bytes_; }
  // Where the peer opens it: /proc/<pid>/fd/<n> (memfd) or the file's path.
  const std::string& path() const { return path_; }
  // After the peer mapped it: the fd and the name are no longer needed.
  void release();

 private:
  void destroy();
  Fd fd_;
  void* addr_ = nullptr;
  size_t bytes_ = 0;
  std::string path_;
  bool named_ = false;  // path_ is a file to unlink
};

// The local end of a doorbell: readable when the peer rang. Kept with a write end of our
// own so that a peer closing its end never makes it permanently readable.
class Doorbell {
 public:
  Doorbell() = default;
  Doorbell(Doorbell&& o) noexcept;
  Doorbell& operator=(Doorbell&& o) noexcept;
  ~Doorbell();  // unlinks a named FIFO not released yet (a setup that failed or was aborted)
  static Doorbell create(SegmentMode mode, const std::string& dir, const std::string& name);
  int waitFd() const { return read_.get(); }
  const std::string& path() const { return path_; }  // what the peer opens for writing
  void drain();
  void release();  // unlinks a named FIFO once the peer opened it

 private:
  Fd read_;
  Fd write_;
  std::string path_;
  bool named_ = false;
};

// The peer's end of a doorbell.
class Bell {
 public:
  Bell() = default;
  static Bell open(const std::string& path);
  // Wakes the peer. Its end may be closed (it died asleep on the bell, exited or destroyed its
  // side): the write's SIGPIPE is blocked and discarded instead of ending this process.
  void ring() const;
  // ring() that also accepts a bell never opened.
  void ringMaybeClosed() const;

 private:
  Fd fd_;
};

// Watches a peer process: a pidfd (readable once it exits) or, without pidfd_open,
// kill(pid, 0) + /proc/<pid>/stat.
class PeerProcess {
 public:
  PeerProcess() = default;
  explicit PeerProcess(pid_t pid);
  pid_t pid() const { return pid_; }
  int waitFd() const { return pidfd_.get(); }  // -1 without pidfd
  bool exited() const;

 private:
  pid_t pid_ = 0;
  Fd pidfd_;
};

// A unique suffix for named objects of this process.
std::string uniqueName(const std::string& stem);

// Removes what dead processes left in dir: names uniqueName made (tutti-<stem>-<pid>-...) of
// this user, whose pid is gone and that are older than minAgeSec (a process killed while it set
// up its segments; a live one unlinks its names as soon as its peer opened them). Returns how
// many were removed.
int removeStaleNames(const std::string& dir, double minAgeSec);

}  // namespace tutti::transport::shm
