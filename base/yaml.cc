#include "base/yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "base/utf8.h"

namespace paratune {

namespace {

// What YAML may expand to. yaml-cpp shares aliased nodes, but turning them into JSON copies
// them: a few hundred bytes of nested aliases ("billion laughs") would expand to gigabytes. The
// output may hold at most kYamlNodesPerByte nodes and kYamlBytesPerByte scalar bytes per input
// byte (plus a floor), which real manifests (anchors for a shared block or two) stay far below.
constexpr int kYamlMaxDepth = 64;
constexpr int64_t kYamlNodesFloor = 10000;
constexpr int64_t kYamlNodesPerByte = 4;
constexpr int64_t kYamlBytesFloor = 64 << 10;
constexpr int64_t kYamlBytesPerByte = 4;

struct YamlBudget {
  int64_t nodes_left;
  int64_t bytes_left;
};

// A YAML error with the position of the node it is about ("yaml: line 3, column 5: ...").
[[noreturn]] void ThrowAt(const YAML::Node& n, const std::string& what) {
  const YAML::Mark mark = n.Mark();
  if (mark.is_null()) throw std::runtime_error(what);
  throw std::runtime_error("line " + std::to_string(mark.line + 1) + ", column " +
                           std::to_string(mark.column + 1) + ": " + what);
}

// A plain scalar typed the way Kubernetes' YAML reader types it: booleans, null, integers and
// finite decimals; everything else (and anything quoted) stays a string.
nlohmann::json ScalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s == "null" || s == "~" || s.empty()) return nullptr;
  if (s.size() > 128 || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return s;
  try {
    size_t pos = 0;
    long long i = std::stoll(s, &pos, 10);
    if (pos == s.size()) return i;
    double d = std::stod(s, &pos);
    if (pos == s.size() && std::isfinite(d)) return d;
  } catch (const std::exception&) {
  }
  return s;
}

nlohmann::json YamlNodeToJson(const YAML::Node& n, int depth, YamlBudget* budget) {
  if (depth > kYamlMaxDepth) {
    ThrowAt(n, "nesting deeper than " + std::to_string(kYamlMaxDepth) + " levels");
  }
  if (--budget->nodes_left < 0) {
    ThrowAt(n, "the document expands to too many nodes (aliases repeated too often?)");
  }
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& e : n) a.push_back(YamlNodeToJson(e, depth + 1, budget));
      return a;
    }
    case YAML::NodeType::Map: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) ThrowAt(kv.first, "a map key must be a plain string");
        const std::string& key = kv.first.Scalar();
        if (!IsValidUtf8(key)) ThrowAt(kv.first, "a key is not valid UTF-8");
        budget->bytes_left -= static_cast<int64_t>(key.size());
        o[key] = YamlNodeToJson(kv.second, depth + 1, budget);
      }
      return o;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  budget->bytes_left -= static_cast<int64_t>(n.Scalar().size());
  if (budget->bytes_left < 0) {
    ThrowAt(n, "the document expands to too much text (aliases repeated too often?)");
  }
  if (!IsValidUtf8(n.Scalar())) ThrowAt(n, "a string is not valid UTF-8");
  return ScalarToJson(n);
}

// yaml-cpp 0.7 loops forever, allocating gigabytes, when a ',' (flow entry) token appears in
// block context where a node or key is expected: the 3-byte document ",b\n", or "a:\n  b: 1\n ,c:"
// (both found by campaign_yaml_fuzzer). Outside a flow collection ([...] or {...}) a ',' can
// never begin a line's content (a plain scalar cannot start with ','), so such a line is never
// valid YAML: refuse it, with its line, before yaml-cpp sees the text. Tracks the flow depth
// (brackets outside quotes and comments) and skips the content of block scalars (| and >).
// The same loop follows a ',' after a complete quoted scalar or flow collection at the top of
// block context ("\"x\" ,y", "[a] ,b"; also across lines): never valid YAML, refused too. And
// after a node's anchor or tag ("&a ,b", "!t ,b": a plain scalar cannot start with ','), and
// a block scalar header followed by text (">#{" then a quoted scalar and ',').
// Whether position i of `line` (content starting at `content`) begins a node: the line's
// content, or after a sequence entry "- " or a mapping value ": ", or after the node's
// properties ("!!int >", "&a |") where those begin a node.
bool AtNodeStart(const std::string& line, size_t content, size_t i) {
  if (i == content) return true;
  const size_t prev = line.find_last_not_of(" \t", i - 1);
  if (prev == std::string::npos || prev < content || prev + 1 == i) return false;
  if (line[prev] == '-' || line[prev] == ':' || line[prev] == '?') return true;
  const size_t space = line.find_last_of(" \t", prev);
  const size_t token = space == std::string::npos || space < content ? content : space + 1;
  return (line[token] == '&' || line[token] == '!') && AtNodeStart(line, content, token);
}

// Whether a block scalar header ends well from `i` on: indentation and chomping indicators,
// then nothing or a comment after a space (">#{" is not YAML, and yaml-cpp loops on it).
bool BlockScalarHeaderEnds(const std::string& line, size_t i) {
  while (i < line.size() &&
         (line[i] == '+' || line[i] == '-' || std::isdigit(static_cast<unsigned char>(line[i])))) {
    ++i;
  }
  const size_t next = line.find_first_not_of(" \t\r", i);
  return next == std::string::npos || (line[next] == '#' && next > i);
}

