// Scalar reference kernels for every dtype and op (bitwise ops: integer types only); also the
// fallback on any CPU.
#include <cstdint>
#include <type_traits>

#include "reduce/kernels.h"
#include "reduce/scalar_ops.h"

namespace tutti::reduce::detail {
namespace {

struct Sum {};
struct Prod {};
struct Max {};
struct Min {};
struct Band {};
struct Bor {};
struct Bxor {};

template <typename Op>
constexpr bool kBitwise =
    std::is_same_v<Op, Band> || std::is_same_v<Op, Bor> || std::is_same_v<Op, Bxor>;

template <typename Op, typename T>
inline T applyInt(T a, T b) {
  if constexpr (std::is_same_v<Op, Sum>) return wrapAdd(a, b);
  if constexpr (std::is_same_v<Op, Prod>) return wrapMul(a, b);
  if constexpr (std::is_same_v<Op, Max>) return a > b ? a : b;
  if constexpr (std::is_same_v<Op, Min>) return a < b ? a : b;
  if constexpr (std::is_same_v<Op, Band>) return static_cast<T>(a & b);
  if constexpr (std::is_same_v<Op, Bor>) return static_cast<T>(a | b);
  if constexpr (std::is_same_v<Op, Bxor>) return static_cast<T>(a ^ b);
}

template <typename Op, typename F>
inline F applyFloat(F a, F b) {
  if constexpr (std::is_same_v<Op, Sum>) return a + b;
  if constexpr (std::is_same_v<Op, Prod>) return a * b;
  if constexpr (std::is_same_v<Op, Max>) return fmaxProp(a, b);
  if constexpr (std::is_same_v<Op, Min>) return fminProp(a, b);
}

template <typename Op, typename T>
void intKernel(void* dst, const void* a, const void* b, size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = applyInt<Op>(x[i], y[i]);
}

template <typename Op, typename F>
void floatKernel(void* dst, const void* a, const void* b, size_t n) {
  F* d = static_cast<F*>(dst);
  const F* x = static_cast<const F*>(a);
  const F* y = static_cast<const F*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = applyFloat<Op>(x[i], y[i]);
}

template <typename Op, bool kBf16>
void f16Kernel(void* dst, const void* a, const void* b, size_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (kBf16) {
      d[i] = floatToBf16Bits(applyFloat<Op>(bf16BitsToFloat(x[i]), bf16BitsToFloat(y[i])));
    } else {
      d[i] = floatToHalfBits(applyFloat<Op>(halfBitsToFloat(x[i]), halfBitsToFloat(y[i])));
    }
  }
}

template <typename Op>
constexpr void fillOp(KernelTable& t, int op) {
  t.k[tuttiInt8][op] = intKernel<Op, int8_t>;
  t.k[tuttiUint8][op] = intKernel<Op, uint8_t>;
  t.k[tuttiInt16][op] = intKernel<Op, int16_t>;
  t.k[tuttiUint16][op] = intKernel<Op, uint16_t>;
  t.k[tuttiInt32][op] = intKernel<Op, int32_t>;
  t.k[tuttiUint32][op] = intKernel<Op, uint32_t>;
  t.k[tuttiInt64][op] = intKernel<Op, int64_t>;
  t.k[tuttiUint64][op] = intKernel<Op, uint64_t>;
  if constexpr (!kBitwise<Op>) {  // no bitwise op on a floating type: those slots stay null
    t.k[tuttiFloat16][op] = f16Kernel<Op, false>;
    t.k[tuttiBfloat16][op] = f16Kernel<Op, true>;
    t.k[tuttiFloat32][op] = floatKernel<Op, float>;
    t.k[tuttiFloat64][op] = floatKernel<Op, double>;
  }
}

constexpr KernelTable makeTable() {
  KernelTable t{};
  fillOp<Sum>(t, tuttiSum);
  fillOp<Prod>(t, tuttiProd);
  fillOp<Max>(t, tuttiMax);
  fillOp<Min>(t, tuttiMin);
  fillOp<Band>(t, tuttiBand);
  fillOp<Bor>(t, tuttiBor);
  fillOp<Bxor>(t, tuttiBxor);
  return t;
}

constexpr KernelTable kTable = makeTable();

}  // namespace

const KernelTable& scalarKernels() { return kTable; }

}  // namespace tutti::reduce::detail
