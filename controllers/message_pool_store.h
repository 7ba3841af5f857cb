// Where a campaign's message pool (agents/loop MessagePool) lives between reconciles. The
// reconciler is stateless: every reconcile loads the pool, advances the loop and saves it, so
// an operator restart loses nothing. An interface, so a database store can follow the ConfigMap
// one (spec.messagePool.store).
#ifndef PARATUNE_CONTROLLERS_MESSAGE_POOL_STORE_H_
#define PARATUNE_CONTROLLERS_MESSAGE_POOL_STORE_H_

#include <cstddef>
#include <string>

#include "agents/loop/message_pool.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

struct LoadedPool {
  MessagePool pool;
  // Opaque version for optimistic concurrency: pass it back to Save. "" when no pool exists.
  std::string version;
};

class MessagePoolStore {
 public:
  virtual ~MessagePoolStore() = default;
  // The campaign's pool (empty with version "" when none was saved). Reads the API server, not
  // a cache: a stale pool would re-run decisions already taken. kUnavailable for transient
  // errors; kInternal when the stored pool is corrupt.
  virtual Result<LoadedPool> Load(const kube::Json& campaign) = 0;
  // Saves `pool` over the version Load returned. kConflict when another writer got there first
  // (reload and retry). Returns the new version.
  virtual Result<std::string> Save(const kube::Json& campaign, const MessagePool& pool,
                                   const std::string& version) = 0;
};

struct ConfigMapPoolStoreOptions {
  // Bytes of pool JSON per ConfigMap (the API limit is 1 MiB per object, metadata included).
  size_t shard_bytes = 900 * 1024;
  // Shards at most; the pool is compacted (LLM transcripts and failure evidence shortened, the
  // oldest transcripts dropped) to fit before it is refused with kResourceExhausted.
  size_t max_shards = 8;
};

// Keeps the pool as JSON in ConfigMaps owned by the campaign (so they go when it goes):
// "<campaign>-pool" holds the first shard and says how many follow; larger pools continue in
// "<campaign>-pool-g<generation>-<i>", written before the head so a crash mid-save leaves the
// previous pool intact; older generations are deleted after the head moves on.
// Thread-safe when the client is (no state of its own); one writer per campaign at a time.
class ConfigMapPoolStore : public MessagePoolStore {
 public:
  // Borrows client.
  ConfigMapPoolStore(kube::KubeClient* client, ConfigMapPoolStoreOptions opts = {});
  Result<LoadedPool> Load(const kube::Json& campaign) override;
  Result<std::string> Save(const kube::Json& campaign, const MessagePool& pool,
                           const std::string& version) override;

  static std::string HeadName(const std::string& campaign) { return campaign + "-pool"; }

 private:
  Status WriteShard(const kube::Json& campaign, const std::string& name, int64_t generation,
                    const std::string& chunk);
  void DeleteOldShards(const kube::Json& campaign, int64_t keep_generation);

  kube::KubeClient* client_;
  ConfigMapPoolStoreOptions opts_;
};

// Shortens a pool's JSON in place until its compact dump is at most `max_bytes`: first LLM
// prompts/replies and failure evidence of older entries are truncated, then the oldest LLM
// exchanges dropped. Trials, rejections, analyses and calibration are never dropped. Returns
// false when even that does not fit.
bool CompactPoolJson(nlohmann::json* pool, size_t max_bytes);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_MESSAGE_POOL_STORE_H_
