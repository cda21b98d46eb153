#include "transports/cuda_ipc/ipc_desc.h"

#include <cstring>

#include "common/error.h"

namespace tutti::transport::cudaipc {
namespace {

class Writer {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_integral_v<T>);
    for (size_t i = 0; i < sizeof(T); ++i)
      out_.push_back(static_cast<std::byte>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
  }
  void bytes(const void* p, size_t n) {
    auto b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

class Reader {
 public:
  Reader(std::span<const std::byte> in, int from) : in_(in), from_(from) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += sizeof(T);
    return static_cast<T>(v);
  }
  void bytes(void* p, size_t n) {
    need(n);
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
  }
  [[noreturn]] void bad(const std::string& why) const {
    fail(tuttiInternalError, "cuda_ipc: malformed descriptor from rank ", from_, ": ", why);
  }
  void need(size_t n) const {
    if (pos_ + n > in_.size())
      bad("truncated at byte " + std::to_string(pos_) + " of " + std::to_string(in_.size()));
  }
  bool atEnd() const { return pos_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  size_t pos_ = 0;
  int from_;
};

constexpr size_t kBusIdMax = 31;

}  // namespace

std::vector<std::byte> serialize(const RxDesc& d) {
  TUTTI_CHECK_ARG(d.busId.size() <= kBusIdMax, "cuda_ipc: bus id too long: ", d.busId);
  Writer w;
  w.put<uint32_t>(kDescMagic);
  w.put<uint32_t>(kDescVersion);
  w.put<int32_t>(d.rank);
  w.put<int32_t>(d.pid);
  w.put<int32_t>(d.device);
  w.put<uint8_t>(static_cast<uint8_t>(d.busId.size()));
  w.bytes(d.busId.data(), d.busId.size());
  w.put<uint32_t>(d.slots);
  w.put<uint64_t>(d.slotBytes);
  w.put<int32_t>(d.ctlFd);
  w.put<uint64_t>(d.ctlBytes);
  w.put<uint8_t>(d.hasIpcHandle ? 1 : 0);
  w.bytes(d.ipcHandle.data(), d.ipcHandle.size());
  return w.take();
}

RxDesc deserialize(std::span<const std::byte> bytes, int from) {
  Reader r(bytes, from);
  RxDesc d;
  if (uint32_t m = r.get<uint32_t>(); m != kDescMagic) r.bad("bad magic " + std::to_string(m));
  if (uint32_t v = r.get<uint32_t>(); v != kDescVersion)
    r.bad("version " + std::to_string(v) + ", this build speaks " + std::to_string(kDescVersion));
  d.rank = r.get<int32_t>();
  d.pid = r.get<int32_t>();
  d.device = r.get<int32_t>();
  size_t busLen = r.get<uint8_t>();
  if (busLen > kBusIdMax) r.bad("bus id of " + std::to_string(busLen) + " chars");
  d.busId.resize(busLen);
  r.bytes(d.busId.data(), busLen);
  d.slots = r.get<uint32_t>();
  d.slotBytes = r.get<uint64_t>();
  d.ctlFd = r.get<int32_t>();
  d.ctlBytes = r.get<uint64_t>();
  uint8_t has = r.get<uint8_t>();
  r.bytes(d.ipcHandle.data(), d.ipcHandle.size());
  if (!r.atEnd()) r.bad("trailing bytes");
  if (has > 1) r.bad("bad IPC-handle flag " + std::to_string(has));
  d.hasIpcHandle = has == 1;
  if (d.rank != from) r.bad("it names rank " + std::to_string(d.rank));
  if (d.pid <= 0) r.bad("pid " + std::to_string(d.pid));
  if (d.slots < 1 || d.slots > kMaxSlots) r.bad("slots " + std::to_string(d.slots));
  if (d.slotBytes == 0 || d.slotBytes > (uint64_t{1} << 32))
    r.bad("slot bytes " + std::to_string(d.slotBytes));
  if (d.ctlFd < 0) r.bad("control fd " + std::to_string(d.ctlFd));
  if (d.hasIpcHandle && d.device < 0) r.bad("an IPC handle without a device");
  return d;
}

std::string rxKey(int receiver, int sender) {
  return "cuda_ipc/rx/" + std::to_string(receiver) + "/" + std::to_string(sender);
}
std::string modeKey(int sender, int receiver) {
  return "cuda_ipc/mode/" + std::to_string(sender) + "/" + std::to_string(receiver);
}

}  // namespace tutti::transport::cudaipc
