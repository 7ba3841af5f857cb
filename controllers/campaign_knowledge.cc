#include "controllers/campaign_knowledge.h"

#include <spdlog/spdlog.h>

#include "agents/trials/knowledge_failure_analyzer.h"
#include "base/json_fields.h"

namespace paratune::controllers {
namespace {

bool IsMarkdownKey(const std::string& key) {
  return key.size() >= 3 && key.compare(key.size() - 3, 3, ".md") == 0;
}

}  // namespace

CampaignKnowledge::CampaignKnowledge(const ConfigMapCache* configmaps, std::string site_dir,
                                     std::shared_ptr<const KnowledgeBase> site_knowledge,
                                     std::shared_ptr<const FailureAnalyzer> site_analyzer,
                                     size_t capacity)
    : configmaps_(configmaps),
      site_dir_(std::move(site_dir)),
      site_knowledge_(std::move(site_knowledge)),
      site_analyzer_(std::move(site_analyzer)),
      capacity_(capacity == 0 ? 1 : capacity) {}

CampaignKnowledgeView CampaignKnowledge::Site() const {
  return CampaignKnowledgeView{site_knowledge_, site_analyzer_, {}};
}

Result<CampaignKnowledgeView> CampaignKnowledge::For(const std::string& ns,
                                                     const CampaignSpec& spec) const {
  if (spec.agents.knowledge_config_maps.empty()) return Site();
  // Read every named ConfigMap first (no lock held across requests).
  std::vector<std::string> warnings;
  std::vector<kube::Json> maps;
  std::string key = ns;
  for (const auto& name : spec.agents.knowledge_config_maps) {
    auto cm = configmaps_->Get(ns, name);
    if (!cm.ok() && cm.status().code() == StatusCode::kNotFound) {
      cm = configmaps_->GetLive(ns, name);
    }
    if (!cm.ok()) {
      if (cm.status().code() != StatusCode::kNotFound) return cm.status();
      warnings.push_back("knowledge ConfigMap " + name + " not found in namespace " + ns);
      key += " " + name + "@-";
      continue;
    }
    key += " " + name + "@" + kube::ResourceVersionOf(*cm);
    maps.push_back(std::move(*cm));
  }
  auto with_missing = [&warnings](CampaignKnowledgeView view) {
    view.warnings.insert(view.warnings.begin(), warnings.begin(), warnings.end());
    return view;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key != key) continue;
      entries_.splice(entries_.begin(), entries_, it);
      return with_missing(entries_.front().view);
    }
  }
  // Not built for these versions yet: build outside the lock (a large ConfigMap takes a while
  // to parse), each value parsed as little as its kind needs.
  Entry entry;
  entry.key = key;
  auto kb = KnowledgeBase::LoadDefault(site_dir_);
  if (!kb.ok()) kb = KnowledgeBase::LoadEmbedded();
  size_t added = 0;
  for (const auto& cm : maps) {
    const kube::Json& data = ObjectField(cm, "data");
    const std::string prefix = "ConfigMap " + ns + "/" + kube::NameOf(cm) + " key ";
    for (const auto& [k, v] : data.items()) {
      if (!v.is_string() || !KnowledgeBase::IsKnowledgeFile(k) || !kb.ok()) continue;
      const std::string& text = v.get_ref<const std::string&>();
      const std::string name = prefix + k;
      Status ok;
      if (IsMarkdownKey(k)) {
        ok = (*kb)->AddDocument(name, text);
      } else {
        const std::string kind = KnowledgeBase::DataKind(text);
        if (kind == "pastOptimizations") continue;  // the warm start's
        ok = kind == "cases" ? (*kb)->AddKnownFailures(name, text)
                             : (*kb)->AddSignatures(name, text, /*allow_regex=*/false);
      }
      if (!ok.ok()) {
        entry.view.warnings.push_back(ok.message() + " (skipped)");
        continue;
      }
      ++added;
    }
  }
  Result<std::unique_ptr<FailureAnalyzer>> analyzer = Status::Invalid("nothing added");
  std::shared_ptr<const KnowledgeBase> shared;
  if (added > 0) {
    shared = std::move(*kb);
    analyzer = MakeKnowledgeFailureAnalyzer(shared);
  } else if (!kb.ok()) {  // a bug: the embedded knowledge is malformed
    entry.view.warnings.push_back("the knowledge base did not load (" + kb.status().message() +
                                  "): the campaign's knowledge ConfigMaps are not used");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (analyzer.ok()) {
    entry.view.knowledge = std::move(shared);
    entry.view.analyzer = std::shared_ptr<const FailureAnalyzer>(std::move(*analyzer));
  } else {  // nothing of the campaign's own: the site's, remembered all the same
    entry.view.knowledge = site_knowledge_;
    entry.view.analyzer = site_analyzer_;
  }
  spdlog::info("knowledge for campaigns of {} reading {}: {} value(s) added, {} skipped", ns,
               key.substr(ns.size() + 1), added, entry.view.warnings.size());
  entries_.push_front(std::move(entry));
  if (entries_.size() > capacity_) entries_.pop_back();
  return with_missing(entries_.front().view);
}

}  // namespace paratune::controllers
