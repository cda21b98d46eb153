#include "common/env.h"

#include <strings.h>

#include <cstdlib>

#include "common/error.h"

namespace tutti::env {

namespace {
std::string defaultOf(const Var& v) { return v.defaultValue ? v.defaultValue : ""; }
}  // namespace

const Var& lookup(std::string_view name) {
  for (const Var& v : all()) {
    if (name == v.name) return v;
  }
  fail(tuttiInternalError, "environment variable ", std::string(name), " is not registered");
}

std::optional<std::string> raw(std::string_view name) {
  lookup(name);
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool isSet(std::string_view name) { return raw(name).has_value(); }

int64_t getInt(std::string_view name) {
  const Var& v = lookup(name);
  std::string text = raw(name).value_or(defaultOf(v));
  if (text.empty()) return 0;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 0);
  if (errno != 0 || end == text.c_str() || *end != '\0')
    fail(tuttiInvalidArgument, v.name, "='", text, "' is not an integer");
  return value;
}

bool getBool(std::string_view name) {
  const Var& v = lookup(name);
  std::string text = raw(name).value_or(defaultOf(v));
  if (text.empty() || text == "0" || strcasecmp(text.c_str(), "false") == 0 ||
      strcasecmp(text.c_str(), "no") == 0 || strcasecmp(text.c_str(), "off") == 0)
    return false;
  if (text == "1" || strcasecmp(text.c_str(), "true") == 0 ||
      strcasecmp(text.c_str(), "yes") == 0 || strcasecmp(text.c_str(), "on") == 0)
    return true;
  fail(tuttiInvalidArgument, v.name, "='", text, "' is not a boolean (use 0/1)");
}

double getDouble(std::string_view name) {
  const Var& v = lookup(name);
  std::string text = raw(name).value_or(defaultOf(v));
  if (text.empty()) return 0.0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0')
    fail(tuttiInvalidArgument, v.name, "='", text, "' is not a number");
  return value;
}

std::string getString(std::string_view name) {
  const Var& v = lookup(name);
  return raw(name).value_or(defaultOf(v));
}

const char* typeName(Type t) {
  switch (t) {
    case Type::kInt:
      return "int";
    case Type::kBool:
      return "bool";
    case Type::kDouble:
      return "double";
    case Type::kString:
      return "string";
  }
  return "?";
}

}  // namespace tutti::env
