// Wire format of the TCP store (internal to tcp_store.cc, kept apart for reading).
//
// Handshake, client -> server: "TUTTISTR" (8 bytes) | version u32 | secret (16 bytes).
// The server answers one byte 'K' when the secret matches; otherwise it logs a WARN and
// closes the connection without answering.
// Request: op u8, then
//   SET   key, value           -> status
//   GET   key                  -> status, value       (answered once key exists)
//   CHECK nkeys u32, keys...   -> status, present u8  (never waits)
//   EACH  nkeys u32, keys...   -> status, present u8 per key, in order (never waits)
//   ADD   key, delta i64       -> status, new i64
//   WAIT  nkeys u32, keys...   -> status              (answered once all keys exist)
//   ERASE prefix (as a key)    -> status, erased u64  (every key starting with prefix)
// key = len u32 | bytes; value = len u64 | bytes. Integers are little-endian.
// status u8: 0 ok; 1 error followed by a message (len u32 | bytes).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tutti::bootstrap::proto {

constexpr char kMagic[8] = {'T', 'U', 'T', 'T', 'I', 'S', 'T', 'R'};
constexpr uint32_t kVersion = 2;  // 2: EACH
constexpr size_t kHelloBytes = 8 + 4 + 16;
constexpr uint8_t kHelloOk = 'K';
// The server's answer to a hello it refuses (bad magic, version or secret), before it closes
// the connection; a connection closed without it was shed (the client may retry).
constexpr uint8_t kHelloRefused = 'R';

enum Op : uint8_t { kSet = 1, kGet = 2, kCheck = 3, kAdd = 4, kWait = 5, kErase = 6, kCheckEach = 7 };
enum Status : uint8_t { kOk = 0, kError = 1 };

constexpr uint32_t kMaxKeyBytes = 64 * 1024;
constexpr uint64_t kMaxValueBytes = 1ull << 30;
constexpr uint32_t kMaxKeys = 1u << 16;

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void bytes(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void key(const std::string& k) {
    u32(static_cast<uint32_t>(k.size()));
    bytes(k.data(), k.size());
  }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>& out_;
};

// Reads from a buffer that may hold only part of a message: every getter returns false
// when the bytes are not there yet; bad() is set when a length exceeds the limits.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool u8(uint8_t& v) {
    if (n_ - pos_ < 1) return false;
    v = p_[pos_++];
    return true;
  }
  bool u32(uint32_t& v) {
    uint64_t w;
    if (!le(w, 4)) return false;
    v = static_cast<uint32_t>(w);
    return true;
  }
  bool u64(uint64_t& v) { return le(v, 8); }
  bool key(std::string& k) {
    uint32_t len;
    if (!u32(len)) return false;
    if (len > kMaxKeyBytes) return fail();
    return str(k, len);
  }
  bool value(std::vector<uint8_t>& v) {
    uint64_t len;
    if (!u64(len)) return false;
    if (len > kMaxValueBytes) return fail();
    if (n_ - pos_ < len) return false;
    v.assign(p_ + pos_, p_ + pos_ + len);
    pos_ += len;
    return true;
  }
  bool str(std::string& s, size_t len) {
    if (n_ - pos_ < len) return false;
    s.assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return true;
  }
  bool count(uint32_t& n) {
    if (!u32(n)) return false;
    if (n > kMaxKeys) return fail();
    return true;
  }
  size_t pos() const { return pos_; }
  bool bad() const { return bad_; }

 private:
  bool le(uint64_t& v, int n) {
    if (n_ - pos_ < static_cast<size_t>(n)) return false;
    v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p_[pos_ + i]) << (8 * i);
    pos_ += n;
    return true;
  }
  bool fail() {
    bad_ = true;
    return false;
  }
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool bad_ = false;
};

}  // namespace tutti::bootstrap::proto
