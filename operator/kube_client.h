// KubeClient: the one door to the Kubernetes API (client-go's dynamic client). Everything in
// operator/ and controllers/ takes a KubeClient* so tests inject FakeKubeClient
// (tests/operator/fake_kube_client.h) and the operator injects RestKubeClient (rest_client.h).
//
// Objects are nlohmann::json in their wire form (apiVersion, kind, metadata, spec, status).
// Every call returns a Status / Result mapped from the HTTP code as the conventions say:
//   404 -> kNotFound; 409 -> kAlreadyExists on Create, kConflict otherwise (re-read and retry);
//   410 -> kGone (relist); 400/422 -> kInvalidArgument; 401 -> kUnauthenticated;
//   403 -> kPermissionDenied; 429/5xx/connection errors -> kUnavailable (retry with backoff);
//   client-side timeouts -> kDeadlineExceeded. The message carries the API server's message.
// Implementations are thread-safe: any number of threads may call any method at once.
#ifndef PARATUNE_OPERATOR_KUBE_CLIENT_H_
#define PARATUNE_OPERATOR_KUBE_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/status.h"

namespace paratune::kube {

using Json = nlohmann::json;

// Which collection an object lives in: /api/v1/namespaces/NS/pods or
// /apis/GROUP/VERSION/namespaces/NS/PLURAL. `kind` is informative (used by fakes and events).
struct GroupVersionResource {
  std::string group;    // "" for the core group.
  std::string version;  // "v1"
  std::string plural;   // "pods"
  bool namespaced = true;
  std::string kind;  // "Pod"

