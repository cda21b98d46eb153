// Facts about tuttiDataType_t (and the names of tuttiRedOp_t) for C++ code that handles
// buffers by datatype (the library, the perf tests, tutti-soak, the tests' verifiable data):
// one table for all (sizes, names, float or not). Header-only.
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
    case tuttiInt16:
    case tuttiUint16:
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

// The names nccl-tests prints ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
// "float", "double", "bfloat16"), and "int16", "uint16"; "?" for a value outside the enum.
constexpr const char* dataTypeName(tuttiDataType_t t) {
  switch (t) {
    case tuttiInt8:
      return "int8";
    case tuttiUint8:
      return "uint8";
    case tuttiInt32:
      return "int32";
    case tuttiUint32:
      return "uint32";
    case tuttiInt64:
      return "int64";
    case tuttiUint64:
      return "uint64";
    case tuttiFloat16:
      return "half";
    case tuttiFloat32:
      return "float";
    case tuttiFloat64:
      return "double";
    case tuttiBfloat16:
      return "bfloat16";
    case tuttiInt16:
      return "int16";
    case tuttiUint16:
      return "uint16";
    default:
      return "?";
  }
}

// The reduction op's name ("sum", "prod", "max", "min", "avg", "band", "bor", "bxor"); "?"
// outside the enum.
constexpr const char* redOpName(tuttiRedOp_t op) {
  switch (op) {
    case tuttiSum:
      return "sum";
    case tuttiProd:
      return "prod";
    case tuttiMax:
      return "max";
    case tuttiMin:
      return "min";
    case tuttiAvg:
      return "avg";
    case tuttiBand:
      return "band";
    case tuttiBor:
      return "bor";
    case tuttiBxor:
      return "bxor";
    default:
      return "?";
  }
}

constexpr bool isFloatDataType(tuttiDataType_t t) {
  return t == tuttiFloat16 || t == tuttiBfloat16 || t == tuttiFloat32 || t == tuttiFloat64;
}

// band, bor, bxor: defined on the integer types only.
constexpr bool isBitwiseRedOp(tuttiRedOp_t op) {
  return op == tuttiBand || op == tuttiBor || op == tuttiBxor;
}

// Whether op is defined on t (every op on integers; no bitwise op on a floating type). Both
// must be inside their enums.
constexpr bool redOpAppliesTo(tuttiDataType_t t, tuttiRedOp_t op) {
  return !(isBitwiseRedOp(op) && isFloatDataType(t));
}

}  // namespace tutti
