#include "common/dtype.h"

namespace tutti {

const char* opName(tuttiRedOp_t op) { return redOpName(op); }

}  // namespace tutti
