// A caller's key-value store for tuttiCommInitRankStore in tests: a real directory shared
// by forked ranks, as a framework's store would be.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "tutti/tutti.h"

namespace tutti::test {

// Keys become file names ('/' escaped); a value is written to a temporary file and renamed
// into place, so a reader never sees half of it. add() holds an flock on a lock file.
struct DirStore {
  std::string dir;
  int calls = 0;  // callbacks made by this rank
  std::string path(const char* key) const {
    std::string name = key;
    for (char& c : name)
      if (c == '/') c = '%';
    return dir + "/" + name;
  }
};

inline int dirSet(void* ctx, const char* key, const void* value, size_t size) {
  auto* s = static_cast<DirStore*>(ctx);
  ++s->calls;
  std::string final = s->path(key), tmp = final + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(tmp.c_str(), "wb");
  if (f == nullptr) return 1;
  bool ok = size == 0 || fwrite(value, 1, size, f) == size;
  ok = fclose(f) == 0 && ok;
  return ok && rename(tmp.c_str(), final.c_str()) == 0 ? 0 : 1;
}

inline int dirGet(void* ctx, const char* key, void (*sink)(void*, const void*, size_t),
                  void* sinkCtx) {
  auto* s = static_cast<DirStore*>(ctx);
  ++s->calls;
  std::ifstream in(s->path(key), std::ios::binary);
  if (!in) return 1;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  sink(sinkCtx, bytes.data(), bytes.size());
  return 0;
}

inline int dirCheck(void* ctx, const char* key, int* exists) {
  auto* s = static_cast<DirStore*>(ctx);
  ++s->calls;
  *exists = access(s->path(key).c_str(), F_OK) == 0 ? 1 : 0;
  return 0;
}

inline int dirAdd(void* ctx, const char* key, int64_t delta, int64_t* result) {
  auto* s = static_cast<DirStore*>(ctx);
  ++s->calls;
  int lock = open((s->dir + "/.lock").c_str(), O_CREAT | O_RDWR, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) return 1;
  int64_t value = 0;
  {
    std::ifstream in(s->path(key));
    if (in) in >> value;
  }
  value += delta;
  std::string text = std::to_string(value);
  int r = dirSet(ctx, key, text.data(), text.size());
  close(lock);
  *result = value;
  return r;
}

inline tuttiStore_t storeOf(DirStore& s) {
  return tuttiStore_t{&s, dirSet, dirGet, dirCheck, dirAdd};
}

}  // namespace tutti::test
