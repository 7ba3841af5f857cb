// Reads of the operator's own ConfigMaps (the node ledger, message pool heads and chunks, the
// published best configuration) from informers restricted by label selector to the objects the
// operator labels, instead of one GET per reconcile (issue 17: those GETs were 8 of the 20 API
// requests a trial cost). Writes stay with the callers: optimistic-concurrency PUTs carrying the
// resourceVersion they read here; after a kConflict a caller waits for the cache to catch up
// (AwaitChange) and applies its change again, or reads live when it does not.
// Only labelled ConfigMaps are ever cached, never every ConfigMap of the cluster; a ConfigMap of
// the same name without the label (an older release's, a user's) is invisible here, so callers
// that create fall back to GetLive when the create answers kAlreadyExists.
// Thread-safe; borrows the client and the informers, which must outlive it.
#ifndef PARATUNE_CONTROLLERS_CONFIG_MAP_CACHE_H_
#define PARATUNE_CONTROLLERS_CONFIG_MAP_CACHE_H_

#include <string>
#include <vector>

#include "operator/informer.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

// The label on the node ledger ConfigMap in the operator's namespace; the operator's informer
// there selects it. Pool and output ConfigMaps carry the campaign label (kCampaignLabel).
inline constexpr const char* kOperatorStateLabel = "tuning.paratune.dev/operator-state";

class ConfigMapCache {
 public:
  // `informers`: ConfigMap informers, each for one namespace ("" : all) and a label selector;
  // every one that covers a namespace answers for it (the operator's own namespace has two: the
  // node ledger's label and the campaigns'). None: every read is a GET (what tests without
  // informers get).
  explicit ConfigMapCache(kube::KubeClient* client, std::vector<kube::Informer*> informers = {});
  ConfigMapCache(const ConfigMapCache&) = delete;
  ConfigMapCache& operator=(const ConfigMapCache&) = delete;

  // ns/name from the informer that serves `ns`, without a request; kNotFound when that cache
  // does not hold it. When no informer serves `ns`, or it has not synced yet: a GET.
  Result<kube::Json> Get(const std::string& ns, const std::string& name) const;
  // Always a GET: for a name the cache cannot see (an unlabelled ConfigMap) or cannot wait for.
  Result<kube::Json> GetLive(const std::string& ns, const std::string& name) const;
  // After a write of ns/name with resourceVersion `stale_rv` failed with kConflict: waits up to
  // `timeout` (real time) until the cache holds another version of it (or none). True when it
  // did (read again with Get); false when it did not or no informer serves `ns` (read live).
  bool AwaitChange(const std::string& ns, const std::string& name, const std::string& stale_rv,
                   Millis timeout = Millis(2000)) const;
  // The ConfigMaps of `ns` that carry label key `label` (any value), from the informer that
  // serves `ns` without a request; when none does (or it has not synced yet): one LIST with that
  // label selector. Warm start reads earlier campaigns' published results with it: a LIST per
  // new campaign returned every pool of the namespace (O(campaigns^2) bytes at scale, issue 17).
  Result<std::vector<kube::ObjectPtr>> ListLabelled(const std::string& ns,
                                                    const std::string& label) const;
  // Get, or GetLive when `live`: what a retry after AwaitChange reads.
  Result<kube::Json> Read(const std::string& ns, const std::string& name, bool live) const {
    return live ? GetLive(ns, name) : Get(ns, name);
  }

 private:
  // The synced informers that cover `ns`; empty when none does or one of them has not synced
  // (then reads are live).
  std::vector<const kube::Informer*> Serving(const std::string& ns) const;
  static kube::ObjectPtr Cached(const std::vector<const kube::Informer*>& serving,
                                const std::string& ns, const std::string& name);

  kube::KubeClient* client_;
  std::vector<kube::Informer*> informers_;
};

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_CONFIG_MAP_CACHE_H_
