#include "store_bridge.h"

#include <cstring>
#include <exception>

#include "tutti/tutti.h"

namespace tutti::torch_backend {

namespace {

c10d::Store& of(void* ctx) { return *static_cast<c10d::Store*>(ctx); }

// A c10d::Store throws on failure; the C callbacks answer non-zero instead.
template <typename F>
int guard(F&& f) noexcept {
  try {
    f();
    return 0;
  } catch (const std::exception&) {
    return 1;
  }
}

int set(void* ctx, const char* key, const void* value, size_t size) {
  return guard([&] {
    auto* bytes = static_cast<const uint8_t*>(value);
    of(ctx).set(key, std::vector<uint8_t>(bytes, bytes + size));
  });
}

int get(void* ctx, const char* key, void (*sink)(void*, const void*, size_t), void* sinkCtx) {
  return guard([&] {
    std::vector<uint8_t> v = of(ctx).get(key);
    sink(sinkCtx, v.data(), v.size());
  });
}

int check(void* ctx, const char* key, int* exists) {
  return guard([&] { *exists = of(ctx).check({key}) ? 1 : 0; });
}

int add(void* ctx, const char* key, int64_t delta, int64_t* result) {
  return guard([&] { *result = of(ctx).add(key, delta); });
}

}  // namespace

tuttiStore_t storeBridge(c10d::Store* store) { return tuttiStore_t{store, set, get, check, add}; }

}  // namespace tutti::torch_backend
