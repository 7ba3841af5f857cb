#include "agents/knowledge/knowledge_base.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/core/campaign.h"
#include "agents/core/embedded.h"
#include "agents/knowledge/signatures.h"
#include "base/json_fields.h"
#include "base/yaml.h"

namespace paratune {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The kubelet's bookkeeping entries in a ConfigMap or Secret volume: `..data`, `..2026_11_21_...`.
bool IsConfigMapInternal(const std::filesystem::path& p) {
  return p.filename().string().rfind("..", 0) == 0;
}

bool IsMarkdown(const std::string& p) { return EndsWith(p, ".md"); }

bool IsSignatureFile(const std::string& p) {
  return EndsWith(p, ".yaml") || EndsWith(p, ".yml") || EndsWith(p, ".json");
}

// "Tensor parallelism (TP)" -> "tensor-parallelism-tp", GitHub's anchor style.
std::string Anchor(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out.push_back(static_cast<char>(std::tolower(u)));
    } else if ((c == ' ' || c == '-') && !out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string Snippet(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c == '\n') c = ' ';
    if (c == ' ' && !s.empty() && s.back() == ' ') continue;
    s.push_back(c);
    if (s.size() >= 200) break;
  }
  return s;
}

struct Section {
  std::string heading, body;
};

// Splits markdown at "#"/"##"/"###" headings; text before the first heading belongs to the title.
std::vector<Section> SplitSections(const std::string& md, std::string* title) {
  std::vector<Section> out(1);
  std::istringstream in(md);
  std::string line;
  bool in_code = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    if (!in_code && line.rfind('#', 0) == 0) {
      size_t n = line.find_first_not_of('#');
      std::string heading = n == std::string::npos ? "" : line.substr(n);
      heading.erase(0, heading.find_first_not_of(' '));
      if (n == 1 && title->empty()) *title = heading;
      if (!out.back().body.empty() || !out.back().heading.empty()) out.push_back({});
      out.back().heading = heading;
      continue;
    }
    out.back().body += line + "\n";
  }
  return out;
}

std::string ConfigText(const Config& c) {
  std::string s;
  for (const auto& [k, v] : c) s += k + " " + v.ToString() + " ";
  return s;
}

}  // namespace

Result<std::unique_ptr<KnowledgeBase>> KnowledgeBase::LoadEmbedded() {
  auto kb = std::make_unique<KnowledgeBase>();
  for (const EmbeddedFile& f : EmbeddedKnowledgeFiles()) {
    std::string text(f.contents);
    if (IsMarkdown(f.path)) {
      PARATUNE_RETURN_IF_ERROR(kb->AddDocument(f.path, text));
    } else if (std::string(f.path).rfind("failures/", 0) == 0) {
      PARATUNE_RETURN_IF_ERROR(kb->AddKnownFailures(f.path, text));
    } else if (IsSignatureFile(f.path)) {
      PARATUNE_RETURN_IF_ERROR(kb->AddSignatures(f.path, text));
    }
  }
  return kb;
}

Result<std::unique_ptr<KnowledgeBase>> KnowledgeBase::LoadDefault(const std::string& dir) {
  auto kb = LoadEmbedded();
  if (!kb.ok()) return kb.status();
  if (!dir.empty()) PARATUNE_RETURN_IF_ERROR((*kb)->LoadDirectory(dir));
  return kb;
}

Status KnowledgeBase::LoadDirectory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    return Status::NotFound("knowledge directory " + path + " does not exist");
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    // A ConfigMap volume holds each key as a symlink `key -> ..data/key`, `..data` a symlink to
    // the current `..<timestamp>` directory: read the keys only, never the `..*` entries, so
    // nothing is loaded twice (or from a stale timestamp directory).
    if (IsConfigMapInternal(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) return Status::Unavailable("reading " + path + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    std::string name = p.string();
    if (!IsKnowledgeFile(name)) continue;
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) return Status::Unavailable("cannot read " + name);
    PARATUNE_RETURN_IF_ERROR(AddFile(name, ss.str()));
  }
  return Status::Ok();
}

