#include "controllers/message_pool_store.h"

#include <algorithm>
#include <vector>

#include "controllers/job_renderer.h"

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

constexpr const char* kDataKey = "pool.json";
constexpr const char* kShardsAnnotation = "tuning.paratune.dev/pool-shards";
constexpr const char* kGenerationAnnotation = "tuning.paratune.dev/pool-generation";
constexpr const char* kPoolOfLabel = "tuning.paratune.dev/pool-of";

std::string ShardName(const std::string& campaign, int64_t generation, size_t index) {
  return campaign + "-pool-g" + std::to_string(generation) + "-" + std::to_string(index);
}

Json PoolConfigMap(const Json& campaign, const std::string& name, const std::string& chunk) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", kube::NamespaceOf(campaign)},
            {"labels",
             {{kCampaignLabel, kube::NameOf(campaign)}, {kPoolOfLabel, kube::NameOf(campaign)}}},
            {"annotations", Json::object()},
            {"ownerReferences", Json::array({kube::MakeControllerRef(campaign)})}}},
          {"data", {{kDataKey, chunk}}}};
}

int64_t AnnotationInt(const Json& obj, const char* key) {
  const Json& a = obj.value("metadata", Json::object()).value("annotations", Json::object());
  if (!a.is_object() || !a.contains(key) || !a[key].is_string()) return 0;
  try {
    return std::stoll(a[key].get<std::string>());
  } catch (const std::exception&) {
    return -1;
  }
}

std::string DataOf(const Json& cm) {
  const Json& data = cm.value("data", Json::object());
  return data.is_object() && data.contains(kDataKey) && data[kDataKey].is_string()
             ? data[kDataKey].get<std::string>()
             : std::string();
}

void Truncate(Json* obj, const char* key, size_t keep) {
  if (!obj->is_object() || !obj->contains(key) || !(*obj)[key].is_string()) return;
  std::string s = (*obj)[key].get<std::string>();
  if (s.size() <= keep) return;
  (*obj)[key] = "[compacted] ..." + s.substr(s.size() - keep);
}

// The opaque version: "<resourceVersion>/<generation>/<shards>" of the head ConfigMap.
std::string EncodeVersion(const std::string& rv, int64_t generation, int64_t shards) {
  return rv + "/" + std::to_string(generation) + "/" + std::to_string(shards);
}

