#include "bootstrap/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <thread>

#include "bootstrap/store_util.h"
#include "common/error.h"
#include "common/unique_fd.h"

namespace tutti::bootstrap {

namespace {

using Fd = UniqueFd;

void makeDirs(const std::string& dir) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throwSystemError("FileStore: mkdir " + partial);
  }
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string escapeKey(const std::string& key) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "k_";  // never starts with '.', never empty
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (out.size() > 180) {
    char hash[20];
    std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(fnv1a(key)));
    out = out.substr(0, 150) + "~" + hash;
  }
  return out;
}

void writeAll(int fd, const std::byte* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throwSystemError(what);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

FileStore::FileStore(std::string dir) : dir_(std::move(dir)) {
  TUTTI_CHECK_ARG(!dir_.empty(), "FileStore: empty directory name");
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  makeDirs(dir_);
}

std::string FileStore::pathOf(const std::string& key) const { return dir_ + "/" + escapeKey(key); }

void FileStore::writeAtomically(const std::string& path, std::span<const std::byte> value) {
  std::string tmp = dir_ + "/.tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(tmpCounter_.fetch_add(1)) + "." +
                    std::to_string(reinterpret_cast<uintptr_t>(this) & 0xffffff);
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (fd.get() < 0) throwSystemError("FileStore: create " + tmp);
    writeAll(fd.get(), value.data(), value.size(), "FileStore: write " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throwSystemError("FileStore: rename " + tmp + " -> " + path, err);
  }
}

bool FileStore::tryRead(const std::string& path, std::vector<std::byte>& out) const {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return false;
    throwSystemError("FileStore: open " + path);
  }
  out.clear();
  std::byte buf[4096];
  for (;;) {
    ssize_t r = ::read(fd.get(), buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      throwSystemError("FileStore: read " + path);
    }
    if (r == 0) break;
    out.insert(out.end(), buf, buf + r);
  }
  return true;
}

void FileStore::set(const std::string& key, std::span<const std::byte> value) {
  writeAtomically(pathOf(key), value);
}

std::vector<std::byte> FileStore::get(const std::string& key, const Deadline& deadline) {
  std::string path = pathOf(key);
  std::vector<std::byte> out;
  int sleepUs = 1000;
  for (;;) {
    if (aborted_.load()) throwAborted("FileStore", key);
    if (tryRead(path, out)) return out;
    double left = deadline.secondsLeft();
    if (left <= 0) throwGetTimeout("FileStore(" + dir_ + ")", key, deadline.totalSeconds());
    int us = std::min<int>(sleepUs, static_cast<int>(left * 1e6) + 1);
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    sleepUs = std::min(sleepUs * 2, 20000);
  }
}

bool FileStore::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    if (::access(pathOf(k).c_str(), F_OK) != 0) return false;
  }
  return true;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  std::string lockPath = dir_ + "/.lock";
  Fd lock(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (lock.get() < 0) throwSystemError("FileStore: open " + lockPath);
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throwSystemError("FileStore: flock " + lockPath);
  }
  // The lock is released when the descriptor closes (also on exceptions).
  std::string path = pathOf(key);
  std::vector<std::byte> cur;
  if (!tryRead(path, cur)) cur.clear();
  int64_t value = addToCounter(key, cur, delta);
  writeAtomically(path, formatCounter(value));
  return value;
}

void FileStore::abort() { aborted_.store(true); }

size_t FileStore::erasePrefix(const std::string& prefix) {
  // Escaping is per character, so a key's file name starts with the escaped prefix (a long
  // key's name keeps its first 150 characters, so a prefix up to that long still matches).
  std::string start = escapeKey(prefix);
  TUTTI_CHECK_ARG(start.find('~') == std::string::npos,
                  "FileStore: erasePrefix needs a prefix of at most 150 escaped characters");
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) throwSystemError("FileStore: opendir " + dir_);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, start.size(), start) == 0) names.push_back(name);
  }
  ::closedir(d);
  size_t n = 0;
  for (const auto& name : names)
    if (::unlink((dir_ + "/" + name).c_str()) == 0) ++n;
  return n;
}

}  // namespace tutti::bootstrap
