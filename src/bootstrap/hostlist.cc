#include "bootstrap/hostlist.h"

#include <cctype>

#include "common/error.h"

namespace tutti::bootstrap {

namespace {

struct Range {
  unsigned long long lo, hi;
  size_t width;  // pad to this many digits (0: no padding)
};

// One name of the list: literal pieces between bracket groups.
struct Pattern {
  std::vector<std::string> literals;  // literals.size() == groups.size() + 1
  std::vector<std::vector<Range>> groups;
};

[[noreturn]] void bad(const std::string& what, std::string_view list, const std::string& why) {
  fail(tuttiInvalidArgument, what, "='", std::string(list), "' is not a host list: ", why);
}

[[noreturn]] void tooMany(const std::string& what, std::string_view list, size_t maxHosts) {
  bad(what, list, "it names more than " + std::to_string(maxHosts) + " hosts");
}

unsigned long long number(std::string_view digits, const std::string& what, std::string_view list) {
  if (digits.empty() || digits.size() > 18)
    bad(what, list, "'" + std::string(digits) + "' in brackets is not a number");
  unsigned long long v = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      bad(what, list, "'" + std::string(digits) + "' in brackets is not a number");
    v = v * 10 + static_cast<unsigned long long>(c - '0');
  }
  return v;
}

std::vector<Range> parseGroup(std::string_view body, const std::string& what,
                              std::string_view list) {
  std::vector<Range> out;
  size_t start = 0;
  while (true) {
    size_t comma = body.find(',', start);
    std::string_view item =
        body.substr(start, comma == std::string_view::npos ? body.npos : comma - start);
    if (item.empty()) bad(what, list, "an empty range in brackets");
    size_t dash = item.find('-');
    std::string_view loText = item.substr(0, dash);
    std::string_view hiText = dash == item.npos ? loText : item.substr(dash + 1);
    Range r{number(loText, what, list), number(hiText, what, list), 0};
    if (r.lo > r.hi) bad(what, list, "range " + std::string(item) + " runs backwards");
    if (loText.size() > 1 && loText[0] == '0') r.width = loText.size();
    out.push_back(r);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// Splits the list at the commas outside brackets and parses each name.
std::vector<Pattern> parse(std::string_view list, const std::string& what) {
  if (list.empty()) bad(what, list, "it is empty");
  std::vector<Pattern> out;
  Pattern cur;
  cur.literals.emplace_back();
  size_t i = 0;
  auto finish = [&] {
    if (cur.groups.empty() && cur.literals.back().empty()) bad(what, list, "an empty host name");
    out.push_back(std::move(cur));
    cur = Pattern{};
    cur.literals.emplace_back();
  };
  while (i < list.size()) {
    char c = list[i];
    if (c == ',') {
      finish();
      ++i;
    } else if (c == '[') {
      size_t close = list.find(']', i + 1);
      if (close == list.npos) bad(what, list, "'[' without ']'");
      std::string_view body = list.substr(i + 1, close - i - 1);
      if (body.find('[') != body.npos) bad(what, list, "nested '['");
      cur.groups.push_back(parseGroup(body, what, list));
      cur.literals.emplace_back();
      i = close + 1;
    } else if (c == ']') {
      bad(what, list, "']' without '['");
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      bad(what, list, "a space in a host name");
    } else {
      cur.literals.back() += c;
      ++i;
    }
  }
  finish();
  return out;
}

std::string padded(unsigned long long v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

unsigned long long groupSize(const std::vector<Range>& g) {
  unsigned long long n = 0;
  for (const auto& r : g) n += r.hi - r.lo + 1;
  return n;
}

// The k-th number of a group.
std::string nth(const std::vector<Range>& g, unsigned long long k) {
  for (const auto& r : g) {
    unsigned long long len = r.hi - r.lo + 1;
    if (k < len) return padded(r.lo + k, r.width);
    k -= len;
  }
  return {};
}

}  // namespace

std::vector<std::string> expandHostlist(std::string_view list, const std::string& what,
                                        size_t maxHosts) {
  std::vector<std::string> hosts;
  for (const Pattern& p : parse(list, what)) {
    unsigned long long total = 1;
    for (const auto& g : p.groups) {
      unsigned long long n = groupSize(g);
      if (n > maxHosts || total * n > maxHosts) tooMany(what, list, maxHosts);
      total *= n;
    }
    if (total > maxHosts - hosts.size()) tooMany(what, list, maxHosts);
    for (unsigned long long k = 0; k < total; ++k) {
      // Mixed radix over the groups, the last group varying fastest.
      std::vector<std::string> parts(p.groups.size());
      unsigned long long rest = k;
      for (size_t gi = p.groups.size(); gi-- > 0;) {
        unsigned long long n = groupSize(p.groups[gi]);
        parts[gi] = nth(p.groups[gi], rest % n);
        rest /= n;
      }
      std::string name = p.literals[0];
      for (size_t gi = 0; gi < parts.size(); ++gi) name += parts[gi] + p.literals[gi + 1];
      hosts.push_back(std::move(name));
    }
  }
  return hosts;
}

std::string firstHost(std::string_view list, const std::string& what) {
  std::vector<Pattern> patterns = parse(list, what);
  const Pattern& p = patterns.front();
  std::string name = p.literals[0];
  for (size_t gi = 0; gi < p.groups.size(); ++gi) name += nth(p.groups[gi], 0) + p.literals[gi + 1];
  return name;
}

}  // namespace tutti::bootstrap
