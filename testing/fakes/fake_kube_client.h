// FakeKubeClient: an in-memory API server for unit tests (no kube-apiserver needed). It keeps
// what the tests of controllers rely on:
//   - resourceVersions from one global counter; Update/UpdateStatus/Delete preconditions with a
//     stale resourceVersion fail with kConflict; Create of a taken name fails kAlreadyExists.
//   - uid, creationTimestamp, generation (bumped when spec changes), apiVersion/kind filled in.
//   - the status subresource: Update keeps the stored status, UpdateStatus changes only status
//     (for every resource listed by SetHasStatus; by default pods, jobs, nodes and the paratune
//     kinds).
//   - merge, JSON and apply patches (apply is modelled as a merge patch of the intent).
//   - label selectors (k=v, k==v, k!=v, k, !k, k in (a,b)) and field selectors on any dotted path
//     (metadata.name, spec.nodeName, status.phase...), pagination with limit/continue.
//   - watches replaying history from a resourceVersion, kGone once Compact() dropped it, and
//     ended by CloseWatches() (a server-side timeout) or by stop.
//   - garbage collection: deleting an owner deletes the objects whose ownerReferences name it
//     (unless propagationPolicy=Orphan).
//   - injected errors per verb and resource, call counts per verb, pod logs set by the test.
// Thread-safe.
#ifndef PARATUNE_TESTING_FAKES_FAKE_KUBE_CLIENT_H_
#define PARATUNE_TESTING_FAKES_FAKE_KUBE_CLIENT_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "operator/kube_client.h"

namespace paratune::kube {

class FakeKubeClient : public KubeClient {
 public:
  FakeKubeClient();
  FakeKubeClient(const FakeKubeClient&) = delete;
  FakeKubeClient& operator=(const FakeKubeClient&) = delete;

  Result<Json> Get(const GroupVersionResource& gvr, const std::string& ns,
                   const std::string& name) override;
  Result<ObjectList> List(const GroupVersionResource& gvr, const std::string& ns,
                          const ListOptions& opts) override;
  Result<Json> Create(const GroupVersionResource& gvr, const std::string& ns, const Json& obj,
                      const WriteOptions& opts = {}) override;
  Result<Json> Update(const GroupVersionResource& gvr, const Json& obj,
                      const WriteOptions& opts = {}) override;
  Result<Json> UpdateStatus(const GroupVersionResource& gvr, const Json& obj,
                            const WriteOptions& opts = {}) override;
  Result<Json> Patch(const GroupVersionResource& gvr, const std::string& ns,
                     const std::string& name, PatchType type, const Json& patch,
                     const WriteOptions& opts = {}, const std::string& subresource = "") override;
  Status Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                const DeleteOptions& opts = {}) override;
  Status Watch(const GroupVersionResource& gvr, const std::string& ns, const WatchOptions& opts,
               const WatchHandler& handler, std::stop_token stop) override;
  Result<std::string> GetPodLog(const std::string& ns, const std::string& name,
                                const PodLogOptions& opts = {}) override;

  // --- test controls ---
  // The next `times` calls of `verb` ("get", "list", "create", "update", "updatestatus",
  // "patch", "delete", "watch", "log") on `plural` ("" : any) fail with `status`.
  void InjectError(const std::string& verb, const std::string& plural, Status status,
                   int times = 1);
  // Calls made per verb (including failed ones).
  int Calls(const std::string& verb) const;
  int TotalCalls() const;
  void ResetCalls();
  // Forget watch history up to now: watching from an older resourceVersion returns kGone.
  void Compact();
  // Ends every open watch as a server timeout would (the watch call returns Ok).
  void CloseWatches();
  // Number of watches currently open.
  int OpenWatches() const;
  void SetPodLog(const std::string& ns, const std::string& name, std::string log);
  void SetHasStatus(const std::string& plural, bool has_status);
  // Stores obj as is (no defaults, no events): seeds state before informers start.
  void Seed(const GroupVersionResource& gvr, Json obj);
  // The current resourceVersion counter.
  int64_t resource_version() const;

 private:
  struct Entry {
    GroupVersionResource gvr;
    std::string ns;
    WatchEvent event;
    int64_t rv;
  };
  using StoreKey = std::tuple<std::string, std::string, std::string>;  // resource, ns, name

  Status TakeInjected(const std::string& verb, const std::string& plural);
  Result<Json> WriteLocked(const GroupVersionResource& gvr, Json obj, bool status_only);
  void StampLocked(const GroupVersionResource& gvr, Json* obj);
  void RecordLocked(const GroupVersionResource& gvr, WatchEvent::Type type, const Json& obj);
  Status DeleteLocked(const GroupVersionResource& gvr, const std::string& ns,
                      const std::string& name, const std::string& policy);
  void CollectGarbageLocked(const std::string& owner_uid);
  bool HasStatus(const std::string& plural) const;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<StoreKey, Json> objects_;                  // guarded by mu_
  std::map<std::string, GroupVersionResource> gvrs_;  // plural key -> gvr; guarded by mu_
  std::deque<Entry> history_;                         // guarded by mu_
  int64_t compacted_rv_ = 0;                          // guarded by mu_
  int64_t rv_ = 100;                                  // guarded by mu_
  int64_t uid_ = 0;                                   // guarded by mu_
  int64_t close_epoch_ = 0;                           // guarded by mu_
  int open_watches_ = 0;                              // guarded by mu_
  std::map<std::string, int> calls_;                  // guarded by mu_
  std::map<std::pair<std::string, std::string>, std::pair<Status, int>> injected_;
  std::map<std::string, std::string> logs_;  // guarded by mu_
  std::set<std::string> status_plurals_;     // guarded by mu_
};

// Label selector matching used by the fake (and available to others): true when `labels`
// (a JSON object, possibly null) satisfies `selector`. Malformed selectors match nothing.
bool MatchesLabelSelector(const Json& labels, const std::string& selector);
// Field selector: comma-separated path=value / path!=value on the object's dotted paths.
bool MatchesFieldSelector(const Json& obj, const std::string& selector);

}  // namespace paratune::kube

#endif  // PARATUNE_TESTING_FAKES_FAKE_KUBE_CLIENT_H_
