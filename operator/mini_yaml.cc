#include "operator/mini_yaml.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace paratune::kube {

namespace {

struct Line {
  int indent;
  std::string text;
  int number;
};

std::string StripComment(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  return s;
}

class Parser {
 public:
  explicit Parser(std::vector<Line> lines) : lines_(std::move(lines)) {}

  Result<Json> Block(size_t* i, int indent) {
    if (*i >= lines_.size()) return Json();
    if (IsSeqItem(lines_[*i].text)) return Sequence(i, indent);
    return Mapping(i, indent);
  }

  size_t size() const { return lines_.size(); }

 private:
  static bool IsSeqItem(const std::string& t) { return t == "-" || t.rfind("- ", 0) == 0; }

  Status Err(const Line& l, const std::string& what) {
    return Status::Invalid("line " + std::to_string(l.number) + ": " + what);
  }

  Result<Json> Sequence(size_t* i, int indent) {
    Json out = Json::array();
    while (*i < lines_.size() && lines_[*i].indent == indent && IsSeqItem(lines_[*i].text)) {
      Line& l = lines_[*i];
      std::string rest = l.text == "-" ? "" : l.text.substr(2);
      size_t lead = rest.find_first_not_of(' ');
      if (lead == std::string::npos) {
        ++*i;
        if (*i < lines_.size() && lines_[*i].indent > indent) {
          auto item = Block(i, lines_[*i].indent);
          if (!item.ok()) return item;
          out.push_back(*item);
        } else {
          out.push_back(nullptr);
        }
        continue;
      }
      if (KeySplit(rest) == std::string::npos) {
        auto v = Scalar(rest, l);
        if (!v.ok()) return v;
        out.push_back(*v);
        ++*i;
        continue;
      }
      l.indent = indent + 2 + static_cast<int>(lead);  // "- key: v" opens a mapping.
      l.text = rest.substr(lead);
      auto item = Mapping(i, l.indent);
      if (!item.ok()) return item;
      out.push_back(*item);
    }
    return out;
  }

  static size_t KeySplit(const std::string& t) {
    char quote = 0;
    for (size_t k = 0; k < t.size(); ++k) {
      if (quote) {
        if (t[k] == quote) quote = 0;
      } else if (t[k] == '"' || t[k] == '\'') {
        quote = t[k];
      } else if (t[k] == ':' && (k + 1 == t.size() || t[k + 1] == ' ')) {
        return k;
      }
    }
    return std::string::npos;
  }

  Result<Json> Mapping(size_t* i, int indent) {
    Json out = Json::object();
    while (*i < lines_.size() && lines_[*i].indent == indent && !IsSeqItem(lines_[*i].text)) {
      const Line l = lines_[*i];
      size_t colon = KeySplit(l.text);
      if (colon == std::string::npos) return Err(l, "expected \"key: value\"");
      auto key = Scalar(l.text.substr(0, colon), l);
      if (!key.ok()) return key;
      std::string k = key->is_string() ? key->get<std::string>() : key->dump();
      std::string value = colon + 1 < l.text.size() ? l.text.substr(colon + 2) : "";
      ++*i;
      if (!value.empty() && value.find_first_not_of(' ') != std::string::npos) {
        auto v = Scalar(value.substr(value.find_first_not_of(' ')), l);
        if (!v.ok()) return v;
        out[k] = *v;
      } else if (*i < lines_.size() &&
                 (lines_[*i].indent > indent ||
                  (lines_[*i].indent == indent && IsSeqItem(lines_[*i].text)))) {
        auto v = Block(i, lines_[*i].indent);
        if (!v.ok()) return v;
        out[k] = *v;
      } else {
        out[k] = nullptr;
      }
    }
    if (*i < lines_.size() && lines_[*i].indent > indent) {
      return Err(lines_[*i], "unexpected indentation");
    }
    return out;
  }

