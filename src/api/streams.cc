// tuttiStream* and tuttiEvent*: host streams (host_stream.h) and positions in them.
#include <cxxabi.h>

#include <memory>
#include <string>
#include <utility>

#include "api_guard.h"
#include "common/error.h"
#include "group.h"
#include "host_stream.h"

struct tuttiEvent {
  std::shared_ptr<tutti::api::HostStream> stream;  // null until recorded
  uint64_t position = 0;
};

namespace {

using tutti::api::guarded;
using tutti::api::HostStream;

std::shared_ptr<HostStream> liveStream(tuttiStream_t stream) {
  auto s = tutti::api::hostStreamOf(stream);
  TUTTI_CHECK_ARG(s != nullptr, "stream ", reinterpret_cast<uintptr_t>(stream),
                  " is not a host stream of tuttiStreamCreate (destroyed, or a cudaStream_t)");
  s->checkUsableHere();
  return s;
}

// A failure of the stream's calls up to position: its code, with its text as the thread's
// last error (the text already names the call).
tuttiResult_t reported(HostStream& s, uint64_t position, bool clear) {
  HostStream::Failure f = s.failureUpTo(position, clear);
  if (f.code != tuttiSuccess) tutti::api::threadLastError() = f.text;
  return f.code;
}

// fn(userData) as a stream task: a result other than success, or an exception, is the
// stream's failure with a text naming the host function; a forced unwind (the thread exiting:
// pthread_exit, cancellation) goes on, as swallowing it aborts the process. UBSan's check of the
// reference a catch binds does not know the forced unwind, which has no exception object.
__attribute__((no_sanitize("undefined"))) tuttiResult_t runHostFunction(tuttiHostFn_t fn,
                                                                        void* userData) {
  tuttiResult_t r = tuttiInternalError;
  try {
    r = fn(userData);
  } catch (const abi::__forced_unwind&) {
    throw;
  } catch (...) {
    tutti::api::threadLastError() =
        "tuttiStreamLaunchHostFunc: the host function threw an exception";
    return tuttiInternalError;
  }
  if (r != tuttiSuccess)
    tutti::api::threadLastError() =
        std::string("tuttiStreamLaunchHostFunc: the host function returned ") +
        tuttiGetErrorString(r);
  return r;
}

}  // namespace

extern "C" {

TUTTI_API tuttiResult_t tuttiStreamCreate(tuttiStream_t* stream) {
  return guarded(nullptr, "tuttiStreamCreate", [&] {
    TUTTI_CHECK_ARG(stream != nullptr, "stream is NULL");
    *stream = tutti::api::registerHostStream(std::make_shared<HostStream>());
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiStreamDestroy(tuttiStream_t stream) {
  return guarded(nullptr, "tuttiStreamDestroy", [&] {
    if (stream == nullptr) return tuttiSuccess;
    auto s = tutti::api::hostStreamOf(stream);
    TUTTI_CHECK_ARG(s != nullptr, "stream ", reinterpret_cast<uintptr_t>(stream),
                    " is not a host stream of tuttiStreamCreate (destroyed twice?)");
    // Registered while its last tasks run: a host function among them may still ask about its
    // stream (tuttiStreamSynchronize from inside); new tasks are refused meanwhile.
    s->close();
    tutti::api::unregisterHostStream(stream);
    return reported(*s, s->lastPosition(), true);
  });
}

TUTTI_API tuttiResult_t tuttiStreamSynchronize(tuttiStream_t stream) {
  return guarded(nullptr, "tuttiStreamSynchronize", [&] {
    if (stream == nullptr) return tuttiSuccess;
    auto s = liveStream(stream);
    // Inside one of its own host functions: the calls before it have finished.
    if (const uint64_t here = s->runningHere(); here != 0) return reported(*s, here - 1, true);
    const uint64_t end = s->lastPosition();
    s->waitFor(end, tutti::api::groupDepth() == 0);
    return reported(*s, end, true);
  });
}

TUTTI_API tuttiResult_t tuttiStreamQuery(tuttiStream_t stream) {
  return guarded(nullptr, "tuttiStreamQuery", [&] {
    if (stream == nullptr) return tuttiSuccess;
    auto s = liveStream(stream);
    const uint64_t end = s->lastPosition();
    if (tuttiResult_t r = reported(*s, end, false); r != tuttiSuccess) return r;
    return s->finished(end) ? tuttiSuccess : tuttiInProgress;
  });
}

TUTTI_API tuttiResult_t tuttiStreamWaitEvent(tuttiStream_t stream, tuttiEvent_t event) {
  return guarded(nullptr, "tuttiStreamWaitEvent", [&] {
    TUTTI_CHECK_ARG(event != nullptr, "event is NULL");
    auto s = liveStream(stream);
    if (event->stream == nullptr || event->stream == s) return tuttiSuccess;
    s->enqueue([other = event->stream, position = event->position] {
      other->waitFor(position);
      return tuttiSuccess;
    });
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiStreamLaunchHostFunc(tuttiStream_t stream, tuttiHostFn_t fn,
                                                  void* userData) {
  return guarded(nullptr, "tuttiStreamLaunchHostFunc", [&] {
    TUTTI_CHECK_ARG(fn != nullptr, "fn is NULL");
    if (tutti::api::groupDepth() > 0)
      tutti::fail(tuttiInvalidUsage,
                  "tuttiStreamLaunchHostFunc inside a group (the group's calls are enqueued at "
                  "tuttiGroupEnd, after the host function)");
    auto s = liveStream(stream);
    s->enqueue([fn, userData] { return runHostFunction(fn, userData); });
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiEventCreate(tuttiEvent_t* event) {
  return guarded(nullptr, "tuttiEventCreate", [&] {
    TUTTI_CHECK_ARG(event != nullptr, "event is NULL");
    *event = std::make_unique<tuttiEvent>().release();
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiEventRecord(tuttiEvent_t event, tuttiStream_t stream) {
  return guarded(nullptr, "tuttiEventRecord", [&] {
    TUTTI_CHECK_ARG(event != nullptr, "event is NULL");
    auto s = liveStream(stream);
    event->position = s->lastPosition();
    event->stream = std::move(s);
    return tuttiSuccess;
  });
}

TUTTI_API tuttiResult_t tuttiEventQuery(tuttiEvent_t event) {
  return guarded(nullptr, "tuttiEventQuery", [&] {
    TUTTI_CHECK_ARG(event != nullptr, "event is NULL");
    if (event->stream == nullptr) return tuttiSuccess;
    if (tuttiResult_t r = reported(*event->stream, event->position, false); r != tuttiSuccess)
      return r;
    return event->stream->finished(event->position) ? tuttiSuccess : tuttiInProgress;
  });
}

TUTTI_API tuttiResult_t tuttiEventSynchronize(tuttiEvent_t event) {
  return guarded(nullptr, "tuttiEventSynchronize", [&] {
    TUTTI_CHECK_ARG(event != nullptr, "event is NULL");
    if (event->stream == nullptr) return tuttiSuccess;
    event->stream->waitFor(event->position, tutti::api::groupDepth() == 0);
    return reported(*event->stream, event->position, false);
  });
}

TUTTI_API tuttiResult_t tuttiEventDestroy(tuttiEvent_t event) {
  std::unique_ptr<tuttiEvent> owned(event);
  return tuttiSuccess;
}

}  // extern "C"
