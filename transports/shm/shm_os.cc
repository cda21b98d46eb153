#include "shm_os.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include "common/env.h"
#include "common/error.h"
#include "common/process_gone.h"

namespace tutti::transport::shm {

const char* modeName(SegmentMode mode) { return mode == SegmentMode::kMemfd ? "memfd" : "file"; }

namespace {

std::string roomAdvice(const std::string& dir) {
  std::ostringstream os;
  os << "raise it (docker run --shm-size=1g, or mount -o remount,size=... " << dir
     << "), set TUTTI_SHM_FIFO_BYTES smaller (now " << env::getInt("TUTTI_SHM_FIFO_BYTES")
     << "), or point TUTTI_SHM_DIR at a larger tmpfs";
  return os.str();
}

[[noreturn]] void failRoom(const std::string& where, size_t need, uint64_t freeBytes,
                           const std::string& what, const std::string& dir) {
  fail(tuttiSystemError, "shm: not enough shared memory in ", where, ": ", what, " need ", need,
       " bytes but only ", freeBytes, " bytes are free (short by ",
       need > freeBytes ? need - freeBytes : 0, " bytes); ", roomAdvice(dir));
}

uint64_t freeBytes(const struct statvfs& st) {
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

}  // namespace

void checkRoom(const std::string& dir, size_t bytes, const std::string& what) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0)
    throwSystemError("shm: statvfs(" + dir + ") (TUTTI_SHM_DIR)");
  if (st.f_blocks == 0) return;  // no limit reported
  if (freeBytes(st) < bytes) failRoom(dir, bytes, freeBytes(st), what, dir);
}