  Result<Json> Scalar(const std::string& raw, const Line& l) {
    std::string s = TrimRight(raw);
    s.erase(0, std::min(s.size(), s.find_first_not_of(' ')));
    if (s.empty()) return Json();
    if (s[0] == '|' || s[0] == '>') return Err(l, "block scalars are not supported");
    if (s[0] == '&' || s[0] == '*') return Err(l, "anchors are not supported");
    if (s[0] == '"') {
      try {
        return Json::parse(s);
      } catch (const std::exception&) {
        return Err(l, "malformed quoted value " + s);
      }
    }
    if (s[0] == '[' || s[0] == '{') {
      size_t pos = 0;
      auto v = Flow(s, &pos, l);
      if (!v.ok()) return v;
      if (s.find_first_not_of(' ', pos) != std::string::npos) return Err(l, "trailing " + s);
      return v;
    }
    if (s[0] == '\'') {
      if (s.size() < 2 || s.back() != '\'') return Err(l, "unterminated quote");
      std::string out;
      for (size_t k = 1; k + 1 < s.size(); ++k) {
        out += s[k];
        if (s[k] == '\'' && s[k + 1] == '\'') ++k;
      }
      return Json(out);
    }
    if (s == "true" || s == "True") return Json(true);
    if (s == "false" || s == "False") return Json(false);
    if (s == "null" || s == "~") return Json();
    char* end = nullptr;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (end != nullptr && *end == '\0') return Json(n);
    return Json(s);
  }

  // A flow collection ({a: b, c: [d]}) starting at s[*pos].
  Result<Json> Flow(const std::string& s, size_t* pos, const Line& l) {
    auto skip = [&] {
      while (*pos < s.size() && s[*pos] == ' ') ++*pos;
    };
    skip();
    if (*pos >= s.size()) return Err(l, "unterminated flow value");
    char open = s[*pos];
    if (open != '[' && open != '{') {  // a scalar up to , ] or }
      size_t end = *pos;
      char quote = 0;
      while (end < s.size() && (quote || (s[end] != ',' && s[end] != ']' && s[end] != '}'))) {
        if (s[end] == '"' || s[end] == '\'') quote = quote == s[end] ? 0 : (quote ? quote : s[end]);
        ++end;
      }
      std::string raw = s.substr(*pos, end - *pos);
      *pos = end;
      return Scalar(raw, l);
    }
    char close = open == '[' ? ']' : '}';
    Json out = open == '[' ? Json::array() : Json::object();
    ++*pos;
    skip();
    while (*pos < s.size() && s[*pos] != close) {
      if (open == '{') {
        size_t colon = s.find(':', *pos);
        if (colon == std::string::npos) return Err(l, "flow mapping without ':'");
        auto key = Scalar(s.substr(*pos, colon - *pos), l);
        if (!key.ok()) return key;
        *pos = colon + 1;
        auto v = Flow(s, pos, l);
        if (!v.ok()) return v;
        out[key->is_string() ? key->get<std::string>() : key->dump()] = *v;
      } else {
        auto v = Flow(s, pos, l);
        if (!v.ok()) return v;
        out.push_back(*v);
      }
      skip();
      if (*pos < s.size() && s[*pos] == ',') ++*pos;
      skip();
    }
    if (*pos >= s.size()) return Err(l, "unterminated flow value");
    ++*pos;
    return out;
  }

  std::vector<Line> lines_;
};

}  // namespace

Result<Json> ParseMiniYaml(const std::string& text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    try {
      return Json::parse(text);
    } catch (const std::exception& e) {
      return Status::Invalid(std::string("malformed JSON: ") + e.what());
    }
  }
  std::vector<Line> lines;
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) {
    ++number;
    std::string s = TrimRight(StripComment(raw));
    if (s == "---" && lines.empty()) continue;
    if (s == "---" || s == "...") break;
    size_t ind = s.find_first_not_of(' ');
    if (ind == std::string::npos) continue;
    lines.push_back({static_cast<int>(ind), s.substr(ind), number});
  }
  if (lines.empty()) return Json::object();
  Parser p(lines);
  size_t i = 0;
  auto doc = p.Block(&i, lines[0].indent);
  if (!doc.ok()) return doc;
  if (i < p.size()) return Status::Invalid("line " + std::to_string(number) + ": trailing content");
  return doc;
}

}  // namespace paratune::kube
