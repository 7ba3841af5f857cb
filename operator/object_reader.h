// ObjectReader: what a reconciler reads of one kind (controller-runtime's client.Reader over the
// cache): get by key, list by namespace, objects by owner UID or by a named index. Implemented by
// the Informer (one cache), by NamespacedReader (one informer per watched namespace, where RBAC
// grants nothing cluster-wide) and, in tests, by ClientReader (synchronous reads of a client, no
// threads). Objects are immutable shared snapshots. Implementations are thread-safe.
#ifndef PARATUNE_OPERATOR_OBJECT_READER_H_
#define PARATUNE_OPERATOR_OBJECT_READER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "operator/kube_client.h"

namespace paratune::kube {

using ObjectPtr = std::shared_ptr<const Json>;

// The index values of an object (e.g. "ns/trial-name" for a label); none: not indexed.
using IndexFunc = std::function<std::vector<std::string>(const Json& obj)>;
// Indexes objects by "<namespace>/<value of label `key`>" (objects without it are left out).
IndexFunc LabelIndex(const std::string& key);

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  // The object or nullptr.
  virtual ObjectPtr Get(const ObjectKey& key) const = 0;
  // Every object in `ns` ("" : all this reader sees), sorted by key.
  virtual std::vector<ObjectPtr> List(const std::string& ns = "") const = 0;
  // Objects that carry an ownerReference with this uid.
  virtual std::vector<ObjectPtr> ByOwner(const std::string& owner_uid) const = 0;
  // Adds a named index (a name already added is kept). Call before the reader is read from.
  virtual void AddIndex(const std::string& name, IndexFunc fn) = 0;
  // Objects whose index `name` has `value`; empty for an unknown index.
  virtual std::vector<ObjectPtr> ByIndex(const std::string& name,
                                         const std::string& value) const = 0;
  // This process has just written `obj` (the server's answer to a create, update or patch): Get
  // returns it until the cache holds that resourceVersion or a newer one (client-go's
  // MutationCache). A reconcile that runs before the watch delivers the write then reads what it
  // wrote, instead of writing it again or creating it twice. Default: nothing (no cache to lag).
  virtual void Wrote(const Json& obj) { (void)obj; }
};

// The UIDs of an object's ownerReferences.
std::vector<std::string> OwnerUidsOf(const Json& obj);

// Several readers, one per namespace (controller-runtime's multi-namespace cache): where the
// operator watches several namespaces and RBAC grants its rights per namespace, nothing is
// listed cluster-wide. Get and List(ns) go to that namespace's reader (nothing for others);
// List(""), ByOwner and ByIndex merge all, sorted by key. Borrows the readers.
class NamespacedReader final : public ObjectReader {
 public:
  // `per_namespace[i]` serves `namespaces[i]`.
  NamespacedReader(std::vector<ObjectReader*> per_namespace, std::vector<std::string> namespaces);
  ObjectPtr Get(const ObjectKey& key) const override;
  std::vector<ObjectPtr> List(const std::string& ns = "") const override;
  std::vector<ObjectPtr> ByOwner(const std::string& owner_uid) const override;
  void AddIndex(const std::string& name, IndexFunc fn) override;
  std::vector<ObjectPtr> ByIndex(const std::string& name, const std::string& value) const override;
  void Wrote(const Json& obj) override;

 private:
  ObjectReader* For(const std::string& ns) const;
  std::vector<ObjectPtr> Merge(
      const std::function<std::vector<ObjectPtr>(const ObjectReader&)>& read) const;

  std::vector<ObjectReader*> readers_;
  std::vector<std::string> namespaces_;
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_OBJECT_READER_H_
