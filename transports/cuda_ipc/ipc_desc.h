// What a receiving rank publishes (through the bootstrap store) for each peer that sends to
// it over cuda_ipc: its FIFO geometry, the control segment the sender maps (memfd, opened
// through /proc/<pid>/fd/<n>), and the CUDA IPC memory handle of its device slots.
// Plain C++ (no CUDA); (de)serialisation is a pure function of the bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tutti::transport::cudaipc {

constexpr uint32_t kDescMagic = 0x50494354;  // "TCIP"
constexpr uint32_t kDescVersion = 1;
constexpr uint32_t kMaxSlots = 64;
constexpr size_t kIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)

struct RxDesc {
  int32_t rank = -1;          // the receiver
  int32_t pid = 0;            // its process id (for /proc/<pid>/fd/<ctlFd> and the death watch)
  int32_t device = -1;        // CUDA device ordinal, -1 when it has none
  std::string busId;          // PCI bus id of that device ("0000:3b:00.0"), at most 31 chars
  uint32_t slots = 0;         // FIFO depth, 1..kMaxSlots
  uint64_t slotBytes = 0;     // bytes per slot, > 0
  int32_t ctlFd = -1;         // the memfd of the control segment in the receiver process
  uint64_t ctlBytes = 0;      // its size (control block + host slots)
  bool hasIpcHandle = false;  // device slots exported with cudaIpcGetMemHandle
  std::array<uint8_t, kIpcHandleBytes> ipcHandle{};

  bool operator==(const RxDesc&) const = default;
};

std::vector<std::byte> serialize(const RxDesc& d);
// Throws tuttiInternalError "cuda_ipc: malformed descriptor from rank <from>: <reason>" for a
// wrong magic, version, length or out-of-range field.
RxDesc deserialize(std::span<const std::byte> bytes, int from);

// Store keys (the store is namespaced per communicator).
std::string rxKey(int receiver, int sender);    // RxDesc of receiver for sender
std::string modeKey(int sender, int receiver);  // "device" or "host: <why>" chosen by sender

}  // namespace tutti::transport::cudaipc
