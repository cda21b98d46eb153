// A small, strict XML reader (elements, attributes, text, comments, <?..?>, <!DOCTYPE>,
// the five predefined entities and &#..;). Enough for NCCL topology files and for a
// well-formedness check of hwloc files. Errors throw tutti::Error naming the file, the line
// and the problem.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tutti::topo::xml {

struct Element {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<std::unique_ptr<Element>> children;
  std::string text;  // concatenated character data (trimmed)
  int line = 0;

  const std::string* attr(std::string_view key) const;
};

struct Document {
  std::unique_ptr<Element> root;
};

// `name` only labels error messages ("<name>:<line>: <problem>").
Document parse(std::string_view content, std::string_view name);

}  // namespace tutti::topo::xml
