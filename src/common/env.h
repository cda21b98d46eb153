// The one typed registry of environment variables. Every TUTTI_* variable is declared once
// in env_table.cc (name, type, default, subsystem, description); code reads variables only
// through these accessors, and tutti-info / docs/env.md print the same table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tutti::env {

enum class Type { kInt, kBool, kDouble, kString };

struct Var {
  const char* name;
  Type type;
  const char* defaultValue;  // as text; "" means unset
  const char* subsystem;     // INIT, BOOTSTRAP, TRANSPORT, ...
  const char* description;
};

std::span<const Var> all();
const Var& lookup(std::string_view name);  // throws tuttiInternalError if not registered

// The raw value, or nullopt when unset or empty.
std::optional<std::string> raw(std::string_view name);
bool isSet(std::string_view name);

// Typed accessors: the variable's value, else its default. A malformed value throws
// tuttiInvalidArgument naming the variable and the value.
int64_t getInt(std::string_view name);
bool getBool(std::string_view name);
double getDouble(std::string_view name);
std::string getString(std::string_view name);

const char* typeName(Type t);

}  // namespace tutti::env
