// Verifiable data for every correctness check (the multi-process case runner, the simulator
// harness, the perf tests' -c, the netns / verbs matrices, the GPU tests): what rank r puts at
// element i of call `seed`, the expected result of each collective (in closed form), exact
// conversion to and from every element type, and guard bytes around outputs. Written against the
// public header only (no library code: the reference must not share the library's conversions or
// kernels).
//
// Values are pseudo-random (a hash of seed, rank and element: not periodic in rank or element,
// different for every call seed) and bounded so that every reduction is exact in every type
// and every order at the given rank count, with expected values in closed form (O(1) per
// element, no loop over the ranks, as nccl-tests does) but for products and kSumInOrder:
//   copy:      integers in [-B, B] ([0, B] unsigned), B the type's exact-integer bound
//              (2^11 half, 2^8 bfloat16, 2^24 float, 2^52 double and 64-bit ints, the type's
//              maximum for 8/32-bit ints);
//   min, max:  one rank per element (chosen by the hash) holds the extreme m(i), drawn from
//              the lower (min) or upper (max) half of [-B, B]; the others hold values between
//              m(i) and the far end of the range;
//   sum, avg:  w(i) + e(r, i) - e(r-1, i), with e random in [0, R] for ranks 0..n-2 and
//              e(-1) = e(n-1) = 0: the offsets telescope, so the sum is exactly n * w(i) and
//              the average w(i). w in [-R, R] with R = B/2n (unsigned [R, 2R], R = B/3n),
//              so every partial sum of any subset of ranks stays within B (at n > B/2 all
//              values are w = 0: no 8-bit sums beyond 63 ranks);
//   prod:      +-1 outside a rotating per-element window of ranks; inside it +-2^e, e in
//              {-1, 0, 1}, on floats (a product of powers of two is exact while its exponent
//              stays in range: a window of 14 ranks for half) and +-1 or +-2 on integers (a
//              window of floor(log2(max)) - 1 ranks: 5 for int8); expected by a loop;
//   band, bor: bit patterns of the type's width w (8, 16, 32 bits; 53 bits sign-extended for
//              int64, 52 for uint64): a target t(i); two ranks per element (chosen by the
//              hash) hold t | c and t | ~c (band) or t & c and t & ~c (bor) for a random c,
//              the others t | random (band) or t & random (bor): the result is t, which no
//              rank holds and which is not the ranks' minimum or maximum in general;
//   bxor:      e(r, i) ^ e(r-1, i), e random for ranks 0..n-2, e(-1) = 0 and e(n-1) = w(i):
//              the chain telescopes to w(i). The bitwise kinds are for integer types (on a
//              floating type they give non-negative integers below 2^(digits-1)).
// Only avg on floating types is compared with a tolerance (two units in the last place),
// because a library may multiply by 1/n instead of dividing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti::verifiable {

// kSumInOrder: the deterministic mode's promise (TUTTI_DETERMINISTIC: every element reduced in
// rank order 0..n-1): values with the type's full precision and magnitudes 2^-10 .. 2^10, so
// that sums round and a different order gives different bits; the expected value rounds to
// the type after every addition, in rank order.
enum class Kind { kCopy, kSum, kProd, kMin, kMax, kAvg, kSumInOrder, kBand, kBor, kBxor };

// kCopy for collectives that move data only, else the kind of op.
Kind kindOf(bool reduces, tuttiRedOp_t op);

struct Spec {
  tuttiDataType_t dtype = tuttiFloat32;
  Kind kind = Kind::kCopy;
  int nranks = 1;
  uint64_t seed = 0;  // one per call: consecutive calls get different data
};

// A call seed from any number of integers (case index, repetition, ...).
uint64_t seedOf(std::initializer_list<uint64_t> parts);

// What rank `rank` contributes at element i (exactly representable in spec.dtype).
double value(const Spec& s, int rank, size_t i);
// The reduction over ranks 0..n-1 of value(s, r, i) (avg: the exact average), in closed form
// where the kind has one (verifiable_test checks it against loops in several orders).
// Copy kind: value(s, 0, i).
double reduced(const Spec& s, size_t i);

size_t elementSize(tuttiDataType_t t);
bool isFloat(tuttiDataType_t t);
const char* kindName(Kind k);
// Exact conversions (v must be representable in t, as every value above is).
void store(tuttiDataType_t t, void* base, size_t i, double v);
double load(tuttiDataType_t t, const void* base, size_t i);

// buf[k] = value(s, rank, offset + k), k < count.
void fill(const Spec& s, int rank, void* buf, size_t count, size_t offset = 0);
// buf[k] = reduced(s, offset + k), k < count.
void fillReduced(const Spec& s, void* buf, size_t count, size_t offset = 0);

// Whether got is the right value for want (exact; float avg within two ulps).
bool matches(const Spec& s, double got, double want);
// Number of elements of got (count elements of s.dtype) that do not match expected (same
// layout); *firstWrong (if given) is the first such index, or count.
size_t countWrong(const Spec& s, const void* got, const void* expected, size_t count,
                  size_t* firstWrong = nullptr);
// "" or "element I: got X, want Y" for the first wrong element.
std::string firstMismatch(const Spec& s, const void* got, const void* expected, size_t count);

// Bytes before and after a checked buffer, and the pattern they hold.
constexpr size_t kGuardBytes = 64;
constexpr std::byte kGuardByte{0xA7};

// One host allocation with kGuardBytes of kGuardByte before and after `bytes` usable bytes.
class GuardedBuffer {
 public:
  GuardedBuffer() = default;
  explicit GuardedBuffer(size_t bytes) { resize(bytes); }
  // Usable bytes (contents not kept); rewrites both guards.
  void resize(size_t bytes);
  std::byte* data() { return mem_.data() + kGuardBytes; }
  size_t size() const { return bytes_; }
  // "" or which guard was overwritten and where ("N bytes before the buffer", ...).
  std::string checkGuards() const;

 private:
  std::vector<std::byte> mem_;
  size_t bytes_ = 0;
};

}  // namespace tutti::verifiable
