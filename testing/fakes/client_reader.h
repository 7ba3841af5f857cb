// ClientReader: an ObjectReader that reads a KubeClient (in tests, the FakeKubeClient) directly
// at every call: what a reconciler reads is what was last written, with no informer thread and
// no waiting for a cache to catch up, so reconciler tests run deterministically. Optionally only
// objects matching a label selector, like an Informer's. Thread-safe if the client is.
#ifndef PARATUNE_TESTING_FAKES_CLIENT_READER_H_
#define PARATUNE_TESTING_FAKES_CLIENT_READER_H_

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "operator/kube_client.h"
#include "operator/object_reader.h"

namespace paratune::kube::testing {

class ClientReader final : public ObjectReader {
 public:
  // Borrows `client`.
  ClientReader(KubeClient* client, GroupVersionResource gvr, std::string label_selector = "");
  ObjectPtr Get(const ObjectKey& key) const override;
  std::vector<ObjectPtr> List(const std::string& ns = "") const override;
  std::vector<ObjectPtr> ByOwner(const std::string& owner_uid) const override;
  void AddIndex(const std::string& name, IndexFunc fn) override;
  std::vector<ObjectPtr> ByIndex(const std::string& name, const std::string& value) const override;

 private:
  KubeClient* client_;
  GroupVersionResource gvr_;
  std::string label_selector_;
  mutable std::mutex mu_;
  std::map<std::string, IndexFunc> indexes_;  // guarded by mu_
};

}  // namespace paratune::kube::testing

#endif  // PARATUNE_TESTING_FAKES_CLIENT_READER_H_
