#include "controllers/campaign_knowledge.h"

#include <spdlog/spdlog.h>

#include "agents/knowledge/signatures.h"
#include "base/yaml.h"
#include "controllers/conditions.h"

namespace paratune::controllers {
namespace {

// One value of a named ConfigMap that the campaign's knowledge takes.
struct KnowledgeValue {
  std::string name;  // "ConfigMap <ns>/<cm> key <key>": what documents and errors are called
  const std::string* text = nullptr;
};

bool IsMarkdownKey(const std::string& key) {
  return key.size() >= 3 && key.compare(key.size() - 3, 3, ".md") == 0;
}

// What a data value holds: "cases", "pastOptimizations" or "signatures" ("" when it does not
// parse; AddFile then says why).
std::string DataKindOf(const std::string& text) {
  auto j = YamlToJson(text);
  if (!j.ok()) return "";
  if (j->is_object()) {
    if (j->contains("cases")) return "cases";
    if (j->contains("pastOptimizations")) return "pastOptimizations";
  }
  return "signatures";
}

// Signatures from a namespace may match by substring only (header).
Status OnlySubstrings(const std::string& name, const std::string& text) {
  auto sigs = ParseSignatures(name, text);
  if (!sigs.ok()) return sigs.status();
  for (size_t i = 0; i < sigs->size(); ++i) {
    if (!(*sigs)[i].regex.empty()) {
      return Status::Invalid(name + ": signatures[" + std::to_string(i) +
                             "].regex: a campaign's knowledge matches with `contains` only (a "
                             "regular expression from a namespace could stall the operator); "
                             "the site's knowledge may use regex");
    }
  }
  return Status::Ok();
}

}  // namespace

CampaignKnowledge::CampaignKnowledge(const ConfigMapCache* configmaps, std::string site_dir,
                                     std::shared_ptr<const FailureAnalyzer> site_analyzer,
                                     size_t capacity)
    : configmaps_(configmaps),
      site_dir_(std::move(site_dir)),
      site_analyzer_(std::move(site_analyzer)),
      capacity_(capacity == 0 ? 1 : capacity) {}

std::shared_ptr<const KnowledgeBase> CampaignKnowledge::SiteKnowledge() const {
  if (!site_loaded_) {
    site_loaded_ = true;
    auto kb = KnowledgeBase::LoadDefault(site_dir_);
    if (!kb.ok()) kb = KnowledgeBase::LoadEmbedded();
    if (kb.ok()) site_ = std::move(*kb);
  }
  return site_;
}

CampaignKnowledgeView CampaignKnowledge::Site() const {
  std::lock_guard<std::mutex> lock(mu_);
  return CampaignKnowledgeView{SiteKnowledge(), site_analyzer_, {}};
}

Result<CampaignKnowledgeView> CampaignKnowledge::For(const std::string& ns,
                                                     const CampaignSpec& spec) const {
  // Read every named ConfigMap first (no lock held across requests).
  std::vector<std::string> warnings;
  std::vector<kube::Json> maps;
  std::string key = ns;
  for (const auto& name : spec.agents.knowledge_config_maps) {
    auto cm = configmaps_->Get(ns, name);
    if (!cm.ok() && cm.status().code() == StatusCode::kNotFound)
      cm = configmaps_->GetLive(ns, name);
    if (!cm.ok()) {
      if (cm.status().code() != StatusCode::kNotFound) return cm.status();
      warnings.push_back("knowledge ConfigMap " + name + " not found in namespace " + ns);
      key += " " + name + "@-";
      continue;
    }
    key += " " + name + "@" + kube::ResourceVersionOf(*cm);
    maps.push_back(std::move(*cm));
  }
  std::vector<KnowledgeValue> values;
  for (const auto& cm : maps) {
    const kube::Json& data = ObjectField(cm, "data");
    if (!data.is_object()) continue;
    const std::string prefix = "ConfigMap " + ns + "/" + kube::NameOf(cm) + " key ";
    for (const auto& [k, v] : data.items()) {
      if (!v.is_string() || !KnowledgeBase::IsKnowledgeFile(k)) continue;
      const std::string& text = v.get_ref<const std::string&>();
      if (!IsMarkdownKey(k) && DataKindOf(text) == "pastOptimizations") {
        continue;  // the warm start's
      }
      values.push_back({prefix + k, &text});
    }
  }

  std::lock_guard<std::mutex> lock(mu_);
  if (values.empty()) return CampaignKnowledgeView{SiteKnowledge(), site_analyzer_, warnings};
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key != key) continue;
    entries_.splice(entries_.begin(), entries_, it);
    CampaignKnowledgeView view = entries_.front().view;
    view.warnings.insert(view.warnings.begin(), warnings.begin(), warnings.end());
    return view;
  }
  auto kb = KnowledgeBase::LoadDefault(site_dir_);
  if (!kb.ok()) kb = KnowledgeBase::LoadEmbedded();
  if (!kb.ok()) {  // a bug: the embedded knowledge is malformed
    warnings.push_back("the knowledge base did not load (" + kb.status().message() +
                       "): the campaign's knowledge ConfigMaps are not used");
    return CampaignKnowledgeView{nullptr, site_analyzer_, warnings};
  }
  std::vector<std::string> skipped;
  size_t added = 0;
  for (const auto& v : values) {
    Status ok = IsMarkdownKey(v.name) || DataKindOf(*v.text) != "signatures"
                    ? Status::Ok()
                    : OnlySubstrings(v.name, *v.text);
    if (ok.ok()) ok = (*kb)->AddFile(v.name, *v.text);
    if (!ok.ok()) {
      skipped.push_back(ok.message() + " (skipped)");
      continue;
    }
    ++added;
  }
  std::shared_ptr<const KnowledgeBase> shared(std::move(*kb));
  auto analyzer = MakeKnowledgeFailureAnalyzer(shared);
  Entry entry;
  entry.key = key;
  entry.view.warnings = skipped;
  if (added == 0 || !analyzer.ok()) {
    if (!analyzer.ok()) entry.view.warnings.push_back(analyzer.status().message());
    entry.view.knowledge = SiteKnowledge();
    entry.view.analyzer = site_analyzer_;
  } else {
    entry.view.knowledge = shared;
    entry.view.analyzer = std::shared_ptr<const FailureAnalyzer>(std::move(*analyzer));
  }
  spdlog::info("knowledge for campaigns of {} reading {}: {} value(s) added, {} skipped", ns,
               key.substr(ns.size() + 1), added, skipped.size());
  entries_.push_front(std::move(entry));
  if (entries_.size() > capacity_) entries_.pop_back();
  CampaignKnowledgeView view = entries_.front().view;
  view.warnings.insert(view.warnings.begin(), warnings.begin(), warnings.end());
  return view;
}

}  // namespace paratune::controllers
