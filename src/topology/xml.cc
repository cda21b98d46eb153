#include "topology/xml.h"

#include <cctype>

#include "common/error.h"

namespace tutti::topo::xml {

const std::string* Element::attr(std::string_view key) const {
  for (const auto& [k, v] : attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

class Parser {
 public:
  Parser(std::string_view s, std::string_view name) : s_(s), name_(name) {}

  Document run() {
    Document doc;
    skipMisc();
    if (eof()) err("no root element (empty file?)");
    if (peek() != '<') err("text before the root element");
    doc.root = element(0);
    skipMisc();
    if (!eof()) err("content after the root element </" + doc.root->name + ">");
    return doc;
  }

 private:
  [[noreturn]] void err(const std::string& what) {
    fail(tuttiInvalidArgument, "topology file ", std::string(name_), ":", line_,
         ": malformed XML: ", what);
  }
  bool eof() const { return pos_ >= s_.size(); }
  char peek() const { return s_[pos_]; }
  bool startsWith(std::string_view p) const { return s_.substr(pos_, p.size()) == p; }
  void advance(size_t n = 1) {
    for (size_t i = 0; i < n && pos_ < s_.size(); ++i) {
      if (s_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  void skipWs() {
    while (!eof() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      advance();
    }
  }
  void skipUntil(std::string_view end, const char* what) {
    int startLine = line_;
    size_t p = s_.find(end, pos_);
    if (p == std::string_view::npos) {
      line_ = startLine;
      err(std::string("unterminated ") + what + " (file truncated?)");
    }
    advance(p + end.size() - pos_);
  }
  // Comments, processing instructions, DOCTYPE and whitespace outside the root.
  void skipMisc() {
    for (;;) {
      skipWs();
      if (startsWith("<!--")) {
        skipUntil("-->", "comment");
      } else if (startsWith("<?")) {
        skipUntil("?>", "processing instruction");
      } else if (startsWith("<!DOCTYPE")) {
        skipUntil(">", "DOCTYPE");
      } else {
        return;
      }
    }
  }
  static bool nameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == ':';
  }
  std::string readName(const char* what) {
    size_t b = pos_;
    while (!eof() && nameChar(peek())) advance();
    if (b == pos_) {
      if (eof()) err(std::string("file ends where ") + what + " was expected (truncated?)");
      err(std::string("expected ") + what + ", found '" + std::string(1, peek()) + "'");
    }
    return std::string(s_.substr(b, pos_ - b));
  }
  void decodeInto(std::string_view raw, std::string& out) {
    for (size_t i = 0; i < raw.size(); ++i) {
      char c = raw[i];
      if (c == '<') err("'<' inside an attribute value");
      if (c != '&') {
        out += c;
        continue;
      }
      size_t semi = raw.find(';', i);
      if (semi == std::string_view::npos) err("unterminated entity reference");
      std::string_view ent = raw.substr(i + 1, semi - i - 1);
      if (ent == "amp")
        out += '&';
      else if (ent == "lt")
        out += '<';
      else if (ent == "gt")
        out += '>';
      else if (ent == "quot")
        out += '"';
      else if (ent == "apos")
        out += '\'';
      else if (!ent.empty() && ent[0] == '#') {
        unsigned long v = 0;
        try {
          v = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X')
                  ? std::stoul(std::string(ent.substr(2)), nullptr, 16)
                  : std::stoul(std::string(ent.substr(1)));
        } catch (...) {
          err("bad character reference &" + std::string(ent) + ";");
        }
        if (v < 0x80)
          out += static_cast<char>(v);
        else
          out += '?';  // non-ASCII: not needed for topology files
      } else {
        err("unknown entity &" + std::string(ent) + ";");
      }
      i = semi;
    }
  }
  std::unique_ptr<Element> element(int depth) {
    if (depth > 256) err("elements nested deeper than 256");
    auto el = std::make_unique<Element>();
    el->line = line_;
    advance();  // '<'
    el->name = readName("an element name");
    for (;;) {
      size_t before = pos_;
      skipWs();
      if (eof()) err("file ends inside the tag <" + el->name + "> (truncated?)");
      if (startsWith("/>")) {
        advance(2);
        return el;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      if (before == pos_) err("expected whitespace between attributes in <" + el->name + ">");
      std::string key = readName("an attribute name");
      for (const auto& [k, v] : el->attrs) {
        if (k == key) err("attribute '" + key + "' repeated in <" + el->name + ">");
      }
      skipWs();
      if (eof() || peek() != '=') err("expected '=' after attribute '" + key + "'");
      advance();
      skipWs();
      if (eof() || (peek() != '"' && peek() != '\'')) {
        err("attribute '" + key + "' value is not quoted");
      }
      char q = peek();
      advance();
      size_t end = s_.find(q, pos_);
      if (end == std::string_view::npos) err("unterminated value of attribute '" + key + "'");
      std::string val;
      decodeInto(s_.substr(pos_, end - pos_), val);
      advance(end - pos_ + 1);
      el->attrs.emplace_back(std::move(key), std::move(val));
    }
    // Content.
    std::string text;
    for (;;) {
      if (eof())
        err("file ends inside <" + el->name + "> opened at line " + std::to_string(el->line) +
            " (truncated?)");
      if (startsWith("</")) {
        advance(2);
        std::string closing = readName("a closing tag name");
        if (closing != el->name) {
          err("closing tag </" + closing + "> does not match <" + el->name + "> opened at line " +
              std::to_string(el->line));
        }
        skipWs();
        if (eof() || peek() != '>') err("expected '>' after </" + closing);
        advance();
        break;
      }
      if (startsWith("<!--")) {
        skipUntil("-->", "comment");
      } else if (startsWith("<![CDATA[")) {
        size_t b = pos_ + 9;
        skipUntil("]]>", "CDATA section");
        text.append(s_.substr(b, pos_ - 3 - b));
      } else if (startsWith("<?")) {
        skipUntil("?>", "processing instruction");
      } else if (peek() == '<') {
        el->children.push_back(element(depth + 1));
      } else {
        size_t b = pos_;
        size_t e = s_.find('<', pos_);
        if (e == std::string_view::npos) e = s_.size();
        std::string_view raw = s_.substr(b, e - b);
        std::string decoded;
        decodeInto(raw, decoded);
        text += decoded;
        advance(e - pos_);
      }
    }
    size_t a = text.find_first_not_of(" \t\r\n");
    size_t z = text.find_last_not_of(" \t\r\n");
    el->text = a == std::string::npos ? "" : text.substr(a, z - a + 1);
    return el;
  }

  std::string_view s_;
  std::string_view name_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

Document parse(std::string_view content, std::string_view name) {
  return Parser(content, name).run();
}

}  // namespace tutti::topo::xml
