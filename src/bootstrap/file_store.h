// Store over a directory shared by the processes of one host (or a shared filesystem).
// Each key is one file, written atomically (temporary file + rename(2)); file names are
// the key with unsafe characters %-escaped (long keys: a prefix + 64-bit hash). add() holds
// an flock(2) on "<dir>/.lock" around its read-modify-write. Waits poll with short sleeps
// (1 ms growing to 20 ms) and honour the deadline and abort().
#pragma once

#include <atomic>

#include "bootstrap/store.h"

namespace tutti::bootstrap {

class FileStore : public Store {
 public:
  // Creates dir (and its parents) if missing.
  explicit FileStore(std::string dir);
  void set(const std::string& key, std::span<const std::byte> value) override;
  using Store::get;  // the variant ended by a communicator's abort signal
  std::vector<std::byte> get(const std::string& key, const Deadline& deadline) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void abort() override;
  size_t erasePrefix(const std::string& prefix) override;

  const std::string& dir() const { return dir_; }
  // The file that holds key (exposed for tests).
  std::string pathOf(const std::string& key) const;

 private:
  bool tryRead(const std::string& path, std::vector<std::byte>& out) const;
  void writeAtomically(const std::string& path, std::span<const std::byte> value);

  std::string dir_;
  std::atomic<bool> aborted_{false};
  std::atomic<uint64_t> tmpCounter_{0};
};

}  // namespace tutti::bootstrap
