// A tiny JSON reader for the topology tests (ground_truth.json and tutti-topo --json).
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace minijson {

struct Value {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Value> arr;
  std::vector<std::pair<std::string, Value>> obj;  // keeps file order

  bool isNull() const { return type == kNull; }
  const Value& operator[](std::string_view key) const {
    for (const auto& [k, v] : obj) {
      if (k == key) return v;
    }
    static const Value null;
    return null;
  }
  bool has(std::string_view key) const {
    for (const auto& [k, v] : obj) {
      if (k == key) return true;
    }
    return false;
  }
  // Numbers and numeric strings ("0") as int.
  long long asInt() const {
    if (type == kNumber) return static_cast<long long>(num);
    if (type == kString) return std::stoll(str);
    throw std::runtime_error("minijson: not a number");
  }
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}
  Value parse() {
    Value v = value();
    ws();
    if (p_ != s_.size()) throw std::runtime_error("minijson: trailing data");
    return v;
  }

 private:
  void ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\t' || s_[p_] == '\r'))
      ++p_;
  }
  char next() {
    if (p_ >= s_.size()) throw std::runtime_error("minijson: unexpected end");
    return s_[p_++];
  }
  void expect(std::string_view w) {
    if (s_.substr(p_, w.size()) != w) throw std::runtime_error("minijson: bad literal");
    p_ += w.size();
  }
  std::string string() {
    std::string r;
    if (next() != '"') throw std::runtime_error("minijson: expected string");
    for (;;) {
      char c = next();
      if (c == '"') return r;
      if (c != '\\') {
        r += c;
        continue;
      }
      char e = next();
      switch (e) {
        case 'n':
          r += '\n';
          break;
        case 't':
          r += '\t';
          break;
        case 'r':
          r += '\r';
          break;
        case 'b':
          r += '\b';
          break;
        case 'f':
          r += '\f';
          break;
        case 'u': {
          unsigned v = std::stoul(std::string(s_.substr(p_, 4)), nullptr, 16);
          p_ += 4;
          if (v < 0x80) {
            r += static_cast<char>(v);
          } else if (v < 0x800) {
            r += static_cast<char>(0xc0 | (v >> 6));
            r += static_cast<char>(0x80 | (v & 0x3f));
          } else {
            r += static_cast<char>(0xe0 | (v >> 12));
            r += static_cast<char>(0x80 | ((v >> 6) & 0x3f));
            r += static_cast<char>(0x80 | (v & 0x3f));
          }
          break;
        }
        default:
          r += e;
      }
    }
  }
  Value value() {
    ws();
    Value v;
    if (p_ >= s_.size()) throw std::runtime_error("minijson: unexpected end");
    char c = s_[p_];
    if (c == '{') {
      ++p_;
      v.type = Value::kObject;
      ws();
      if (s_[p_] == '}') {
        ++p_;
        return v;
      }
      for (;;) {
        ws();
        std::string k = string();
        ws();
        if (next() != ':') throw std::runtime_error("minijson: expected ':'");
        v.obj.emplace_back(std::move(k), value());
        ws();
        char d = next();
        if (d == '}') return v;
        if (d != ',') throw std::runtime_error("minijson: expected ',' in object");
      }
    }
    if (c == '[') {
      ++p_;
      v.type = Value::kArray;
      ws();
      if (s_[p_] == ']') {
        ++p_;
        return v;
      }
      for (;;) {
        v.arr.push_back(value());
        ws();
        char d = next();
        if (d == ']') return v;
        if (d != ',') throw std::runtime_error("minijson: expected ',' in array");
      }
    }
    if (c == '"') {
      v.type = Value::kString;
      v.str = string();
      return v;
    }
    if (c == 't') {
      expect("true");
      v.type = Value::kBool;
      v.b = true;
      return v;
    }
    if (c == 'f') {
      expect("false");
      v.type = Value::kBool;
      return v;
    }
    if (c == 'n') {
      expect("null");
      return v;
    }
    const char* start = s_.data() + p_;
    char* end = nullptr;
    v.num = std::strtod(start, &end);
    if (end == start) throw std::runtime_error("minijson: bad value");
    v.type = Value::kNumber;
    p_ += static_cast<size_t>(end - start);
    return v;
  }

  std::string_view s_;
  size_t p_ = 0;
};

inline Value parse(std::string_view s) { return Parser(s).parse(); }

}  // namespace minijson
