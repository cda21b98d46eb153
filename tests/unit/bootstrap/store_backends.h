// Store backends for parameterised tests: each gives any number of clients of one store.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/store.h"

namespace tutti::bootstrap::testing {

class Backend {
 public:
  virtual ~Backend() = default;
  // A new client of the same store (for MemoryStore: the same object).
  virtual std::shared_ptr<Store> client() = 0;
};

// "memory", "file", "prefix", "tcp".
std::unique_ptr<Backend> makeBackend(const std::string& name);

}  // namespace tutti::bootstrap::testing