std::string KnowledgeBase::DataKind(const std::string& text) {
  auto j = YamlToJson(text);
  if (!j.ok() || !j->is_object()) return "";
  for (const char* key : {"cases", "pastOptimizations"}) {
    if (j->contains(key)) return key;
  }
  return "";
}

bool KnowledgeBase::IsKnowledgeFile(const std::string& name) {
  return IsMarkdown(name) || IsSignatureFile(name);
}

Status KnowledgeBase::AddFile(const std::string& name, const std::string& text) {
  if (IsMarkdown(name)) return AddDocument(name, text);
  if (!IsSignatureFile(name)) {
    return Status::Invalid(name + ": not a knowledge file (*.md, *.yaml, *.yml or *.json)");
  }
  const std::string kind = DataKind(text);
  if (kind == "cases") return AddKnownFailures(name, text);
  if (kind == "pastOptimizations") return AddPastOptimizations(name, text);
  return AddSignatures(name, text);
}

Status KnowledgeBase::AddDocument(const std::string& name, const std::string& markdown) {
  if (name.empty()) return Status::Invalid("document name: required");
  if (markdown.find_first_not_of(" \n\t\r") == std::string::npos) {
    return Status::Invalid(name + ": empty document");
  }
  KnowledgeDocument doc{name, "", markdown};
  SplitSections(markdown, &doc.title);
  if (doc.title.empty()) doc.title = name;
  auto it = std::find_if(documents_.begin(), documents_.end(),
                         [&](const KnowledgeDocument& d) { return d.name == name; });
  if (it != documents_.end()) {
    *it = std::move(doc);
    RebuildIndex();
  } else {
    documents_.push_back(std::move(doc));
    IndexDocument(documents_.back());
  }
  return Status::Ok();
}

Status KnowledgeBase::AddSignatures(const std::string& name, const std::string& text,
                                    bool allow_regex) {
  auto parsed = ParseSignatures(name, text, allow_regex);
  if (!parsed.ok()) return parsed.status();
  bool replaced = false;
  for (auto& sig : *parsed) {
    auto it = std::find_if(signatures_.begin(), signatures_.end(),
                           [&](const FailureSignature& s) { return s.key == sig.key; });
    if (it != signatures_.end()) {
      *it = std::move(sig);
      replaced = true;
    } else {
      signatures_.push_back(std::move(sig));
      if (!replaced) IndexSignature(signatures_.back());
    }
  }
  if (replaced) RebuildIndex();
  return Status::Ok();
}

void KnowledgeBase::AddPastOptimization(const PastOptimization& p) {
  past_.push_back(p);
  IndexPast(past_.back());
}

Result<std::vector<PastOptimization>> ParsePastOptimizations(const std::string& name,
                                                             const std::string& text) {
  auto j = YamlToJson(text);
  if (!j.ok()) return j.status().WithPrefix(name);
  if (!j->is_object() || !j->contains("pastOptimizations") ||
      !(*j)["pastOptimizations"].is_array()) {
    return Status::Invalid(name + ": pastOptimizations: must be a list");
  }
  std::vector<PastOptimization> parsed;
  const nlohmann::json& list = (*j)["pastOptimizations"];
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = "pastOptimizations[" + std::to_string(i) + "]";
    JsonFields f(list[i], path);
    PastOptimization p;
    Status st = f.CheckObject();
    if (st.ok())
      st = f.CheckKnownKeys({"id", "workload", "workloadSpec", "before", "after", "metric",
                             "beforeValue", "afterValue", "note"});
    if (st.ok()) st = f.ReadString("id", &p.id);
    if (st.ok() && p.id.empty()) st = Status::Invalid(f.Path("id") + ": required");
    if (st.ok()) st = f.ReadString("workload", &p.workload);
    if (st.ok() && f.Has("workloadSpec")) {
      p.workload_spec = f.Get("workloadSpec");
      if (!p.workload_spec.is_object())
        st =
            Status::Invalid(f.Path("workloadSpec") + ": must be a map (model, training, hardware)");
    }
    if (st.ok()) st = f.ReadString("metric", &p.metric);
    if (st.ok()) st = f.ReadString("note", &p.note);
    if (st.ok()) st = f.ReadDouble("beforeValue", -1e12, 1e12, &p.before_value);
    if (st.ok()) st = f.ReadDouble("afterValue", -1e12, 1e12, &p.after_value);
    for (const char* key : {"before", "after"}) {
      if (!st.ok() || !f.Has(key)) continue;
      auto c = ConfigFromJson(f.Get(key), f.Path(key));
      if (!c.ok()) st = c.status();
      if (c.ok()) (std::string(key) == "before" ? p.before : p.after) = *c;
    }
    if (!st.ok()) return st.WithPrefix(name);
    parsed.push_back(std::move(p));
  }
  return parsed;
}

