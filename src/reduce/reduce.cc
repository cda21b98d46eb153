// Run-time dispatch of the reduction kernels and divide() (the tuttiAvg finish).
#include "reduce/reduce.h"

#include <cpuid.h>

#include <atomic>
#include <cstring>
#include <type_traits>

#include "common/dtype.h"
#include "common/error.h"
#include "reduce/kernels.h"
#include "reduce/reduce_testing.h"
#include "reduce/scalar_ops.h"

namespace tutti::reduce {
namespace detail {
namespace {

enum Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kNumIsa = 3 };
constexpr const char* kIsaNames[kNumIsa] = {"scalar", "avx2", "avx512"};

// F16C from CPUID (clang's __builtin_cpu_supports does not know "f16c").
bool cpuHasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

bool cpuHas(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case kScalar:
      return true;
    case kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuHasF16c();
    case kAvx512:
      return cpuHas(kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw");
    default:
      return false;
  }
}

// Each ISA's table with its missing entries filled from the scalar table.
struct Tables {
  KernelTable t[kNumIsa];
  Isa best = kScalar;
  Tables() {
    const KernelTable* src[kNumIsa] = {&scalarKernels(), &avx2Kernels(), &avx512Kernels()};
    for (int i = 0; i < kNumIsa; ++i) {
      for (int d = 0; d < tuttiNumTypes; ++d) {
        for (int o = 0; o < kNumKernelOps; ++o) {
          Kernel k = src[i]->k[d][o];
          t[i].k[d][o] = k ? k : src[kScalar]->k[d][o];
        }
      }
    }
    if (cpuHas(kAvx512)) {
      best = kAvx512;
    } else if (cpuHas(kAvx2)) {
      best = kAvx2;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

std::atomic<int> gForced{-1};

Isa current() {
  int f = gForced.load(std::memory_order_relaxed);
  return f >= 0 ? static_cast<Isa>(f) : tables().best;
}

int parseIsa(const char* isa) {
  for (int i = 0; i < kNumIsa; ++i) {
    if (std::strcmp(isa, kIsaNames[i]) == 0) return i;
  }
  return -1;
}

}  // namespace

bool isaSupported(const char* isa) {
  int i = isa ? parseIsa(isa) : -1;
  return i >= 0 && cpuHas(static_cast<Isa>(i));
}

void setIsaForTesting(const char* isa) {
  TUTTI_CHECK_ARG(isa != nullptr, "reduce::setIsaForTesting: null name");
  if (std::strcmp(isa, "auto") == 0) {
    gForced.store(-1);
    return;
  }
  int i = parseIsa(isa);
  TUTTI_CHECK_ARG(i >= 0, "reduce::setIsaForTesting: unknown ISA '", isa,
                  "' (use scalar, avx2, avx512 or auto)");
  if (!cpuHas(static_cast<Isa>(i))) {
    fail(tuttiUnsupported, "reduce::setIsaForTesting: this CPU cannot run '", isa, "'");
  }
  gForced.store(i);
}

namespace {

// The checks reduce() and kernelFor() share: a valid dtype, a valid op other than tuttiAvg,
// and an op defined on the dtype (no bitwise op on a floating type).
void checkKernelArgs(tuttiDataType_t dtype, tuttiRedOp_t op) {
  TUTTI_CHECK_ARG(dtypeValid(dtype), "reduce: invalid datatype ", static_cast<int>(dtype));
  TUTTI_CHECK_ARG(opValid(op) && op != tuttiAvg, "reduce: invalid op ", static_cast<int>(op),
                  op == tuttiAvg ? " (tuttiAvg: reduce with tuttiSum, then divide())" : "");
  TUTTI_CHECK_ARG(opAppliesTo(dtype, op), "reduce: op ", opName(op), " is not defined on ",
                  dtypeName(dtype), " (bitwise ops take integer types only)");
}

}  // namespace
}  // namespace detail

void reduce(void* dst, const void* a, const void* b, size_t count, tuttiDataType_t dtype,
            tuttiRedOp_t op) {
  detail::checkKernelArgs(dtype, op);
  if (count == 0) return;
  TUTTI_CHECK_ARG(dst && a && b, "reduce: null buffer with count ", count);
  detail::tables().t[detail::current()].k[dtype][op](dst, a, b, count);
}

Kernel kernelFor(tuttiDataType_t dtype, tuttiRedOp_t op) {
  detail::checkKernelArgs(dtype, op);
  static_assert(std::is_same_v<Kernel, detail::Kernel>);
  return detail::tables().t[detail::current()].k[dtype][op];
}

namespace {

template <typename T>
void divideInt(void* dst, size_t n, int64_t divisor) {
  T* d = static_cast<T*>(dst);
  if constexpr (std::is_signed_v<T>) {
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(static_cast<int64_t>(d[i]) / divisor);
  } else {
    const uint64_t q = static_cast<uint64_t>(divisor);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(static_cast<uint64_t>(d[i]) / q);
  }
}

template <typename F>
void divideFloat(void* dst, size_t n, int64_t divisor) {
  F* d = static_cast<F*>(dst);
  const F q = static_cast<F>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = d[i] / q;
}

template <bool kBf16>
void divide16(void* dst, size_t n, int64_t divisor) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const float q = static_cast<float>(divisor);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (kBf16) {
      d[i] = detail::floatToBf16Bits(detail::bf16BitsToFloat(d[i]) / q);
    } else {
      d[i] = detail::floatToHalfBits(detail::halfBitsToFloat(d[i]) / q);
    }
  }
}

}  // namespace

void divide(void* dst, size_t count, tuttiDataType_t dtype, int64_t divisor) {
  TUTTI_CHECK_ARG(dtypeValid(dtype), "reduce::divide: invalid datatype ", static_cast<int>(dtype));
  TUTTI_CHECK_ARG(divisor > 0, "reduce::divide: divisor must be positive, got ", divisor);
  if (count == 0 || divisor == 1) return;
  TUTTI_CHECK_ARG(dst != nullptr, "reduce::divide: null buffer with count ", count);
  switch (dtype) {
    case tuttiInt8:
      return divideInt<int8_t>(dst, count, divisor);
    case tuttiUint8:
      return divideInt<uint8_t>(dst, count, divisor);
    case tuttiInt16:
      return divideInt<int16_t>(dst, count, divisor);
    case tuttiUint16:
      return divideInt<uint16_t>(dst, count, divisor);
    case tuttiInt32:
      return divideInt<int32_t>(dst, count, divisor);
    case tuttiUint32:
      return divideInt<uint32_t>(dst, count, divisor);
    case tuttiInt64:
      return divideInt<int64_t>(dst, count, divisor);
    case tuttiUint64:
      return divideInt<uint64_t>(dst, count, divisor);
    case tuttiFloat16:
      return divide16<false>(dst, count, divisor);
    case tuttiBfloat16:
      return divide16<true>(dst, count, divisor);
    case tuttiFloat32:
      return divideFloat<float>(dst, count, divisor);
    case tuttiFloat64:
      return divideFloat<double>(dst, count, divisor);
    default:
      break;
  }
}

const char* isaName() { return detail::kIsaNames[detail::current()]; }

}  // namespace tutti::reduce
