// Helpers for multi-process communicator tests over the public C API.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tutti/tutti.h"

namespace tutti::test {

#define TUTTI_ASSERT_OK(call, comm)                                                           \
  do {                                                                                        \
    tuttiResult_t tutti_r_ = (call);                                                          \
    ASSERT_EQ(tutti_r_, tuttiSuccess)                                                         \
        << #call << ": " << tuttiGetErrorString(tutti_r_) << ": " << tuttiGetLastError(comm); \
  } while (0)

// A unique id made in the test (parent) process; forked ranks init from it.
inline tuttiUniqueId makeId() {
  tuttiUniqueId id;
  EXPECT_EQ(tuttiGetUniqueId(&id), tuttiSuccess) << tuttiGetLastError(nullptr);
  return id;
}

}  // namespace tutti::test
