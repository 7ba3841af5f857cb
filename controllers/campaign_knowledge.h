// The knowledge one campaign diagnoses and reasons with (issue 15 item 5): the site's (embedded
// knowledge plus the operator's mounted knowledge ConfigMaps) and, on top, what the ConfigMaps
// named in spec.agents.knowledgeConfigMaps hold in the campaign's namespace (never another):
// markdown documents (`*.md` keys), failure signatures and known failures (`*.yaml`, `*.yml`,
// `*.json` keys; a value with a top-level `cases` key holds known failures), routed as a mounted
// knowledge directory is (KnowledgeBase::LoadDirectory). Values with a top-level
// `pastOptimizations` key are the warm start's (controllers/knowledge_records.h) and are not
// added here.
//
// A namespace user writes those ConfigMaps, so their content is hostile input: a signature with a
// `regex` is refused (a backtracking pattern could stall a worker on every log it reads; `contains`
// substrings only, the site's knowledge may use both), and a bad value is skipped with a warning
// naming the ConfigMap, key and field; the rest of the campaign's knowledge still counts.
//
// Built once per set of ConfigMap versions and shared: the cache is keyed by the namespace, the
// names and each ConfigMap's resourceVersion, so an edited ConfigMap is read again and an
// unchanged one costs one GET (a knowledge ConfigMap carries no label the operator's informers
// select) and no rebuild. A campaign whose ConfigMaps add nothing (none named, only past
// optimizations) gets the site's knowledge itself. Thread-safe.
#ifndef PARATUNE_CONTROLLERS_CAMPAIGN_KNOWLEDGE_H_
#define PARATUNE_CONTROLLERS_CAMPAIGN_KNOWLEDGE_H_

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/trials/failure_analyzer.h"
#include "controllers/config_map_cache.h"

namespace paratune::controllers {

struct CampaignKnowledgeView {
  std::shared_ptr<const KnowledgeBase> knowledge;  // null when the site's failed to load
  std::shared_ptr<const FailureAnalyzer> analyzer;
  // One sentence per named ConfigMap that is missing and per value skipped (its error).
  std::vector<std::string> warnings;
};

class CampaignKnowledge {
 public:
  // `configmaps` is borrowed. The site's knowledge: the embedded one plus `site_dir` when not
  // empty, as loaded once by the caller (`site_knowledge`, null when it did not load) with the
  // analyzer over it (`site_analyzer`), which answers for campaigns that add nothing; a
  // campaign's own knowledge base is built from `site_dir` again plus its ConfigMaps.
  CampaignKnowledge(const ConfigMapCache* configmaps, std::string site_dir,
                    std::shared_ptr<const KnowledgeBase> site_knowledge,
                    std::shared_ptr<const FailureAnalyzer> site_analyzer, size_t capacity = 16);
  CampaignKnowledge(const CampaignKnowledge&) = delete;
  CampaignKnowledge& operator=(const CampaignKnowledge&) = delete;

  // The knowledge for a campaign of namespace `ns`. Errors: transport errors reading a named
  // ConfigMap other than NotFound (the caller retries).
  Result<CampaignKnowledgeView> For(const std::string& ns, const CampaignSpec& spec) const;

  // The site's knowledge alone.
  CampaignKnowledgeView Site() const;

 private:
  struct Entry {
    std::string key;  // "<ns> <name>@<resourceVersion> ...", one per named ConfigMap
    CampaignKnowledgeView view;
  };

  const ConfigMapCache* configmaps_;
  const std::string site_dir_;
  const std::shared_ptr<const KnowledgeBase> site_knowledge_;
  const std::shared_ptr<const FailureAnalyzer> site_analyzer_;
  const size_t capacity_;
  mutable std::mutex mu_;
  mutable std::list<Entry> entries_;  // most recently used first
};

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_CAMPAIGN_KNOWLEDGE_H_
