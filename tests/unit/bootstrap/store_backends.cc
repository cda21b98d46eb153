#include "store_backends.h"

#include <stdexcept>

#include "bootstrap/file_store.h"
#include "bootstrap/memory_store.h"
#include "bootstrap/prefix_store.h"
#include "bootstrap/tcp_store.h"
#include "harness/temp_dir.h"

namespace tutti::bootstrap::testing {

namespace {

class MemoryBackend : public Backend {
 public:
  std::shared_ptr<Store> client() override { return store_; }

 private:
  std::shared_ptr<Store> store_ = std::make_shared<MemoryStore>();
};

class FileBackend : public Backend {
 public:
  std::shared_ptr<Store> client() override { return std::make_shared<FileStore>(dir_.path()); }

 private:
  tutti::test::TempDir dir_{"tutti-filestore"};
};

class PrefixBackend : public Backend {
 public:
  std::shared_ptr<Store> client() override {
    return std::make_shared<PrefixStore>(std::make_shared<FileStore>(dir_.path()), "comm7");
  }

 private:
  tutti::test::TempDir dir_{"tutti-prefixstore"};
};

class TcpBackend : public Backend {
 public:
  std::shared_ptr<Store> client() override {
    return std::make_shared<TcpStore>(server_.sockAddr(), server_.secret(), Deadline(5));
  }

 private:
  TcpStoreServer server_{"127.0.0.1:0", randomSecret()};
};

}  // namespace

std::unique_ptr<Backend> makeBackend(const std::string& name) {
  if (name == "memory") return std::make_unique<MemoryBackend>();
  if (name == "file") return std::make_unique<FileBackend>();
  if (name == "prefix") return std::make_unique<PrefixBackend>();
  if (name == "tcp") return std::make_unique<TcpBackend>();
  throw std::invalid_argument("unknown backend " + name);
}

}  // namespace tutti::bootstrap::testing
