#include "driver/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

namespace tutti_perf {

std::string formatFloat(double value, int width) {
  int power = 0;
  for (uint64_t v = 1; value >= static_cast<double>(v) && power < 20; v *= 10) power++;
  char buf[64];
  if (power < width - 2) {
    snprintf(buf, sizeof(buf), "%*.2f", width, value);
  } else if (power < width - 1) {
    snprintf(buf, sizeof(buf), "%*.1f", width, value);
  } else if (power < width + 1) {
    snprintf(buf, sizeof(buf), "%*.0f", width, value);
  } else {
    snprintf(buf, sizeof(buf), "%*.1e", width, value);
  }
  return buf;
}

bool JsonWriter::open(const std::string& path) {
  std::string tryPath = path;
  for (int n = 0; n < 1000; ++n) {
    const int fd = ::open(tryPath.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      f_ = fdopen(fd, "w");
      path_ = tryPath;
      return f_ != nullptr;
    }
    if (errno != EEXIST) return false;
    tryPath = path + "." + std::to_string(n);
  }
  return false;
}

void JsonWriter::value() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (!stack_.empty()) {
    if (!first_.back()) fputc(',', f_);
    first_.back() = false;
  }
}

void JsonWriter::key(const char* k) {
  if (!f_) return;
  if (!first_.back()) fputc(',', f_);
  first_.back() = false;
  str(k);
  fputc(':', f_);
  afterKey_ = true;
}

void JsonWriter::beginObject() {
  if (!f_) return;
  value();
  fputc('{', f_);
  stack_.push_back('o');
  first_.push_back(true);
}

void JsonWriter::endObject() {
  if (!f_) return;
  fputc('}', f_);
  stack_.pop_back();
  first_.pop_back();
}

void JsonWriter::beginList() {
  if (!f_) return;
  value();
  fputc('[', f_);
  stack_.push_back('l');
  first_.push_back(true);
}

void JsonWriter::endList() {
  if (!f_) return;
  fputc(']', f_);
  stack_.pop_back();
  first_.pop_back();
}

void JsonWriter::str(const std::string& s) {
  if (!f_) return;
  const bool isKey = afterKey_ == false && !stack_.empty() && stack_.back() == 'o';
  if (!isKey) value();
  fputc('"', f_);
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        fputs("\\\"", f_);
        break;
      case '\\':
        fputs("\\\\", f_);
        break;
      case '\n':
        fputs("\\n", f_);
        break;
      case '\t':
        fputs("\\t", f_);
        break;
      default:
        if (c < 0x20) {
          fprintf(f_, "\\u%04x", c);
        } else {
          fputc(c, f_);
        }
    }
  }
  fputc('"', f_);
}

void JsonWriter::num(double v) {
  if (!f_) return;
  value();
  if (std::isfinite(v)) {
    fprintf(f_, "%.6f", v);
  } else {
    fputs("\"nan\"", f_);
  }
}

void JsonWriter::integer(int64_t v) {
  if (!f_) return;
  value();
  fprintf(f_, "%lld", static_cast<long long>(v));
}

void JsonWriter::boolean(bool b) {
  if (!f_) return;
  value();
  fputs(b ? "true" : "false", f_);
}

void JsonWriter::null() {
  if (!f_) return;
  value();
  fputs("null", f_);
}

void JsonWriter::close() {
  if (!f_) return;
  if (afterKey_) null();
  while (!stack_.empty()) {
    fputc(stack_.back() == 'o' ? '}' : ']', f_);
    stack_.pop_back();
    first_.pop_back();
  }
  fputc('\n', f_);
  fclose(f_);
  f_ = nullptr;
}

std::string csvEscape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace tutti_perf