namespace {

std::optional<std::string> readSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string mib(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

std::optional<uint64_t> parseMemAvailable(const std::string& meminfo) {
  size_t at = meminfo.find("MemAvailable:");
  if (at == std::string::npos) return std::nullopt;
  unsigned long long kb = 0;
  if (std::sscanf(meminfo.c_str() + at, "MemAvailable: %llu kB", &kb) != 1) return std::nullopt;
  return static_cast<uint64_t>(kb) * 1024;
}

std::optional<uint64_t> parseCgroupValue(const std::string& text) {
  unsigned long long v = 0;
  if (text.compare(0, 3, "max") == 0 || std::sscanf(text.c_str(), "%llu", &v) != 1)
    return std::nullopt;
  // cgroup v1 reports "no limit" as a huge page-rounded number.
  if (v >= (1ull << 62)) return std::nullopt;
  return static_cast<uint64_t>(v);
}

MemoryRoom readMemoryRoom() {
  MemoryRoom room;
  if (auto meminfo = readSmallFile("/proc/meminfo"))
    room.memAvailable = parseMemAvailable(*meminfo);
  auto cgroups = readSmallFile("/proc/self/cgroup");
  if (!cgroups) return room;
  // The cgroup v2 path ("0::/path") and the v1 memory controller's ("N:memory:/path").
  struct Hierarchy {
    std::string root, path;
    const char* limitFile;
    const char* usageFile;
  };
  std::vector<Hierarchy> hierarchies;
  std::istringstream lines(*cgroups);
  for (std::string line; std::getline(lines, line);) {
    size_t c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    std::string controllers = line.substr(c1 + 1, c2 - c1 - 1), path = line.substr(c2 + 1);
    if (line.compare(0, c1, "0") == 0 && controllers.empty()) {
      for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"})
        hierarchies.push_back({root, path, "memory.max", "memory.current"});
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      hierarchies.push_back(
          {"/sys/fs/cgroup/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes"});
    }
  }
  for (const Hierarchy& h : hierarchies) {
    // The cgroup and each ancestor: every limit on the way up applies.
    std::string path = h.path;
    while (true) {
      std::string dir = h.root + (path == "/" ? "" : path);
      auto limitText = readSmallFile(dir + "/" + h.limitFile);
      auto usageText = readSmallFile(dir + "/" + h.usageFile);
      std::optional<uint64_t> limit = limitText ? parseCgroupValue(*limitText) : std::nullopt;
      std::optional<uint64_t> usage = usageText ? parseCgroupValue(*usageText) : std::nullopt;
      if (limit && usage) {
        uint64_t left = *limit > *usage ? *limit - *usage : 0;
        if (!room.cgroupRoom || left < *room.cgroupRoom) {
          room.cgroupRoom = left;
          room.cgroupLimit = limit;
          room.cgroupPath = dir;
        }
      }
      if (path.empty() || path == "/") break;
      size_t slash = path.find_last_of('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
  }
  return room;
}

std::string roomShortfall(uint64_t bytes, const MemoryRoom& room, const char* are) {
  const bool cgroupShort = room.cgroupRoom && bytes > *room.cgroupRoom;
  const bool hostShort = room.memAvailable && bytes > *room.memAvailable;
  if (!cgroupShort && !hostShort) return "";
  std::ostringstream os;
  if (cgroupShort && (!hostShort || *room.cgroupRoom <= *room.memAvailable))
    os << *room.cgroupRoom << " bytes (" << mib(*room.cgroupRoom) << ") " << are
       << " left under the memory limit of cgroup " << room.cgroupPath << " (" << *room.cgroupLimit
       << " bytes)";
  else
    os << *room.memAvailable << " bytes (" << mib(*room.memAvailable) << ") of memory " << are
       << " available (MemAvailable)";
  return os.str();
}

void checkMemoryRoom(size_t bytes, const MemoryRoom& room, const std::string& what,
                     const char* variable) {
  std::string shortfall = roomShortfall(bytes, room, "are");
  if (shortfall.empty()) return;
  fail(tuttiSystemError, "shm: ", what, " needs ", bytes, " bytes (", mib(bytes), ") but only ",
       shortfall, "; set ", variable, " smaller");
}

Segment::Segment(Segment&& o) noexcept { *this = std::move(o); }

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    destroy();
    fd_ = std::move(o.fd_);
    addr_ = std::exchange(o.addr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    path_ = std::move(o.path_);
    named_ = std::exchange(o.named_, false);
  }
  return *this;
}

Segment::~Segment() { destroy(); }

void Segment::destroy() {
  if (addr_) ::munmap(addr_, bytes_);
  addr_ = nullptr;
  release();
}

void Segment::release() {
  if (named_) ::unlink(path_.c_str());
  named_ = false;
  fd_.reset();
}

Segment Segment::create(SegmentMode mode, size_t bytes, const std::string& dir,
                        const std::string& name, const char* sizeVariable) {
  // Pages of a memfd or tmpfs file are memory: a segment larger than what the host (or this
  // process's cgroup) has left would push the kernel into reclaim and its OOM killer.
  checkMemoryRoom(bytes, readMemoryRoom(), "segment " + name, sizeVariable);
  Segment s;
  s.bytes_ = bytes;
  if (mode == SegmentMode::kMemfd) {
    int fd = static_cast<int>(::syscall(SYS_memfd_create, name.c_str(), MFD_CLOEXEC));
    if (fd < 0) throwSystemError("shm: memfd_create(" + name + ")");
    s.fd_ = Fd(fd);
    s.path_ = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd);
    struct statvfs st {};
    if (::fstatvfs(fd, &st) == 0 && st.f_blocks != 0 && freeBytes(st) < bytes)
      failRoom("the memfd filesystem", bytes, freeBytes(st), "segment " + name, dir);
  } else {
    s.path_ = dir + "/" + name;
    int fd = ::open(s.path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throwSystemError("shm: creating " + s.path_ + " (TUTTI_SHM_DIR)");
    s.fd_ = Fd(fd);
    s.named_ = true;
  }
  // Allocate every page now: a full tmpfs is then an error here, never a SIGBUS later.
  // fallocate(2) first: on tmpfs it reserves the pages or fails with ENOSPC at once.
  // posix_fallocate only where fallocate is unsupported (its fallback writes every block).
  int err = ::fallocate(s.fd_.get(), 0, 0, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  if (err == EOPNOTSUPP) err = ::posix_fallocate(s.fd_.get(), 0, static_cast<off_t>(bytes));
  if (err == ENOSPC || err == ENOMEM) {
    struct statvfs st {};
    uint64_t avail = ::fstatvfs(s.fd_.get(), &st) == 0 ? freeBytes(st) : 0;
    failRoom(mode == SegmentMode::kMemfd ? std::string("memory (memfd)") : dir, bytes, avail,
             "segment " + name, dir);
  }
  if (err != 0)
    throwSystemError("shm: posix_fallocate(" + s.path_ + ", " + std::to_string(bytes) + ")", err);
  void* addr =
      ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, s.fd_.get(), 0);
  if (addr == MAP_FAILED) throwSystemError("shm: mmap(" + s.path_ + ")");
  s.addr_ = addr;
  return s;
}

Segment Segment::open(const std::string& path, size_t bytes, bool populate) {
  Segment s;
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throwSystemError("shm: open(" + path + ")");
  s.fd_ = Fd(fd);
  s.path_ = path;
  struct stat st {};
  if (::fstat(fd, &st) != 0) throwSystemError("shm: fstat(" + path + ")");
  if (static_cast<size_t>(st.st_size) < bytes)
    fail(tuttiInternalError, "shm: segment ", path, " has ", st.st_size, " bytes, expected ",
         bytes);
  void* addr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
  if (addr == MAP_FAILED) throwSystemError("shm: mmap(" + path + ")");
  s.addr_ = addr;
  s.bytes_ = bytes;
  s.fd_.reset();  // the mapping keeps the memory
  return s;
}

Doorbell Doorbell::create(SegmentMode mode, const std::string& dir, const std::string& name) {
  Doorbell d;
  if (mode == SegmentMode::kMemfd) {
    int p[2];
    if (::pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) throwSystemError("shm: pipe2 (doorbell)");
    d.read_ = Fd(p[0]);
    d.write_ = Fd(p[1]);
    d.path_ = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(p[1]);
  } else {
    d.path_ = dir + "/" + name;
    if (::mkfifo(d.path_.c_str(), 0600) != 0)
      throwSystemError("shm: mkfifo(" + d.path_ + ") (doorbell)");
    d.named_ = true;
    int fd = ::open(d.path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      ::unlink(d.path_.c_str());
      throwSystemError("shm: open(" + d.path_ + ") (doorbell)");
    }
    d.read_ = Fd(fd);  // O_RDWR: also our own writer
  }
  return d;
}

Doorbell::Doorbell(Doorbell&& o) noexcept
    : read_(std::move(o.read_)),
      write_(std::move(o.write_)),
      path_(std::move(o.path_)),
      named_(std::exchange(o.named_, false)) {}

Doorbell& Doorbell::operator=(Doorbell&& o) noexcept {
  if (this != &o) {
    release();
    read_ = std::move(o.read_);
    write_ = std::move(o.write_);
    path_ = std::move(o.path_);
    named_ = std::exchange(o.named_, false);
  }
  return *this;
}

Doorbell::~Doorbell() { release(); }

void Doorbell::drain() {
  char buf[256];
  while (::read(read_.get(), buf, sizeof(buf)) > 0) {
  }
}

void Doorbell::release() {
  if (named_) ::unlink(path_.c_str());
  named_ = false;
}

Bell Bell::open(const std::string& path) {
  Bell b;
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throwSystemError("shm: open(" + path + ") (peer doorbell)");
  b.fd_ = Fd(fd);
  return b;
}

void Bell::ring() const {
  // The peer may have died asleep on this bell (its FIFO then has no reader): the write's
  // EPIPE must not kill this process with SIGPIPE. The signal is blocked around the write and
  // the one it raised, if any, taken back; the peer's death is found by its pidfd.
  sigset_t pipeSig, old, pending;
  sigemptyset(&pipeSig);
  sigaddset(&pipeSig, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipeSig, &old);
  sigpending(&pending);
  const bool wasPending = sigismember(&pending, SIGPIPE) == 1;
  char c = 1;
  // EAGAIN: the pipe is full, so the peer will wake anyway.
  ssize_t r = ::write(fd_.get(), &c, 1);
  if (r < 0 && errno == EPIPE && !wasPending) {
    timespec zero{0, 0};
    sigtimedwait(&pipeSig, nullptr, &zero);  // the SIGPIPE this write raised on this thread
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void Bell::ringMaybeClosed() const {
  if (fd_.valid()) ring();
}

PeerProcess::PeerProcess(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    pidfd_ = Fd(fd);
  }
#endif
}

bool PeerProcess::exited() const {
  if (pidfd_.valid()) {
    struct pollfd p {
      pidfd_.get(), POLLIN, 0
    };
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
  }
  return processGone(pid_);
}

std::string uniqueName(const std::string& stem) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  std::ostringstream os;
  os << "tutti-" << stem << "-" << ::getpid() << "-" << std::hex << salt << "-" << counter++;
  return os.str();
}

int removeStaleNames(const std::string& dir, double minAgeSec) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  const uid_t me = ::geteuid();
  const auto now = std::chrono::system_clock::now();
  int removed = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("tutti-", 0) != 0) continue;
    // tutti-<stem>-<pid>-<salt hex>-<counter>: the pid is the third field from the end.
    const size_t c = name.rfind('-');
    const size_t s = c == std::string::npos || c == 0 ? std::string::npos : name.rfind('-', c - 1);
    const size_t p = s == std::string::npos || s == 0 ? std::string::npos : name.rfind('-', s - 1);
    if (p == std::string::npos) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + p + 1, &end, 10);
    if (end != name.c_str() + s || pid <= 0) continue;
    struct stat st {};
    const std::string path = dir + "/" + name;
    if (::lstat(path.c_str(), &st) != 0 || st.st_uid != me) continue;
    const auto modified = std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec);
    if (std::chrono::duration<double>(now - modified).count() < minAgeSec) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace tutti::transport::shm
