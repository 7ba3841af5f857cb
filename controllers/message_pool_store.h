// Where a campaign's message pool (agents/trials MessagePool) lives between reconciles. The
// reconciler is stateless: every reconcile loads the pool, advances the loop and saves it, so
// an operator restart loses nothing. An interface, so a database store can follow the ConfigMap
// one (spec.messagePool.store).
#ifndef PARATUNE_CONTROLLERS_MESSAGE_POOL_STORE_H_
#define PARATUNE_CONTROLLERS_MESSAGE_POOL_STORE_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/trials/message_pool.h"
#include "controllers/campaign_status.h"
#include "controllers/config_map_cache.h"
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
  // The campaign's pool (empty with version "" when none was saved). A stale pool would re-run
  // decisions already taken, so a store reads only what cannot be stale (see
  // ConfigMapPoolStore) and every Save is conditional on the version loaded. kUnavailable for
  // transient errors; kInternal when the stored pool is corrupt.
  virtual Result<LoadedPool> Load(const kube::Json& campaign) = 0;
  // Saves `pool` over the version Load returned. kConflict when another writer got there first
  // (reload and retry). Returns the new version.
  virtual Result<std::string> Save(const kube::Json& campaign, const MessagePool& pool,
                                   const std::string& version) = 0;
  // Keeps `pool` as the campaign's pool in this process without writing it: Load returns it
  // (version "", so the next Save creates the pool) until a Save writes it. Only for a pool of
  // which nothing was ever saved (`version` ""), and only the caller knows whether a process that
  // ends before the next Save may lose it (TuningCampaignReconciler holds the built-in engine's
  // first round, whose trials its TrialRuns give back). False when this store cannot hold (it may
  // not be the pool's only writer, or the pool does not fit its memory): the caller saves.
  virtual bool Hold(const kube::Json& campaign, const MessagePool& pool,
                    const std::string& version) {
    (void)campaign;
    (void)pool;
    (void)version;
    return false;
  }
  // What the store has to say about this campaign's pool in its status (a condition the
  // reconciler applies). Default: nothing.
  virtual std::optional<CampaignCondition> PoolCondition(const kube::Json& campaign) const {
    (void)campaign;
    return std::nullopt;
  }
};

struct ConfigMapPoolStoreOptions {
  // Largest chunk of pool JSON per ConfigMap (the API limit is 1 MiB per object, metadata
  // included). Chunks average about a quarter of it.
  size_t shard_bytes = 900 * 1024;
  // The pool is compacted to fit shard_bytes * max_shards bytes (see CompactPoolJsonLevel);
  // beyond that it is refused: Save fails with a terminal kInvalidArgument (the controller does
  // not retry it) and PoolCondition says False/PoolFull, which the reconciler writes.
  size_t max_shards = 8;
  // Bytes of immutable chunks kept in memory (chunks are named by their content, so a cached
  // chunk is never stale): loading a large pool reads only its head.
  size_t cache_bytes = 32 * 1024 * 1024;
  // Remember the head this process wrote last (per campaign UID) and load from it without a
  // GET. Sound while this process is the pool's only writer: the leader (a process that loses
  // the Lease exits) of an operator with one Deployment. Any failed save forgets the entry.
  bool cache_heads = true;
  // Heads and chunks this process did not write (after a restart, or evicted from the cache
  // above) are read from this cache (the informer of ConfigMaps with the campaign label) once
  // it has synced: an informer's list is current when it syncs, and a head it lags behind on
  // makes the next Save conflict (resourceVersion), never overwrite. Borrowed; null: GETs.
  const ConfigMapCache* configmaps = nullptr;
};

// How much CompactPoolJsonLevel had to take out.
enum class PoolCompaction { kNone, kText, kRecords, kTooLarge };

// Keeps the pool as JSON in ConfigMaps owned by the campaign (so they go when it goes), cut by
// content-defined chunking (a rolling hash picks the cut points, so a change rewrites only the
// chunk it falls in). "<campaign>-pool" (the head) holds the last chunk and lists the others,
// which live in "<campaign>-pool-<content hash>"; a save creates only chunks that did not exist,
// then moves the head (so a crash mid-save leaves the previous pool intact), then deletes the
// chunks the head no longer lists. Pools saved by earlier versions ("-pool-g<gen>-<i>" shards)
// still load; the next save rewrites them. A typical save (a trial appended or updated) costs
// one request: the head; the first save of a pool the reconciler held (Hold) costs the head and
// no request before it. Thread-safe when the client is; one writer per campaign at a time.
class ConfigMapPoolStore : public MessagePoolStore {
 public:
  // Borrows client.
  ConfigMapPoolStore(kube::KubeClient* client, ConfigMapPoolStoreOptions opts = {});
  ~ConfigMapPoolStore() override;
  Result<LoadedPool> Load(const kube::Json& campaign) override;
  Result<std::string> Save(const kube::Json& campaign, const MessagePool& pool,
                           const std::string& version) override;
  // The PoolCompacted condition the reconciler writes after a save of this campaign by this store
  // had to compact: True/TextShortened (LLM text, evidence) or True/RecordsCompacted (older trials'
  // prose); False/PoolFull after a save it refused (the pool does not fit even compacted).
  std::optional<CampaignCondition> PoolCondition(const kube::Json& campaign) const override;
  // Holds in the cache of heads (opts.cache_heads: this process is the only writer). A held pool
  // the cache evicts is gone as if the process had restarted.
  bool Hold(const kube::Json& campaign, const MessagePool& pool,
            const std::string& version) override;

  static std::string HeadName(const std::string& campaign) { return campaign + "-pool"; }

 private:
  struct Cache;
  // A pool ConfigMap: from opts_.configmaps, else a GET.
  Result<kube::Json> Read(const std::string& ns, const std::string& name);
  Result<std::string> ReadChunk(const std::string& ns, const std::string& name);
  Status WriteChunk(const kube::Json& campaign, const std::string& name, const std::string& data);
  void DeleteChunks(const kube::Json& campaign, const std::vector<std::string>& keep, bool legacy);

  kube::KubeClient* client_;
  ConfigMapPoolStoreOptions opts_;
  std::unique_ptr<Cache> cache_;
};

// Shortens a pool's JSON in place until its compact dump is at most `max_bytes`, in levels:
// kText: LLM prompts/replies and failure evidence of older entries truncated, then the oldest
// LLM exchanges dropped; kRecords: the prose (rationale, change, evidence, long summaries) of
// trials other than the newest 50, the baseline and the best/worst measured ones removed, older
// analyses reduced to their verdict, rejections beyond the newest 500 and notes beyond 100
// dropped. Trials themselves (config, phase, metrics, prediction, failure category) are never
// dropped. kTooLarge when even that does not fit.
PoolCompaction CompactPoolJsonLevel(nlohmann::json* pool, size_t max_bytes);
// CompactPoolJsonLevel(...) != kTooLarge.
bool CompactPoolJson(nlohmann::json* pool, size_t max_bytes);
// Content-defined chunks of `text` (each at most max_chunk bytes, about a quarter of it on
// average); their concatenation is `text`. Deterministic across processes.
std::vector<std::string> ChunkPoolText(const std::string& text, size_t max_chunk);
// 16 hex digits naming a chunk by its content.
std::string ChunkHash(const std::string& chunk);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_MESSAGE_POOL_STORE_H_
