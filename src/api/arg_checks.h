// The argument checks every entry point shares. Enum arguments come from C callers and may
// hold any int: they are read as ints (loading an out-of-range value through the enum type is
// undefined in C++) and checked before use; errors are tuttiInvalidArgument naming the value.
#pragma once

#include <cstring>

#include "comm/communicator.h"
#include "common/dtype.h"
#include "common/error.h"

namespace tutti::api {

template <typename E>
int rawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof(v));
  return v;
}

inline void checkDatatype(const tuttiDataType_t& datatype) {
  TUTTI_CHECK_ARG(dtypeValid(rawEnum(datatype)), "invalid datatype ", rawEnum(datatype));
}

// After checkDatatype(datatype): a valid op, and one defined on datatype (the bitwise ops
// take integer types only).
inline void checkOp(const tuttiRedOp_t& op, const tuttiDataType_t& datatype) {
  TUTTI_CHECK_ARG(opValid(rawEnum(op)), "invalid reduction op ", rawEnum(op));
  TUTTI_CHECK_ARG(opAppliesTo(datatype, op), "reduction op ", opName(op), " is not defined on ",
                  dtypeName(datatype), " (bitwise ops take integer types only)");
}

// what: "root" or "peer".
inline void checkRank(const Communicator& c, int r, const char* what) {
  TUTTI_CHECK_ARG(r >= 0 && r < c.size(), what, " ", r, " out of range [0, ", c.size(), ")");
}

}  // namespace tutti::api
