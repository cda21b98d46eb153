#include "common/dtype.h"

namespace tutti {

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