bool DecodeVersion(const std::string& v, std::string* rv, int64_t* generation, int64_t* shards) {
  size_t a = v.find('/');
  size_t b = a == std::string::npos ? a : v.find('/', a + 1);
  if (b == std::string::npos) return false;
  try {
    *rv = v.substr(0, a);
    *generation = std::stoll(v.substr(a + 1, b - a - 1));
    *shards = std::stoll(v.substr(b + 1));
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

size_t DumpSize(const Json& j) { return j.dump(-1, ' ', true).size(); }

}  // namespace

bool CompactPoolJson(Json* pool, size_t max_bytes) {
  if (DumpSize(*pool) <= max_bytes) return true;
  Json& exchanges = (*pool)["llmExchanges"];
  Json& trials = (*pool)["trials"];
  // Newest entries keep their full text: the agents read recent history most.
  constexpr size_t kKeepRecent = 10;
  for (size_t keep : {size_t{4000}, size_t{1000}, size_t{200}}) {
    if (exchanges.is_array() && exchanges.size() > kKeepRecent) {
      for (size_t i = 0; i + kKeepRecent < exchanges.size(); ++i) {
        Truncate(&exchanges[i], "prompt", keep);
        Truncate(&exchanges[i], "reply", keep);
      }
    }
    if (trials.is_array()) {
      for (auto& t : trials) {
        if (t.is_object() && t.contains("failure")) Truncate(&t["failure"], "evidence", keep);
      }
    }
    if (DumpSize(*pool) <= max_bytes) return true;
  }
  while (exchanges.is_array() && !exchanges.empty() && DumpSize(*pool) > max_bytes) {
    exchanges.erase(exchanges.begin());
  }
  return DumpSize(*pool) <= max_bytes;
}

ConfigMapPoolStore::ConfigMapPoolStore(kube::KubeClient* client, ConfigMapPoolStoreOptions opts)
    : client_(client), opts_(opts) {}

Result<LoadedPool> ConfigMapPoolStore::Load(const Json& campaign) {
  const std::string ns = kube::NamespaceOf(campaign);
  const std::string name = kube::NameOf(campaign);
  auto head = client_->Get(res::kConfigMaps, ns, HeadName(name));
  if (!head.ok()) {
    if (head.status().code() == StatusCode::kNotFound) return LoadedPool{};
    return head.status();
  }
  std::string text = DataOf(*head);
  const int64_t shards = AnnotationInt(*head, kShardsAnnotation);
  const int64_t generation = AnnotationInt(*head, kGenerationAnnotation);
  if (shards < 0 || generation < 0 || static_cast<size_t>(shards) > opts_.max_shards) {
    return Status::Internal("configmap " + HeadName(name) + ": bad shard annotations");
  }
  for (int64_t i = 1; i < shards; ++i) {
    auto shard = client_->Get(res::kConfigMaps, ns, ShardName(name, generation, i));
    if (!shard.ok()) return shard.status().WithPrefix("message pool shard");
    text += DataOf(*shard);
  }
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::Internal("configmap " + HeadName(name) + ": corrupt pool");
  auto pool = MessagePool::FromJson(j);
  if (!pool.ok()) return pool.status().WithPrefix("configmap " + HeadName(name));
  return LoadedPool{std::move(*pool),
                    EncodeVersion(kube::ResourceVersionOf(*head), generation, shards)};
}

Status ConfigMapPoolStore::WriteShard(const Json& campaign, const std::string& name,
                                      int64_t generation, const std::string& chunk) {
  Json cm = PoolConfigMap(campaign, name, chunk);
  cm["metadata"]["annotations"][kGenerationAnnotation] = std::to_string(generation);
  auto created = client_->Create(res::kConfigMaps, kube::NamespaceOf(campaign), cm);
  if (created.ok()) return Status::Ok();
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  // Left over from a save that crashed before its head was written: overwrite it.
  auto existing = client_->Get(res::kConfigMaps, kube::NamespaceOf(campaign), name);
  if (!existing.ok()) return existing.status();
  cm["metadata"]["resourceVersion"] = kube::ResourceVersionOf(*existing);
  return client_->Update(res::kConfigMaps, cm).status();
}

void ConfigMapPoolStore::DeleteOldShards(const Json& campaign, int64_t keep_generation) {
  kube::ListOptions opts;
  opts.label_selector = std::string(kPoolOfLabel) + "=" + kube::NameOf(campaign);
  auto list = client_->List(res::kConfigMaps, kube::NamespaceOf(campaign), opts);
  if (!list.ok()) return;  // best effort: the next save tries again
  const std::string head = HeadName(kube::NameOf(campaign));
  for (const auto& cm : list->items) {
    if (kube::NameOf(cm) == head) continue;
    if (AnnotationInt(cm, kGenerationAnnotation) == keep_generation) continue;
    (void)client_->Delete(res::kConfigMaps, kube::NamespaceOf(cm), kube::NameOf(cm));
  }
}

Result<std::string> ConfigMapPoolStore::Save(const Json& campaign, const MessagePool& pool,
                                             const std::string& version) {
  Json j = pool.ToJson();
  const size_t limit = opts_.shard_bytes * opts_.max_shards;
  if (!CompactPoolJson(&j, limit)) {
    return Status::Exhausted("message pool of " + kube::NameOf(campaign) + " exceeds " +
                             std::to_string(limit) + " bytes even after compaction");
  }
  // ASCII only (non-ASCII escaped), so shards can be cut at any byte.
  const std::string text = j.dump(-1, ' ', true);
  std::vector<std::string> chunks;
  for (size_t off = 0; off < text.size() || chunks.empty(); off += opts_.shard_bytes) {
    chunks.push_back(text.substr(off, opts_.shard_bytes));
  }
  const std::string name = kube::NameOf(campaign);
  const std::string ns = kube::NamespaceOf(campaign);
  std::string rv;
  int64_t generation = 0, old_shards = 0;
  if (!version.empty()) {
    if (!DecodeVersion(version, &rv, &generation, &old_shards)) {
      return Status::Invalid("message pool version \"" + version + "\" is malformed");
    }
    ++generation;
  }
  for (size_t i = 1; i < chunks.size(); ++i) {
    PARATUNE_RETURN_IF_ERROR(
        WriteShard(campaign, ShardName(name, generation, i), generation, chunks[i]));
  }
  Json head = PoolConfigMap(campaign, HeadName(name), chunks[0]);
  head["metadata"]["annotations"][kShardsAnnotation] = std::to_string(chunks.size());
  head["metadata"]["annotations"][kGenerationAnnotation] = std::to_string(generation);
  Result<Json> written = Status::Internal("unset");
  if (version.empty()) {
    written = client_->Create(res::kConfigMaps, ns, head);
    if (!written.ok() && written.status().code() == StatusCode::kAlreadyExists) {
      return Status::Conflict("message pool of " + name + " was created concurrently");
    }
  } else {
    head["metadata"]["resourceVersion"] = rv;
    written = client_->Update(res::kConfigMaps, head);
  }
  if (!written.ok()) return written.status();
  if (old_shards > 1) DeleteOldShards(campaign, generation);
  return EncodeVersion(kube::ResourceVersionOf(*written), generation,
                       static_cast<int64_t>(chunks.size()));
}

}  // namespace paratune::controllers
