#include "transports/cuda_ipc/shared_segment.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/error.h"

namespace tutti::transport::cudaipc {

SharedSegment::SharedSegment(SharedSegment&& o) noexcept
    : addr_(std::exchange(o.addr_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      fd_(std::move(o.fd_)) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& o) noexcept {
  if (this != &o) {
    reset();
    addr_ = std::exchange(o.addr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    fd_ = std::move(o.fd_);
  }
  return *this;
}

SharedSegment::~SharedSegment() { reset(); }

void SharedSegment::reset() {
  if (addr_) munmap(addr_, bytes_);
  fd_.reset();
  addr_ = nullptr;
  bytes_ = 0;
}

SharedSegment SharedSegment::create(size_t bytes, const std::string& name) {
  SharedSegment s;
  s.fd_.reset(memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!s.fd_.valid()) throwSystemError("cuda_ipc: memfd_create(" + name + ")");
  if (int rc = posix_fallocate(s.fd_.get(), 0, static_cast<off_t>(bytes)); rc != 0)
    throwSystemError("cuda_ipc: posix_fallocate of a " + std::to_string(bytes) +
                         "-byte control segment (is /dev/shm or memory full?)",
                     rc);
  s.addr_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_.get(), 0);
  if (s.addr_ == MAP_FAILED) {
    s.addr_ = nullptr;
    throwSystemError("cuda_ipc: mmap of the control segment");
  }
  s.bytes_ = bytes;
  return s;
}

SharedSegment SharedSegment::openPeer(pid_t pid, int fd, size_t bytes) {
  SharedSegment s;
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  s.fd_.reset(open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!s.fd_.valid()) throwSystemError("cuda_ipc: open " + path + " (the peer's control segment)");
  struct stat st {};
  if (fstat(s.fd_.get(), &st) != 0) throwSystemError("cuda_ipc: fstat " + path);
  if (static_cast<size_t>(st.st_size) < bytes)
    fail(tuttiInternalError, "cuda_ipc: ", path, " has ", st.st_size, " bytes, expected ", bytes);
  s.addr_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_.get(), 0);
  if (s.addr_ == MAP_FAILED) {
    s.addr_ = nullptr;
    throwSystemError("cuda_ipc: mmap " + path);
  }
  s.bytes_ = bytes;
  return s;
}

PeerWatch::PeerWatch(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  fd_.reset(fd < 0 ? -1 : fd);
#endif
}

PeerWatch::PeerWatch(PeerWatch&& o) noexcept
    : pid_(std::exchange(o.pid_, 0)), fd_(std::move(o.fd_)) {}

PeerWatch& PeerWatch::operator=(PeerWatch&& o) noexcept {
  if (this != &o) {
    pid_ = std::exchange(o.pid_, 0);
    fd_ = std::move(o.fd_);
  }
  return *this;
}

bool PeerWatch::alive() const {
  if (pid_ <= 0) return true;
  if (fd_.valid()) {
    pollfd p{fd_.get(), POLLIN, 0};
    return poll(&p, 1, 0) == 0;
  }
  return !(kill(pid_, 0) != 0 && errno == ESRCH);
}

}  // namespace tutti::transport::cudaipc
