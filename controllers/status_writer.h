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

namespace paratune::controllers {

// UpdateStatus of `obj` (its status, on its resourceVersion); on kConflict, GETs the object and
// retries with obj["status"] on the fresh copy, up to `attempts` times. Returns the written
// object, kNotFound when it was deleted meanwhile, or the last error.
Result<kube::Json> WriteStatus(kube::KubeClient* client, const kube::GroupVersionResource& gvr,
                               const kube::Json& obj, int attempts = 4);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_STATUS_WRITER_H_
