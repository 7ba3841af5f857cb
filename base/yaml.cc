#include "base/yaml.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/utf8.h"

namespace paratune {

namespace {

// What YAML may expand to. An alias names a node defined once, but turning it into JSON copies
// them: a few hundred bytes of nested aliases ("billion laughs") would expand to gigabytes. The
// output may hold at most kYamlNodesPerByte nodes and kYamlBytesPerByte scalar bytes per input
// byte (plus a floor), which real manifests (anchors for a shared block or two) stay far below.
constexpr int kYamlMaxDepth = 64;
constexpr int64_t kYamlNodesFloor = 10000;
constexpr int64_t kYamlNodesPerByte = 4;
constexpr int64_t kYamlBytesFloor = 64 << 10;
constexpr int64_t kYamlBytesPerByte = 4;

// "line 3, column 5: " for a position yaml-cpp knows; nothing for one it does not.
std::string Position(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
         ": ";
}

// A YAML error at a position ("line 3, column 5: ..."); YamlToJson prefixes "yaml: ".
[[noreturn]] void ThrowAt(const YAML::Mark& mark, const std::string& what) {
  throw std::runtime_error(Position(mark) + what);
}

// A plain scalar typed the way Kubernetes' YAML reader types it: booleans, null, integers and
// finite decimals; everything else (and anything quoted, which yaml-cpp tags "!") stays a string.
nlohmann::json ScalarToJson(const std::string& tag, const std::string& s) {
  if (tag == "!") return s;
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

// Builds one document's JSON from yaml-cpp's parse events (no YAML::Node tree in between).
// Aliases are copied, so what they expand to is charged to the budget before the copy is made.
class JsonBuilder final : public YAML::EventHandler {
 public:
  JsonBuilder(int64_t max_nodes, int64_t max_bytes)
      : max_nodes_(max_nodes), max_bytes_(max_bytes) {}

  // Where the last document began, and what it holds.
  const YAML::Mark& document_start() const { return document_start_; }
  nlohmann::json TakeDocument() { return std::move(document_); }

  void OnDocumentStart(const YAML::Mark& mark) override {
    document_start_ = mark;
    document_ = nullptr;
    open_.clear();
    anchors_.clear();  // yaml-cpp numbers anchors per document
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (AwaitingKey()) ThrowAt(mark, "a map key must be a plain string");
    Charge(mark, 1, 0);
    Place(mark, nullptr, anchor, 1, 0);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) ThrowAt(mark, "an alias to an unknown anchor");
    const Anchored& target = it->second;
    if (AwaitingKey()) {
      if (!target.value.is_string()) ThrowAt(mark, "a map key must be a plain string");
      Charge(mark, 0, target.bytes);
      open_.back().key = target.value.get<std::string>();
      return;
    }
    Charge(mark, target.nodes, target.bytes);
    Place(mark, target.value, YAML::NullAnchor, target.nodes, target.bytes);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!IsValidUtf8(value)) {
      ThrowAt(mark, AwaitingKey() ? "a key is not valid UTF-8" : "a string is not valid UTF-8");
    }
    const auto bytes = static_cast<int64_t>(value.size());
    if (AwaitingKey()) {
      Charge(mark, 0, bytes);
      open_.back().key = value;
      if (anchor != YAML::NullAnchor) anchors_[anchor] = {value, 1, bytes};
      return;
    }
    Charge(mark, 1, bytes);
    Place(mark, ScalarToJson(tag, value), anchor, 1, bytes);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    Open(mark, nlohmann::json::array(), anchor);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    Open(mark, nlohmann::json::object(), anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Anchored {
    nlohmann::json value;
    int64_t nodes;
    int64_t bytes;
  };
  struct OpenNode {
    nlohmann::json value;  // an array or an object
    YAML::Mark mark;
    YAML::anchor_t anchor;
    int64_t nodes_before;  // the budget used before this node began
    int64_t bytes_before;
    std::optional<std::string> key;  // a map's key whose value comes next
  };

  bool AwaitingKey() const {
    return !open_.empty() && open_.back().value.is_object() && !open_.back().key;
  }

  void Charge(const YAML::Mark& mark, int64_t nodes, int64_t bytes) {
    nodes_used_ += nodes;
    bytes_used_ += bytes;
    if (nodes_used_ > max_nodes_) {
      ThrowAt(mark, "the document expands to too many nodes (aliases repeated too often?)");
    }
    if (bytes_used_ > max_bytes_) {
      ThrowAt(mark, "the document expands to too much text (aliases repeated too often?)");
    }
  }

  // A node begins as deep as the collections open around it.
  void CheckDepth(const YAML::Mark& mark) const {
    if (open_.size() > static_cast<size_t>(kYamlMaxDepth)) {
      ThrowAt(mark, "nesting deeper than " + std::to_string(kYamlMaxDepth) + " levels");
    }
  }

  void Open(const YAML::Mark& mark, nlohmann::json value, YAML::anchor_t anchor) {
    if (AwaitingKey()) ThrowAt(mark, "a map key must be a plain string");
    CheckDepth(mark);
    const int64_t nodes_before = nodes_used_;
    Charge(mark, 1, 0);
    open_.push_back({std::move(value), mark, anchor, nodes_before, bytes_used_, std::nullopt});
  }

  void Close() {
    OpenNode done = std::move(open_.back());
    open_.pop_back();
    Place(done.mark, std::move(done.value), done.anchor, nodes_used_ - done.nodes_before,
          bytes_used_ - done.bytes_before);
  }

  // Puts a finished node where it belongs: the document, a sequence's next entry or the value
  // of a map's pending key (a repeated key keeps its last value, as Kubernetes' reader does).
  void Place(const YAML::Mark& mark, nlohmann::json value, YAML::anchor_t anchor, int64_t nodes,
             int64_t bytes) {
    CheckDepth(mark);
    if (anchor != YAML::NullAnchor) anchors_[anchor] = {value, nodes, bytes};
    if (open_.empty()) {
      document_ = std::move(value);
    } else if (open_.back().value.is_array()) {
      open_.back().value.push_back(std::move(value));
    } else {
      open_.back().value[*open_.back().key] = std::move(value);
      open_.back().key.reset();
    }
  }

  const int64_t max_nodes_;
  const int64_t max_bytes_;
  int64_t nodes_used_ = 0;
  int64_t bytes_used_ = 0;
  YAML::Mark document_start_ = YAML::Mark::null_mark();
  nlohmann::json document_;
  std::vector<OpenNode> open_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
};

}  // namespace

Result<nlohmann::json> YamlToJson(const std::string& text) {
  const auto size = static_cast<int64_t>(text.size());
  JsonBuilder builder(kYamlNodesFloor + kYamlNodesPerByte * size,
                      kYamlBytesFloor + kYamlBytesPerByte * size);
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    std::vector<nlohmann::json> docs;
    int64_t previous_start = -1;
    while (parser.HandleNextDocument(builder)) {
      // yaml-cpp 0.7's document loop never ends when a document begins at a token no node can
      // start with (",b", "&a ,b", "[a] ,b", ">#{" then '"",': issue jbeder/yaml-cpp#1040, fixed
      // upstream by #1319): the parser reports an empty document without consuming anything,
      // again and again, allocating as it goes. A document that begins where the previous one
      // began has consumed nothing, so the text there is refused instead.
      const YAML::Mark& start = builder.document_start();
      if (start.pos == previous_start) {
        ThrowAt(start, "no YAML node can begin here (a ',' outside a flow collection?)");
      }
      previous_start = start.pos;
      docs.push_back(builder.TakeDocument());
    }
    if (docs.size() == 1) return std::move(docs[0]);
    return nlohmann::json(std::move(docs));
  } catch (const YAML::Exception& e) {  // yaml-cpp's "error at line ..." in our form
    return Status::Invalid("yaml: " + Position(e.mark) + e.msg);
  } catch (const std::exception& e) {
    return Status::Invalid(std::string("yaml: ") + e.what());
  }
}

}  // namespace paratune
