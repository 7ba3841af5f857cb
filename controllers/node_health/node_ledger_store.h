// Where the node ledger (agents/health NodeLedger) lives: the `nodes.json` key of the ConfigMap
// paratune-node-health in the operator's namespace (contract section 10). One ledger for every
// campaign: a node's score adds up across campaigns. Every change is a read-modify-write guarded
// by the ConfigMap's resourceVersion; a 409 Conflict (another writer got there first) re-reads
// and re-applies the change, so concurrent campaign reconciles never lose each other's evidence.
// Reads come from the ConfigMap cache (config_map_cache.h: an informer of the operator's
// namespace restricted to kOperatorStateLabel) when one is given. Writes in one process are
// serialized, each applied to the ledger the previous one wrote (not to the cache, which may
// lag); a write that conflicts (another writer) reads the ledger live and applies the change
// again. The parsed ledger is kept per resourceVersion, so the reads of every trial launch and
// campaign reconcile neither send a request nor parse nodes.json again.
// Bounded: before every write the ledger is compacted (NodeLedger::Compact) to max_bytes, well
// under the API server's object limit, so a cluster of thousands of nodes never makes the
// ConfigMap unwritable; a ledger that still does not fit is not written (kResourceExhausted).
// Coalesced (issue 17), when set_coalescing is given an interval: a change that makes or clears
// no suspect (healthy credit, adverse evidence below the threshold) is not written at once; it
// is kept in this process, applied again on top of every later read, and written with the next
// write, or by the first change after `interval` since the last write. A change that moves a
// node across the threshold (or a compaction) is written at once, with everything deferred
// before it. At 200 campaigns every healthy trial had cost one PUT of the whole ledger. What a
// crash loses is at most `interval` of evidence that changed no suspect.
// Thread-safe when the client is; the setters are for before first use.
#ifndef PARATUNE_CONTROLLERS_NODE_HEALTH_NODE_LEDGER_STORE_H_
#define PARATUNE_CONTROLLERS_NODE_HEALTH_NODE_LEDGER_STORE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/health/node_ledger.h"
#include "base/time_source.h"
#include "controllers/config_map_cache.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

inline constexpr const char* kNodeHealthConfigMap = "paratune-node-health";
inline constexpr const char* kNodeHealthKey = "nodes.json";
inline constexpr const char* kDefaultOperatorNamespace = "paratune-system";
// nodes.json budget: a ConfigMap holds at most 1 MiB of data; room is left for metadata.
inline constexpr size_t kDefaultLedgerMaxBytes = 900 * 1024;
// How long the operator lets a change that makes or clears no suspect wait for a write.
inline constexpr Millis kLedgerCoalescing{30000};

class NodeLedgerStore {
 public:
  // Borrows client and configmaps (null: every read is a GET). `ns`: the operator's namespace.
  NodeLedgerStore(kube::KubeClient* client, std::string ns, int max_attempts = 5,
                  const ConfigMapCache* configmaps = nullptr);

  // The stored ledger (an empty one when the ConfigMap does not exist yet), as the cache has it
  // (a GET without one). kInternal when nodes.json is corrupt (the error names the field).
  Result<health::NodeLedger> Load();

  // Applies `change` to the current ledger and writes it back when its JSON changed (no write
  // otherwise). On kConflict re-reads and applies `change` again, up to max_attempts times;
  // `change` must therefore be idempotent (NodeLedger's RecordTrial is); with coalescing it may
  // be kept and called again by later Modify calls, so it must own what it uses (capture by
  // value). Returns the ledger as
  // written (or as read, when unchanged). Errors: the client's, kConflict after the last
  // attempt, kInternal for a corrupt ledger.
  // `report` (may be null) receives what the compaction before the write did.
  Result<health::NodeLedger> Modify(const std::function<void(health::NodeLedger*)>& change,
                                    health::CompactionReport* report = nullptr);

  // Defers writes that change no suspect for up to `interval` (see above); 0: every change is
  // written at once (the default). Borrows `time`.
  void set_coalescing(Millis interval, const TimeSource* time) {
    coalesce_interval_ = interval;
    time_ = time;
  }

  const std::string& ns() const { return ns_; }
  void set_ledger_options(health::LedgerOptions o) { options_ = std::move(o); }
  void set_max_bytes(size_t max_bytes) { max_bytes_ = max_bytes; }
  size_t max_bytes() const { return max_bytes_; }

 private:
  struct Read {
    health::NodeLedger ledger;
    std::string resource_version;  // "" when the ConfigMap does not exist
  };
  // live: GET instead of the cache (after a conflict the cache did not catch up with, or a
  // create that found an unlabelled ConfigMap of the same name).
  Result<Read> ReadLedger(bool live);
  Result<Read> Parse(const kube::Json& cm);
  Result<kube::Json> Write(const health::NodeLedger& ledger, const std::string& rv);
  // Whether a change that changed the ledger waits (coalescing). Requires write_mu_.
  bool Defer(bool suspects_unchanged) const;

  kube::KubeClient* client_;
  std::string ns_;
  int max_attempts_;
  std::unique_ptr<ConfigMapCache> own_cache_;  // when none was given: live reads
  const ConfigMapCache* configmaps_;
  std::mutex write_mu_;               // one Modify at a time
  std::optional<Read> last_written_;  // guarded by write_mu_: what this process wrote last
  // Guarded by write_mu_: the changes not written yet (coalescing), oldest first, and when this
  // process last wrote.
  std::vector<std::function<void(health::NodeLedger*)>> deferred_;
  std::optional<SteadyTime> last_write_time_;
  Millis coalesce_interval_{0};
  const TimeSource* time_ = nullptr;
  std::mutex parsed_mu_;
  std::string parsed_rv_;      // guarded by parsed_mu_
  health::NodeLedger parsed_;  // guarded by parsed_mu_; the ledger at parsed_rv_
  health::LedgerOptions options_;
  size_t max_bytes_ = kDefaultLedgerMaxBytes;
};

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_NODE_HEALTH_NODE_LEDGER_STORE_H_
