// Little-endian bit streams: bit i of the stream is bit (i % 8) of byte i / 8. Fixed-width
// fields are written least significant bit first. Used by the QSGD wire format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tutti::compress {

class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}

  // Appends the low `bits` bits of v (bits <= 32).
  void put(uint32_t v, unsigned bits) {
    acc_ |= static_cast<uint64_t>(v) << fill_;
    fill_ += bits;
    if (fill_ >= 32) {
      const uint32_t word = static_cast<uint32_t>(acc_);
      std::memcpy(out_ + pos_, &word, 4);  // little-endian host (x86-64, aarch64)
      pos_ += 4;
      acc_ >>= 32;
      fill_ -= 32;
    }
  }

  // Flushes the partial bytes (zero padded); returns the total bytes written.
  size_t finish() {
    while (fill_ > 0) {
      out_[pos_++] = static_cast<uint8_t>(acc_);
      acc_ >>= 8;
      fill_ = fill_ > 8 ? fill_ - 8 : 0;
    }
    return pos_;
  }

 private:
  uint8_t* out_;
  size_t pos_ = 0;
  uint64_t acc_ = 0;
  unsigned fill_ = 0;
};

class BitReader {
 public:
  BitReader(const uint8_t* in, size_t bytes) : in_(in), bytes_(bytes) {}

  // Reads `bits` bits (bits <= 32); bits beyond the end read as zero.
  uint32_t get(unsigned bits) {
    if (fill_ < bits) refill();
    const uint32_t v = static_cast<uint32_t>(acc_ & ((uint64_t{1} << bits) - 1));
    acc_ >>= bits;
    fill_ -= bits;
    return v;
  }

  // Reads one bit.
  uint32_t bit() { return get(1); }

  // Bits consumed so far.
  size_t consumed() const { return pos_ * 8 - fill_; }

 private:
  void refill() {
    while (fill_ <= 56) {
      const uint64_t byte = pos_ < bytes_ ? in_[pos_] : 0;
      acc_ |= byte << fill_;
      ++pos_;
      fill_ += 8;
    }
  }

  const uint8_t* in_;
  size_t bytes_;
  size_t pos_ = 0;
  uint64_t acc_ = 0;
  unsigned fill_ = 0;
};

}  // namespace tutti::compress
