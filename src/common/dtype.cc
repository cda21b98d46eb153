#include "common/dtype.h"

namespace tutti {

const char* dtypeName(tuttiDataType_t t) {
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
    default:
      return "?";
  }
}

const char* opName(tuttiRedOp_t op) {
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
    default:
      return "?";
  }
}

}  // namespace tutti
