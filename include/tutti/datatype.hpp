// Facts about tuttiDataType_t for C++ code that handles buffers by datatype (the library,
// the perf tests, tutti-soak, the tests' verifiable data): one table for all. Header-only.
#pragma once

#include <cstddef>

#include "tutti/tutti.h"

namespace tutti {

// Bytes per element; 0 for a value outside the enum.
constexpr size_t dataTypeSize(tuttiDataType_t t) {
  switch (t) {
    case tuttiInt8:
    case tuttiUint8:
      return 1;
    case tuttiFloat16:
    case tuttiBfloat16:
      return 2;
    case tuttiInt32:
    case tuttiUint32:
    case tuttiFloat32:
      return 4;
    case tuttiInt64:
    case tuttiUint64:
    case tuttiFloat64:
      return 8;
    default:
      return 0;
  }
}

constexpr bool isFloatDataType(tuttiDataType_t t) {
  return t == tuttiFloat16 || t == tuttiBfloat16 || t == tuttiFloat32 || t == tuttiFloat64;
}

}  // namespace tutti
