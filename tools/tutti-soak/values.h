// tutti-soak's input values and their exact expected results, computed here from the values'
// definition (not by tutti's reduction code). Every value depends on the call, the rank and
// the element, and is a small integer (or, for avg, an integer plus a multiple of one half):
// sums, products, maxima and averages of them are exact in every datatype, float16 and
// bfloat16 included, so results are compared bit for bit. The bitwise ops (integer types only)
// get 4-bit values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tutti/tutti.h"

namespace tutti::soak {

inline uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t hash3(uint64_t call, int64_t rank, uint64_t elem) {
  return mix(mix(call * 0x100000001B3ull + static_cast<uint64_t>(rank)) ^ elem);
}

size_t dtypeBytes(tuttiDataType_t t);
bool isFloat(tuttiDataType_t t);
bool isUnsigned(tuttiDataType_t t);
const char* dtypeText(tuttiDataType_t t);
const char* opText(tuttiRedOp_t op);

// Element i of a buffer of dtype t, as a double (exact for the values used here).
double load(tuttiDataType_t t, const std::byte* p, size_t i);
void store(tuttiDataType_t t, std::byte* p, size_t i, double v);

// What rank `rank` of n contributes at element `elem` of call `call`, for reduction op `op`
// (plain data calls pass tuttiSum).
double inputValue(tuttiDataType_t t, tuttiRedOp_t op, uint64_t call, int rank, int n,
                  uint64_t elem);
// The reduction of every rank's inputValue at (call, elem).
double reducedValue(tuttiDataType_t t, tuttiRedOp_t op, uint64_t call, int n, uint64_t elem);

}  // namespace tutti::soak