  // "v1" or "batch/v1": the apiVersion field of objects of this resource.
  std::string ApiVersion() const;
  // "pods" or "jobs.batch": the name RBAC and error messages use.
  std::string GroupResource() const;
  bool operator==(const GroupVersionResource& o) const {
    return group == o.group && version == o.version && plural == o.plural;
  }
};

// Resources the runtime and the controllers use.
namespace resources {
inline const GroupVersionResource kPods{"", "v1", "pods", true, "Pod"};
inline const GroupVersionResource kNodes{"", "v1", "nodes", false, "Node"};
inline const GroupVersionResource kNamespaces{"", "v1", "namespaces", false, "Namespace"};
inline const GroupVersionResource kEvents{"", "v1", "events", true, "Event"};
inline const GroupVersionResource kServices{"", "v1", "services", true, "Service"};
inline const GroupVersionResource kConfigMaps{"", "v1", "configmaps", true, "ConfigMap"};
inline const GroupVersionResource kSecrets{"", "v1", "secrets", true, "Secret"};
inline const GroupVersionResource kServiceAccounts{"", "v1", "serviceaccounts", true,
                                                   "ServiceAccount"};
inline const GroupVersionResource kJobs{"batch", "v1", "jobs", true, "Job"};
inline const GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases", true, "Lease"};
inline const GroupVersionResource kCustomResourceDefinitions{
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", false, "CustomResourceDefinition"};
inline const GroupVersionResource kTuningCampaigns{"tuning.paratune.dev", "v1alpha1",
                                                   "tuningcampaigns", true, "TuningCampaign"};
inline const GroupVersionResource kTrialRuns{"tuning.paratune.dev", "v1alpha1", "trialruns", true,
                                             "TrialRun"};
}  // namespace resources

// Namespace and name of one object ("" namespace for cluster-scoped objects).
struct ObjectKey {
  std::string ns;
  std::string name;
  // "ns/name", or "name" when ns is empty (client-go's MetaNamespaceKeyFunc).
  std::string String() const { return ns.empty() ? name : ns + "/" + name; }
  // The key of an object from its metadata.
  static ObjectKey Of(const Json& obj);
  // Parses String()'s form.
  static ObjectKey Parse(const std::string& key);
  auto operator<=>(const ObjectKey&) const = default;
};

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=db"
  std::string field_selector;  // "spec.nodeName=node-1"
  int64_t limit = 0;           // 0: everything in one page.
  std::string continue_token;  // from the previous page's ObjectList::continue_token.
  std::string resource_version;
};

// One page of a list. items are full objects with apiVersion and kind filled in.
struct ObjectList {
  std::vector<Json> items;
  std::string resource_version;  // of the collection, to start a watch from.
  std::string continue_token;    // "" on the last page.
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "" : start from "now" (synthetic ADDED for existing objects).
  int timeout_seconds = 0;       // server-side timeout; 0: the server's default.
  bool allow_bookmarks = true;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kAdded;
  Json object;  // for kBookmark only metadata.resourceVersion is meaningful.
};
const char* WatchEventTypeName(WatchEvent::Type t);

// Called on the watching thread for each event, in order. Return false to end the watch.
using WatchHandler = std::function<bool(const WatchEvent&)>;

enum class PatchType {
  kMerge,      // application/merge-patch+json (RFC 7386)
  kJson,       // application/json-patch+json (RFC 6902): `patch` is an array of operations.
  kStrategic,  // application/strategic-merge-patch+json (built-in kinds only).
  kApply,      // server-side apply: application/apply-patch+yaml; field_manager required.
};

struct WriteOptions {
  std::string field_manager;  // defaults to the client's user agent when empty.
  bool force = false;         // server-side apply: take ownership of conflicting fields.
  bool dry_run = false;
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Foreground", "Background" or "Orphan".
  std::optional<int64_t> grace_period_seconds;
  std::string precondition_uid;               // fail with kConflict if the uid differs.
  std::string precondition_resource_version;  // fail with kConflict if stale.
};

struct PodLogOptions {
  std::string container;   // "" : the pod's only container.
  int64_t tail_lines = 0;  // 0: whole log.
  int64_t limit_bytes = 0;
  bool previous = false;
};

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // The object, or kNotFound. `ns` is ignored for cluster-scoped resources.
  virtual Result<Json> Get(const GroupVersionResource& gvr, const std::string& ns,
                           const std::string& name) = 0;
  // One page of objects in `ns` ("" : all namespaces).
  virtual Result<ObjectList> List(const GroupVersionResource& gvr, const std::string& ns,
                                  const ListOptions& opts) = 0;
  // Creates `obj` (namespace from metadata.namespace, else `ns`); returns the stored object
  // (uid, resourceVersion, defaults). kAlreadyExists when the name is taken.
  virtual Result<Json> Create(const GroupVersionResource& gvr, const std::string& ns,
                              const Json& obj, const WriteOptions& opts = {}) = 0;
  // Replaces the object named by obj.metadata; its resourceVersion must be current or the call
  // fails with kConflict. Changes to status are ignored where the status subresource exists.
  virtual Result<Json> Update(const GroupVersionResource& gvr, const Json& obj,
                              const WriteOptions& opts = {}) = 0;
  // Replaces only the status (the /status subresource); same resourceVersion rule as Update.
  virtual Result<Json> UpdateStatus(const GroupVersionResource& gvr, const Json& obj,
                                    const WriteOptions& opts = {}) = 0;
  // Patches the object (or its `subresource`, e.g. "status"). For kApply, `patch` is the full
  // intent of field_manager. Returns the stored object.
  virtual Result<Json> Patch(const GroupVersionResource& gvr, const std::string& ns,
                             const std::string& name, PatchType type, const Json& patch,
                             const WriteOptions& opts = {},
                             const std::string& subresource = "") = 0;
  // Deletes the object. kNotFound when it does not exist.
  virtual Status Delete(const GroupVersionResource& gvr, const std::string& ns,
                        const std::string& name, const DeleteOptions& opts = {}) = 0;
  // Streams changes to `handler` until the server ends the watch (returns Ok: watch again from
  // the last resourceVersion seen), the handler returns false or `stop` is requested (Ok), or
  // an error: kGone when the resourceVersion is too old (relist), kUnavailable and others.
  // Blocks the calling thread; `stop` aborts the connection promptly.
  virtual Status Watch(const GroupVersionResource& gvr, const std::string& ns,
                       const WatchOptions& opts, const WatchHandler& handler,
                       std::stop_token stop) = 0;
  // The container log of a pod (kNotFound for an unknown pod, kInvalidArgument when the
  // container is ambiguous or not started).
  virtual Result<std::string> GetPodLog(const std::string& ns, const std::string& name,
                                        const PodLogOptions& opts = {}) = 0;
};

// Helpers on wire objects (tolerant of missing fields: they return "" / empty).
std::string NameOf(const Json& obj);
std::string NamespaceOf(const Json& obj);
std::string UidOf(const Json& obj);
std::string ResourceVersionOf(const Json& obj);
// The controller=true ownerReference, or nullptr when there is none.
const Json* ControllerOwnerOf(const Json& obj);
// An ownerReference (controller=true, blockOwnerDeletion=true) pointing at `owner`.
Json MakeControllerRef(const Json& owner);
// Status.message prefixed by the code name: "NotFound: pods \"x\" not found" (Status::ToString).
std::string StatusText(const Status& s);

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_KUBE_CLIENT_H_
