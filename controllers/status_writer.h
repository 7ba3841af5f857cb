// Status writes that survive a busy object. A reconciler computes status from its cache; when
// someone else keeps updating the object (kubectl annotate, GitOps, another controller on
// metadata), the cached resourceVersion is stale on every attempt and a plain UpdateStatus
// conflicts forever (a livelock the reliability suite found: 1,126 conflicts, trials stuck in
// Running). WriteStatus re-reads the object from the API server on 409 and puts the same
// status on the fresh copy. Safe because each object's status has one writer per field group
// (the controller serializes each key; see the reconcilers).
#ifndef PARATUNE_CONTROLLERS_STATUS_WRITER_H_
#define PARATUNE_CONTROLLERS_STATUS_WRITER_H_

#include "operator/kube_client.h"
#include "operator/object_reader.h"

namespace paratune::controllers {

// The JSON merge patch (RFC 7386) that turns `before` into `after`: changed and new keys with
// their new value (objects recursively), keys that went away as null, arrays whole. Empty
// object when they are equal.
kube::Json MergePatchBetween(const kube::Json& before, const kube::Json& after);

// Writes obj["status"] as one merge patch of the /status subresource against `previous` (the
// status the caller read, usually from its cache): no request at all when nothing changed, and
// no resourceVersion precondition, so writers of other fields (kubectl annotate, GitOps) never
// make it conflict. Safe because each status field has one writer and a reconcile that read a
// stale cache is followed by another once the cache catches up (level-based). Returns the
// stored object (obj itself when nothing was sent), kNotFound when it was deleted, or the error.
// `reads_back` (the cache the caller reads the object from, may be null) is handed the stored
// object (ObjectReader::Wrote), so the next reconcile does not write the same status again.
Result<kube::Json> PatchStatus(kube::KubeClient* client, const kube::GroupVersionResource& gvr,
                               const kube::Json& obj, const kube::Json& previous,
                               kube::ObjectReader* reads_back = nullptr);

// UpdateStatus of `obj` (its status, on its resourceVersion); on kConflict, GETs the object and
// retries with obj["status"] on the fresh copy, up to `attempts` times. Returns the written
// object, kNotFound when it was deleted meanwhile, or the last error.
Result<kube::Json> WriteStatus(kube::KubeClient* client, const kube::GroupVersionResource& gvr,
                               const kube::Json& obj, int attempts = 4);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_STATUS_WRITER_H_
