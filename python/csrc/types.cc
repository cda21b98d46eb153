#include "types.h"

#include <stdexcept>
#include <string>

namespace tutti::torch_backend {

tuttiDataType_t dataTypeOf(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kHalf:
      return tuttiFloat16;
    case at::kBFloat16:
      return tuttiBfloat16;
    case at::kFloat:
      return tuttiFloat32;
    case at::kDouble:
      return tuttiFloat64;
    case at::kChar:
      return tuttiInt8;
    case at::kByte:
    case at::kBool:
      return tuttiUint8;
    case at::kShort:
      return tuttiInt16;
    case at::kUInt16:
      return tuttiUint16;
    case at::kInt:
      return tuttiInt32;
    case at::kUInt32:
      return tuttiUint32;
    case at::kLong:
      return tuttiInt64;
    case at::kUInt64:
      return tuttiUint64;
    default:
      throw std::invalid_argument(std::string("tutti: dtype ") + c10::toString(t.scalar_type()) +
                                  " is not supported (float16, bfloat16, float32, float64, int8, "
                                  "uint8, int16, uint16, int32, uint32, int64, uint64 and bool "
                                  "are)");
  }
}

Reduction reductionOf(const c10d::ReduceOp& op, at::ScalarType type) {
  const bool isBool = type == at::kBool;
  Reduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      r.op = isBool ? tuttiMax : tuttiSum;
      return r;
    case c10d::ReduceOp::PRODUCT:
      r.op = isBool ? tuttiMin : tuttiProd;
      return r;
    case c10d::ReduceOp::MIN:
      r.op = tuttiMin;
      return r;
    case c10d::ReduceOp::MAX:
      r.op = tuttiMax;
      return r;
    case c10d::ReduceOp::AVG:
      if (isBool) throw std::invalid_argument("tutti: AVG is not defined on bool tensors");
      r.op = tuttiAvg;
      return r;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      // Integer and bool tensors (bool as uint8 0/1, which the bitwise kernels keep 0/1).
      if (at::isFloatingType(type) || at::isComplexType(type))
        throw std::invalid_argument(std::string("tutti: bitwise reductions (BAND, BOR, BXOR) "
                                                "need an integer or bool tensor, not ") +
                                    c10::toString(type));
      r.op = op.op_ == c10d::ReduceOp::BAND  ? tuttiBand
             : op.op_ == c10d::ReduceOp::BOR ? tuttiBor
                                             : tuttiBxor;
      return r;
    case c10d::ReduceOp::PREMUL_SUM: {
      if (!at::isFloatingType(type))
        throw std::invalid_argument("tutti: PREMUL_SUM needs a floating-point tensor");
      auto* s = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
      if (s == nullptr) throw std::invalid_argument("tutti: PREMUL_SUM without its factor");
      r.op = tuttiSum;
      r.premultiply = true;
      if (!s->tensor_factor.defined()) {
        r.factor = s->double_factor;
      } else {
        const at::Tensor& f = s->tensor_factor;
        if (f.numel() != 1)
          throw std::invalid_argument("tutti: PREMUL_SUM's tensor factor must hold one value");
        r.factor = f.to(at::kCPU).item<double>();
      }
      return r;
    }
    default:
      throw std::invalid_argument("tutti: unknown reduce op " + std::to_string(int(op.op_)));
  }
}

void checkCpu(const at::Tensor& t, const char* what) {
  if (!t.device().is_cpu())
    throw std::invalid_argument(std::string("tutti: ") + what + " is on " + t.device().str() +
                                "; the torch backend serves CPU tensors");
  if (t.is_sparse()) throw std::invalid_argument(std::string("tutti: ") + what + " is sparse");
}

}  // namespace tutti::torch_backend
