// Lazy CUDA run-time probe: loads the CUDA driver (libcuda.so.1) and runtime (libcudart) with
// dlopen on first use, so one binary runs on machines without a GPU or driver. Plain C++.
#pragma once

#include <string>

namespace tutti {

// True when a CUDA driver is loadable, initialises, and sees at least one device. Otherwise
// false and, when why != nullptr, *why says which: "no CUDA driver: ...", "CUDA driver
// unusable: ..." or "no device visible: ...". Probed once per process; thread-safe.
bool cudaAvailable(std::string* why = nullptr);

// True when p is device or managed memory (cudaPointerGetAttributes through the dlopen'd
// runtime; cuPointerGetAttribute from the driver when libcudart is not loadable). False for
// host memory, nullptr, or when CUDA is not available.
bool isDevicePointer(const void* p);

}  // namespace tutti
