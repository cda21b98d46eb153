#include "bootstrap/callback_store.h"

#include <algorithm>
#include <thread>

#include "bootstrap/store_util.h"
#include "common/error.h"

namespace tutti::bootstrap {

namespace {
[[noreturn]] void callbackFailed(const char* which, const std::string& key) {
  fail(tuttiRemoteError, "caller's store: ", which, "(\"", key, "\") failed");
}
}  // namespace

CallbackStore::CallbackStore(const tuttiStore_t& callbacks) : cb_(callbacks) {
  TUTTI_CHECK_ARG(
      cb_.set != nullptr && cb_.get != nullptr && cb_.check != nullptr && cb_.add != nullptr,
      "store: set, get, check and add callbacks are all required");
}

void CallbackStore::set(const std::string& key, std::span<const std::byte> value) {
  if (aborted_) throwAborted("caller's store", key);
  if (cb_.set(cb_.ctx, key.c_str(), value.data(), value.size()) != 0) callbackFailed("set", key);
}

bool CallbackStore::exists(const std::string& key) {
  int present = 0;
  if (cb_.check(cb_.ctx, key.c_str(), &present) != 0) callbackFailed("check", key);
  return present != 0;
}

std::vector<std::byte> CallbackStore::get(const std::string& key, const Deadline& deadline) {
  auto pause = std::chrono::microseconds(50);
  while (!exists(key)) {
    if (aborted_) throwAborted("caller's store", key);
    if (deadline.expired()) throwGetTimeout("caller's store", key, deadline.totalSeconds());
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
  std::vector<std::byte> out;
  auto sink = [](void* ctx, const void* value, size_t size) {
    auto* bytes = static_cast<const std::byte*>(value);
    static_cast<std::vector<std::byte>*>(ctx)->assign(bytes, bytes + size);
  };
  if (cb_.get(cb_.ctx, key.c_str(), sink, &out) != 0) callbackFailed("get", key);
  return out;
}

bool CallbackStore::check(const std::vector<std::string>& keys) {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return exists(k); });
}

int64_t CallbackStore::add(const std::string& key, int64_t delta) {
  if (aborted_) throwAborted("caller's store", key);
  int64_t result = 0;
  if (cb_.add(cb_.ctx, key.c_str(), delta, &result) != 0) callbackFailed("add", key);
  return result;
}

}  // namespace tutti::bootstrap
