// The process's answer to tutti-inspect: one listening TCP socket and one thread per process,
// alive while at least one communicator is registered. A client sends
// "TUTTI-INSPECT 1 <token>\n" and gets "TUTTI-INSPECT 1 ok\n" and the process's report
// (report.h: every registered communicator's status, taken when asked), or
// "TUTTI-INSPECT 1 denied\n" for a wrong token; the socket is then closed. The thread answers
// while the communicators' own threads are blocked in a call; a stopped process (SIGSTOP)
// answers nothing (the kernel still completes the connect). A forked child starts its own.
// Knows nothing of communicators: each registers a function that reports on it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "inspect/report.h"

namespace tutti::inspect {

class Responder {
 public:
  using Status = std::function<CommReport()>;

  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& o) noexcept : id_(o.id_), address_(std::move(o.address_)) {
      o.id_ = 0;
    }
    Registration& operator=(Registration&& o) noexcept;
    ~Registration() { release(); }
    // "host:port|token" of the process's responder ("" for an empty registration).
    const std::string& address() const { return address_; }

   private:
    friend class Responder;
    void release();
    uint64_t id_ = 0;
    std::string address_;
  };

  // Registers `status` (called on the responder's thread, never after the registration is
  // destroyed; a call in progress is waited for). The first registration of the process
  // binds bindHost:0 and starts the thread; the last one's release joins it and closes the
  // socket. Throws tuttiSystemError when the socket cannot be made.
  static Registration add(const std::string& bindHost, Status status);

  static constexpr const char* kHello = "TUTTI-INSPECT 1";
};

}  // namespace tutti::inspect
