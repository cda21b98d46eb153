// copyBytes: memcpy for the data path (schedules' copies, the shm FIFOs and verbs slots, self
// sends) that keeps its speed whatever the buffers' relative alignment. glibc 2.36 (Debian 12)
// copies 2 KiB - ~512 KiB with `rep movsb`, which AMD Zen cores run over 15x slower when the
// destination lies a few bytes past the source modulo 4 KiB (glibc bug 30994): a malloc'd user
// buffer (page + 16) receiving from a page-aligned shared window or FIFO slot hits it on every
// call. Those copies go through a vector loop here; every other copy is memcpy.
// docs/perf/memcpy-offsets-2026-12-01.md.
#pragma once

#include <cstddef>

namespace tutti {

// Copies n bytes from src to dst, which are identical (nothing to do) or do not overlap
// (memmove's result when they do, at memmove's speed).
void copyBytes(void* dst, const void* src, size_t n);

// True when copyBytes takes its vector loop for these addresses and size (for tests).
bool copyBytesAvoidsMemcpy(const void* dst, const void* src, size_t n);

}  // namespace tutti
