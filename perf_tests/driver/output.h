// Output of the perf tests: nccl-tests' number formatting, a small JSON writer (the layout of
// nccl-tests' -J file) and CSV rows.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tutti_perf {

// nccl-tests' getFloatStr: `value` right-aligned in `width` columns with 2, 1 or 0 decimals
// (or an exponent) so that it fits.
std::string formatFloat(double value, int width);

// Minimal streaming JSON writer: keys and values are written in order; commas are automatic.
class JsonWriter {
 public:
  bool open(const std::string& path);  // nccl-tests: never overwrites; tries path.0, path.1...
  bool active() const { return f_ != nullptr; }
  const std::string& path() const { return path_; }
  void key(const char* k);
  void beginObject();
  void endObject();
  void beginList();
  void endList();
  void str(const std::string& s);
  void num(double v);
  void integer(int64_t v);
  void boolean(bool b);
  void null();
  void close();  // closes every open object/list
  ~JsonWriter() { close(); }

 private:
  void value();
  FILE* f_ = nullptr;
  std::string path_;
  std::vector<char> stack_;  // 'o' object, 'l' list; with first-item flags
  std::vector<bool> first_;
  bool afterKey_ = false;
};

std::string csvEscape(const std::string& s);

}  // namespace tutti_perf
