// Data types and reduction operators of the perf tests: names (as nccl-tests spells them),
// sizes, and exact conversion between small integers and every element type.
// Uses only the public API (tutti/tutti.h): no internal tutti header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tutti/tutti.h"

namespace tutti_perf {

// The types and ops in the order nccl-tests runs them with `-d all` / `-o all`, with int16 and
// uint16 after uint8 and the bitwise ops band, bor, bxor after avg (tutti additions, as Gloo's).
const std::vector<tuttiDataType_t>& allTypes();
const std::vector<tuttiRedOp_t>& allOps();

const char* opName(tuttiRedOp_t op);  // "sum", "prod", "max", "min", "avg", "band", "bor", "bxor"
// Whether op is defined on t (the bitwise ops on integer types only).
bool opApplies(tuttiDataType_t t, tuttiRedOp_t op);
size_t typeSize(tuttiDataType_t t);
bool isFloat(tuttiDataType_t t);
bool isSigned(tuttiDataType_t t);  // signed integer or floating point

// Parses a name as nccl-tests does (also accepts "char", "int", "float16", "float32",
// "float64", "bf16", "fp16"..., and "int16", "uint16"). Returns false when unknown.
bool parseType(const std::string& s, tuttiDataType_t* out);
bool parseOp(const std::string& s, tuttiRedOp_t* out);

// Element i of base (of type t) as a double (floats) or an exact integer (ints).
double loadFloat(tuttiDataType_t t, const void* base, size_t i);
int64_t loadInt(tuttiDataType_t t, const void* base, size_t i);
// Stores v; integers wrap modulo 2^bits, floats convert (exact for the small integers used).
void storeValue(tuttiDataType_t t, void* base, size_t i, int64_t v);
// Stores a double (only for floating types; integers take the truncated value).
void storeDouble(tuttiDataType_t t, void* base, size_t i, double v);

uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);

}  // namespace tutti_perf
