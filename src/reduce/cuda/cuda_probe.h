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

// The PCI bus id ("0000:07:00.0") of the GPU this process drives: the device of the calling
// thread's current CUDA context, else the single device whose primary context is active.
// "" when the process has not loaded the CUDA driver (it drives no GPU: nothing is loaded or
// initialised here), has no active context, or has several and no current one; *why then
// says which. Thread-safe.
std::string drivenGpuBusId(std::string* why = nullptr);

}  // namespace tutti