// Whether the node properties (anchors "&a", tags "!t") starting at `i` are followed by ','.
bool CommaAfterProperties(const std::string& line, size_t i) {
  while (i < line.size() && (line[i] == '&' || line[i] == '!')) {
    i = line.find_first_of(" \t\r", i);  // the end of this property
    if (i == std::string::npos) return false;
    i = line.find_first_not_of(" \t\r", i);
    if (i == std::string::npos) return false;
  }
  return i < line.size() && line[i] == ',';
}

Status CheckBlockCommas(const std::string& text) {
  int depth = 0;                 // open [ and { so far
  int block_scalar_indent = -1;  // indent of the line that opened a | or > scalar; -1: none
  char quote = 0;                // the open quote, across lines (quoted scalars may span lines)
  bool node_closed = false;      // a quoted scalar or flow collection just ended at depth 0
  size_t line_no = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // a BOM
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const int indent = static_cast<int>(first);
    if (block_scalar_indent >= 0 && quote == 0) {
      if (indent > block_scalar_indent) continue;  // content of the block scalar
      block_scalar_indent = -1;
    }
    size_t pos = first;
    if (line.compare(pos, 3, "---") == 0 || line.compare(pos, 3, "...") == 0) pos += 3;
    const size_t content = line.find_first_not_of(" \t\r", pos);
    if (content == std::string::npos) continue;
    if (line[content] == ',' && depth == 0 && quote == 0) {
      return Status::Invalid("yaml: line " + std::to_string(line_no) +
                             ": ',' outside a flow collection ([...] or {...})");
    }
    char last = 0;
    for (size_t i = quote != 0 ? first : content; i < line.size(); ++i) {
      const char c = line[i];
      if (quote != 0) {
        if (quote == '"' && c == '\\') {
          ++i;  // an escaped character, the quote included
        } else if (c == quote) {
          quote = 0;
          node_closed = depth == 0;
        }
        continue;
      }
      if (c == ',' && depth == 0 && node_closed) {
        return Status::Invalid("yaml: line " + std::to_string(line_no) +
                               ": ',' after a quoted scalar or flow collection outside a flow "
                               "collection ([...] or {...})");
      }
      if (c != ' ' && c != '\t' && c != '\r') node_closed = false;
      if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) break;
      if ((c == '|' || c == '>') && depth == 0 && AtNodeStart(line, content, i) &&
          !BlockScalarHeaderEnds(line, i + 1)) {
        return Status::Invalid("yaml: line " + std::to_string(line_no) +
                               ": a block scalar header ('|' or '>') followed by text");
      }
      if ((c == '&' || c == '!') && depth == 0 && AtNodeStart(line, content, i) &&
          CommaAfterProperties(line, i)) {
        return Status::Invalid("yaml: line " + std::to_string(line_no) +
                               ": ',' after an anchor or tag outside a flow collection "
                               "([...] or {...})");
      }
      // A tag or anchor never contains a flow indicator ("!t#{" is not YAML; yaml-cpp loops on
      // it followed by '"",'): refuse it rather than count its '{' as a flow collection.
      if ((c == '&' || c == '!') && depth == 0 && AtNodeStart(line, content, i)) {
        const size_t end = std::min(line.size(), line.find_first_of(" \t\r", i));
        if (line.find_first_of(",[]{}", i) < end) {
          return Status::Invalid("yaml: line " + std::to_string(line_no) +
                                 ": a flow indicator inside a tag or anchor");
        }
      }
      if ((c == '"' || c == '\'') && (i == content || std::strchr(" [{,:", line[i - 1]))) {
        quote = c;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if ((c == ']' || c == '}') && depth > 0) {
        --depth;
        node_closed = depth == 0;
      }
      if (c != ' ' && c != '\t' && c != '\r') last = c;
    }
    // "key: |", "key: >-", "- |2": the following more-indented lines are literal text.
    const size_t bar = line.find_last_of("|>");
    if (depth == 0 && quote == 0 && bar != std::string::npos && bar >= content) {
      const size_t rest = line.find_first_not_of("+-0123456789 \t\r", bar + 1);
      const bool opens = (rest == std::string::npos || line[rest] == '#') &&
                         (bar == content || line[bar - 1] == ' ');
      if (opens && (last == '|' || last == '>' || last == '-' || last == '+' ||
                    std::isdigit(static_cast<unsigned char>(last)))) {
        block_scalar_indent = indent;
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<nlohmann::json> YamlToJson(const std::string& text) {
  PARATUNE_RETURN_IF_ERROR(CheckBlockCommas(text));
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    const auto size = static_cast<int64_t>(text.size());
    YamlBudget budget{kYamlNodesFloor + kYamlNodesPerByte * size,
                      kYamlBytesFloor + kYamlBytesPerByte * size};
    if (docs.size() == 1) return YamlNodeToJson(docs[0], 0, &budget);
    nlohmann::json all = nlohmann::json::array();
    for (const auto& d : docs) all.push_back(YamlNodeToJson(d, 0, &budget));
    return all;
  } catch (const YAML::Exception& e) {
    return Status::Invalid(std::string("yaml: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Invalid(std::string("yaml: ") + e.what());
  }
}

}  // namespace paratune
