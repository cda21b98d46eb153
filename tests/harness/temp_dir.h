// A fresh directory (mkdtemp under $TMPDIR or /tmp), removed recursively on destruction.
#pragma once

#include <string>

namespace tutti::test {

class TempDir {
 public:
  explicit TempDir(const std::string& stem = "tutti-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace tutti::test
