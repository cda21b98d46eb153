// Thin C++ wrapper over tutti.h: RAII communicator, exceptions carrying the result code.
// Header-only; the ABI stays the C one.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "tutti/tutti.h"

namespace tutti {

class Error : public std::runtime_error {
 public:
  Error(tuttiResult_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  tuttiResult_t code() const noexcept { return code_; }

 private:
  tuttiResult_t code_;
};

inline void check(tuttiResult_t r, tuttiComm_t comm = nullptr) {
  if (r != tuttiSuccess && r != tuttiInProgress)
    throw Error(r, std::string(tuttiGetErrorString(r)) + ": " + tuttiGetLastError(comm));
}

class Comm {
 public:
  Comm() = default;
  static Comm fromEnv(tuttiConfig_t* config = nullptr) {
    Comm c;
    check(tuttiCommInitFromEnv(&c.comm_, config));
    return c;
  }
  static Comm fromUniqueId(int nranks, const tuttiUniqueId& id, int rank,
                           tuttiConfig_t* config = nullptr) {
    Comm c;
    check(tuttiCommInitRankConfig(&c.comm_, nranks, id, rank, config));
    return c;
  }
  Comm(Comm&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  Comm& operator=(Comm&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = std::exchange(o.comm_, nullptr);
    }
    return *this;
  }
  ~Comm() { reset(); }

  tuttiComm_t get() const { return comm_; }
  int rank() const {
    int r = -1;
    check(tuttiCommUserRank(comm_, &r), comm_);
    return r;
  }
  int size() const {
    int n = 0;
    check(tuttiCommCount(comm_, &n), comm_);
    return n;
  }
  Comm split(int color, int key) const {
    Comm c;
    check(tuttiCommSplit(comm_, color, key, &c.comm_, nullptr), comm_);
    return c;
  }
  void allReduce(const void* send, void* recv, size_t count, tuttiDataType_t t,
                 tuttiRedOp_t op) const {
    check(tuttiAllReduce(send, recv, count, t, op, comm_, nullptr), comm_);
  }
  void broadcast(const void* send, void* recv, size_t count, tuttiDataType_t t, int root) const {
    check(tuttiBroadcast(send, recv, count, t, root, comm_, nullptr), comm_);
  }
  void allGather(const void* send, void* recv, size_t count, tuttiDataType_t t) const {
    check(tuttiAllGather(send, recv, count, t, comm_, nullptr), comm_);
  }
  void reduceScatter(const void* send, void* recv, size_t count, tuttiDataType_t t,
                     tuttiRedOp_t op) const {
    check(tuttiReduceScatter(send, recv, count, t, op, comm_, nullptr), comm_);
  }
  void barrier() const { check(tuttiBarrier(comm_, nullptr), comm_); }
  void abort() const { tuttiCommAbort(comm_); }

 private:
  void reset() {
    if (comm_ != nullptr) tuttiCommDestroy(comm_);
    comm_ = nullptr;
  }
  tuttiComm_t comm_ = nullptr;
};

// RAII group: tuttiGroupStart in the constructor, tuttiGroupEnd in end() (or destructor).
class Group {
 public:
  Group() { check(tuttiGroupStart()); }
  void end() {
    if (open_) {
      open_ = false;
      check(tuttiGroupEnd());
    }
  }
  ~Group() {
    if (open_) tuttiGroupEnd();
  }

 private:
  bool open_ = true;
};

}  // namespace tutti
