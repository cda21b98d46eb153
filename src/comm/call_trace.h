// The flight recorder of one communicator: its last calls (collectives, barriers and
// point-to-point batches) with their state and times, for hang and failure diagnosis
// (docs/reliability.md). Recording costs two clock reads and a few stores per call; the
// calls are described in words only when the record is printed.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "transports/window.h"

namespace tutti {

class CallTrace {
 public:
  enum class State : uint8_t { kRunning, kDone, kFailed };
  struct Record {
    uint64_t number = 0;           // 1, 2, ... per communicator (collectives and p2p)
    transport::Window::Tag tag{};  // what the call was (Communicator::describeCall)
    const char* algorithm = "";    // static string
    State state = State::kRunning;
    double start = 0, end = 0;  // nowSeconds()
  };

  explicit CallTrace(size_t capacity) : ring_(capacity == 0 ? 1 : capacity) {}

  // A call starts / ends (the last begun one).
  void begin(const transport::Window::Tag& tag, const char* algorithm);
  void end(bool ok);

  // One line per recorded call, oldest first: "#12 allreduce(...) ring done 35.2 us (at
  // t=...)". describe turns a tag into words.
  std::string text(const std::function<std::string(const transport::Window::Tag&)>& describe) const;
  // What this rank is doing now, in one phrase: "in call #5 allreduce(...) for 20.1 s" or
  // "between calls, 3.0 s after call #4 allreduce(...) (done)".
  std::string current(
      const std::function<std::string(const transport::Window::Tag&)>& describe) const;

 private:
  std::string line(const Record& r, double now,
                   const std::function<std::string(const transport::Window::Tag&)>& describe) const;
  mutable std::mutex mu_;
  std::vector<Record> ring_;
  uint64_t calls_ = 0;  // records written
};

}  // namespace tutti
