// tuttiGetErrorString, tuttiGetLastError, tuttiGetVersion, and error recording.
#include <mutex>

#include "api_guard.h"
#include "comm_handle.h"
#include "group.h"

namespace tutti::api {

std::string& threadLastError() {
  thread_local std::string text;
  return text;
}

tuttiResult_t recordError(tuttiComm_t comm, const char* function, tuttiResult_t code,
                          const std::string& message) {
  // The function's name once, also when the message already starts with it (errors thrown
  // by helpers that name the call themselves).
  const std::string prefix = std::string(function) + ": ";
  std::string text = message.rfind(prefix, 0) == 0 ? message : prefix + message;
  threadLastError() = text;
  if (groupDepth() > 0 && recordedByGroups(function)) noteRefusedInGroup(code, text);
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->errorMutex);
    comm->lastError = text;
    // A peer that died or stopped answering leaves the communicator failed: the other ranks
    // may be anywhere in their calls, so nothing collective can be trusted to complete.
    // So does a call the ranks made differently (the communicator closed its connections).
    bool outOfStep = comm->impl && (comm->impl->failure() != tuttiSuccess ||
                                    comm->lanes.failure() != tuttiSuccess);
    if ((code == tuttiRemoteError || code == tuttiTimeout || outOfStep) &&
        comm->failure.load() == tuttiSuccess) {
      comm->failureText = text;
      comm->failure = code;
    }
  }
  TUTTI_WARN(kInit, text << " [" << tuttiGetErrorString(code) << "]");
  return code;
}

Communicator& ready(tuttiComm_t comm) {
  Communicator& c = initialised(comm);
  if (tuttiResult_t f = comm->failure.load(); f != tuttiSuccess) {
    std::string cause;
    {
      std::lock_guard<std::mutex> lock(comm->errorMutex);
      cause = comm->failureText;
    }
    fail(f, "the communicator failed earlier (", cause,
         "); destroy or abort it (tuttiCommGetAsyncError reports the failure)");
  }
  return c;
}

Communicator& initialised(tuttiComm_t comm) {
  TUTTI_CHECK_ARG(comm != nullptr, "comm is NULL");
  if (std::string why = forkedAway(comm->forkGeneration, comm->creatorPid); !why.empty())
    fail(tuttiInvalidUsage, why);
  tuttiResult_t async = comm->asyncError.load();
  if (async == tuttiInProgress)
    fail(tuttiInvalidUsage, "communicator is still initialising (poll tuttiCommGetAsyncError)");
  if (comm->impl == nullptr)
    fail(tuttiInvalidUsage, "communicator failed to initialise or was destroyed");
  return *comm->impl;
}

}  // namespace tutti::api

extern "C" {

TUTTI_API const char* tuttiGetErrorString(tuttiResult_t result) {
  switch (result) {
    case tuttiSuccess:
      return "no error";
    case tuttiSystemError:
      return "system error (a system call failed)";
    case tuttiInternalError:
      return "internal error (a bug in tutti)";
    case tuttiInvalidArgument:
      return "invalid argument";
    case tuttiInvalidUsage:
      return "invalid usage";
    case tuttiRemoteError:
      return "remote error (a peer failed or disconnected)";
    case tuttiTimeout:
      return "timeout (a peer did not answer within TUTTI_TIMEOUT)";
    case tuttiInProgress:
      return "operation in progress";
    case tuttiUnsupported:
      return "unsupported by this build or machine";
    default:
      return "unknown result code";
  }
}

TUTTI_API const char* tuttiGetLastError(tuttiComm_t comm) {
  if (comm == nullptr) return tutti::api::threadLastError().c_str();
  std::lock_guard<std::mutex> lock(comm->errorMutex);
  thread_local std::string copy;
  copy = comm->lastError;
  return copy.c_str();
}

TUTTI_API tuttiResult_t tuttiGetVersion(int* version) {
  if (version == nullptr) {
    tutti::api::threadLastError() = "tuttiGetVersion: version is NULL";
    return tuttiInvalidArgument;
  }
  *version = TUTTI_VERSION_CODE;
  return tuttiSuccess;
}

}  // extern "C"
