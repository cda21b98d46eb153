// Test-only hooks of the reduction kernels: force one instruction-set variant so that every
// code path can be checked against the scalar reference on a CPU that supports it.
#pragma once

namespace tutti::reduce::detail {

// True when this CPU (and OS) can run the variant: "scalar", "avx2" or "avx512".
bool isaSupported(const char* isa);

// Forces the variant used by reduce()/isaName() from now on; "auto" restores the run-time
// choice. Throws tuttiInvalidArgument for an unknown name or one this CPU cannot run.
// Not thread-safe with concurrent reduce() calls in flight (tests only).
void setIsaForTesting(const char* isa);

}  // namespace tutti::reduce::detail