Status KnowledgeBase::AddPastOptimizations(const std::string& name, const std::string& text) {
  auto parsed = ParsePastOptimizations(name, text);
  if (!parsed.ok()) return parsed.status();
  for (const auto& p : *parsed) AddPastOptimization(p);
  return Status::Ok();
}

Status KnowledgeBase::AddKnownFailures(const std::string& name, const std::string& text) {
  auto parsed = ParseLabelledCases(name, text);
  if (!parsed.ok()) return parsed.status();
  for (auto& c : *parsed) {
    auto same = std::find_if(known_failures_.begin(), known_failures_.end(),
                             [&](const LabelledCase& k) { return k.url == c.url; });
    if (same != known_failures_.end()) {
      *same = std::move(c);
    } else {
      known_failures_.push_back(std::move(c));
    }
  }
  known_index_.Rebuild(known_failures_);
  failure_words_.Rebuild(known_failures_);
  return Status::Ok();
}

const FailureSignature* KnowledgeBase::FindSignature(const std::string& key) const {
  for (const auto& s : signatures_) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

void KnowledgeBase::IndexDocument(const KnowledgeDocument& doc) {
  std::string title;
  for (const Section& s : SplitSections(doc.text, &title)) {
    if (s.body.find_first_not_of(" \n") == std::string::npos) continue;
    if (s.heading == "Sources" || s.heading == "References") continue;  // lists, not knowledge
    std::string id = doc.name + (s.heading.empty() ? "" : "#" + Anchor(s.heading));
    std::string heading = s.heading.empty() ? doc.title : doc.title + " / " + s.heading;
    // The heading counts twice: it says what the passage is about.
    index_.Add(heading + " " + s.heading + "\n" + s.body);
    passages_.push_back({"document", id, heading, Snippet(s.body), 0});
  }
}

void KnowledgeBase::IndexSignature(const FailureSignature& sig) {
  std::string text =
      sig.key + " " + sig.category + " " + sig.error_type + " " + sig.cause + " " + sig.remedy;
  for (const auto& p : sig.parameters) text += " " + p;
  for (const auto& c : sig.contains) text += " " + c;
  index_.Add(text);
  passages_.push_back({"signature", "signature:" + sig.key, sig.key + " (" + sig.category + ")",
                       Snippet(sig.cause + " " + sig.remedy), 0});
}

void KnowledgeBase::IndexPast(const PastOptimization& p) {
  std::string text = p.workload + " " + p.note + " " + p.metric + " before " +
                     ConfigText(p.before) + " after " + ConfigText(p.after);
  index_.Add(text);
  std::ostringstream title;
  title << p.workload << ": " << p.metric << " " << p.before_value << " -> " << p.after_value;
  passages_.push_back({"past-optimization", "past:" + p.id, title.str(), Snippet(p.note), 0});
}

void KnowledgeBase::RebuildIndex() {
  index_.Clear();
  passages_.clear();
  for (const auto& d : documents_) IndexDocument(d);
  for (const auto& s : signatures_) IndexSignature(s);
  for (const auto& p : past_) IndexPast(p);
}

std::vector<KnowledgeHit> KnowledgeBase::Search(const std::string& query, size_t k) const {
  std::vector<KnowledgeHit> out;
  for (const auto& [idx, score] : index_.Search(query, k)) {
    KnowledgeHit h = passages_[idx];
    h.score = score;
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace paratune
