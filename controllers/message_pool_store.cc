#include "controllers/message_pool_store.h"

#include <algorithm>
#include <chrono>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
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

constexpr const char* kChunksAnnotation = "tuning.paratune.dev/pool-chunks";
constexpr const char* kPoolCompacted = "PoolCompacted";

// The opaque version: the head's resourceVersion, the chunks it lists, and whether it is a pool
// of the earlier "-pool-g<gen>-<i>" layout (whose shards the next save deletes).
struct Version {
  std::string rv;
  std::vector<std::string> chunks;
  bool legacy = false;
};

std::string EncodeVersion(const Version& v) {
  return Json{{"rv", v.rv}, {"chunks", v.chunks}, {"legacy", v.legacy}}.dump();
}

bool DecodeVersion(const std::string& text, Version* v) {
  Json j = Json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("rv") || !j["rv"].is_string()) return false;
  v->rv = j["rv"].get<std::string>();
  v->legacy = j.value("legacy", false);
  for (const auto& c : j.value("chunks", Json::array())) {
    if (!c.is_string()) return false;
    v->chunks.push_back(c.get<std::string>());
  }
  return true;
}

std::vector<std::string> SplitNames(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

std::optional<std::string> Annotation(const Json& obj, const char* key) {
  const Json a = obj.value("metadata", Json::object()).value("annotations", Json::object());
  if (!a.is_object()) return std::nullopt;
  auto it = a.find(key);
  if (it == a.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

// A byte-bounded LRU of immutable chunks (by name), of the heads this process wrote and of the
// pools it holds (by campaign UID), plus the last compaction level per campaign.
struct ConfigMapPoolStore::Cache {
  struct Head {
    Version version;
    std::string data;
  };
  struct Entry {
    std::string data;  // a chunk's text, or a head's data
    Version version;   // heads only
    std::list<std::string>::iterator lru;
  };
  std::mutex mu;
  std::map<std::string, Entry> entries;  // "c/<name>", "h/<uid>" or "p/<uid>" (a held pool)
  std::list<std::string> lru;            // most recent first
  size_t bytes = 0;
  size_t limit = 0;
  std::map<std::string, PoolCompaction> compaction;  // by campaign UID, bounded below

  void EraseLocked(const std::string& key) {
    auto it = entries.find(key);
    if (it == entries.end()) return;
    bytes -= it->second.data.size();
    lru.erase(it->second.lru);
    entries.erase(it);
  }
  // False when `data` alone exceeds the limit (nothing is kept).
  bool Put(const std::string& key, std::string data, Version version = {}) {
    std::lock_guard lock(mu);
    EraseLocked(key);
    if (data.size() > limit) return false;
    lru.push_front(key);
    bytes += data.size();
    entries[key] = Entry{std::move(data), std::move(version), lru.begin()};
    while (bytes > limit && !lru.empty()) EraseLocked(lru.back());
    return true;
  }
  bool Find(const std::string& key, std::string* data, Version* version = nullptr) {
    std::lock_guard lock(mu);
    auto it = entries.find(key);
    if (it == entries.end()) return false;
    lru.splice(lru.begin(), lru, it->second.lru);
    *data = it->second.data;
    if (version != nullptr) *version = it->second.version;
    return true;
  }
  void Forget(const std::string& key) {
    std::lock_guard lock(mu);
    EraseLocked(key);
  }
  void SetCompaction(const std::string& uid, PoolCompaction level) {
    std::lock_guard lock(mu);
    if (compaction.size() > 100000) compaction.clear();  // a bound; the next save refills
    compaction[uid] = level;
  }
  PoolCompaction GetCompaction(const std::string& uid) {
    std::lock_guard lock(mu);
    auto it = compaction.find(uid);
    return it == compaction.end() ? PoolCompaction::kNone : it->second;
  }
};

ConfigMapPoolStore::ConfigMapPoolStore(kube::KubeClient* client, ConfigMapPoolStoreOptions opts)
    : client_(client), opts_(opts), cache_(std::make_unique<Cache>()) {
  cache_->limit = opts_.cache_bytes;
}

ConfigMapPoolStore::~ConfigMapPoolStore() = default;

Result<Json> ConfigMapPoolStore::Read(const std::string& ns, const std::string& name) {
  if (opts_.configmaps != nullptr) return opts_.configmaps->Get(ns, name);
  return client_->Get(res::kConfigMaps, ns, name);
}

Result<std::string> ConfigMapPoolStore::ReadChunk(const std::string& ns, const std::string& name) {
  std::string data;
  if (cache_->Find("c/" + name, &data)) return data;
  auto cm = Read(ns, name);
  if (!cm.ok()) return cm.status().WithPrefix("message pool chunk " + name);
  data = DataOf(*cm);
  if (name.size() < 16 || name.substr(name.size() - 16) != ChunkHash(data)) {
    return Status::Internal("configmap " + name + ": pool chunk does not match its name");
  }
  cache_->Put("c/" + name, data);
  return data;
}

namespace {
Result<LoadedPool> ParsePool(const std::string& text, const std::string& head,
                             const std::string& version) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::Internal("configmap " + head + ": corrupt pool");
  auto pool = MessagePool::FromJson(j);
  if (!pool.ok()) return pool.status().WithPrefix("configmap " + head);
  return LoadedPool{std::move(*pool), version};
}
}  // namespace

Result<LoadedPool> ConfigMapPoolStore::Load(const Json& campaign) {
  const std::string ns = kube::NamespaceOf(campaign);
  const std::string name = kube::NameOf(campaign);
  Version v;
  std::string tail;
  if (opts_.cache_heads && cache_->Find("p/" + kube::UidOf(campaign), &tail)) {
    return ParsePool(tail, HeadName(name) + " (held, not written yet)", "");
  }
  const bool cached = opts_.cache_heads && cache_->Find("h/" + kube::UidOf(campaign), &tail, &v);
  if (!cached) {
    auto head = Read(ns, HeadName(name));
    if (!head.ok()) {
      if (head.status().code() == StatusCode::kNotFound) return LoadedPool{};
      return head.status();
    }
    v.rv = kube::ResourceVersionOf(*head);
    tail = DataOf(*head);
    const std::optional<std::string> list = Annotation(*head, kChunksAnnotation);
    if (!list) {  // the earlier layout: the head holds the first shard
      v.legacy = true;
      const int64_t shards = AnnotationInt(*head, kShardsAnnotation);
      const int64_t generation = AnnotationInt(*head, kGenerationAnnotation);
      if (shards < 0 || generation < 0) {
        return Status::Internal("configmap " + HeadName(name) + ": bad shard annotations");
      }
      for (int64_t i = 1; i < shards; ++i) {
        auto shard = Read(ns, ShardName(name, generation, i));
        if (!shard.ok()) return shard.status().WithPrefix("message pool shard");
        tail += DataOf(*shard);
      }
      return ParsePool(tail, HeadName(name), EncodeVersion(v));
    }
    v.chunks = SplitNames(*list);
  }
  std::string text;
  for (const auto& chunk : v.chunks) {
    auto data = ReadChunk(ns, chunk);
    if (!data.ok()) return data.status();
    text += *data;
  }
  text += tail;
  return ParsePool(text, HeadName(name), EncodeVersion(v));
}

Status ConfigMapPoolStore::WriteChunk(const Json& campaign, const std::string& name,
                                      const std::string& data) {
  auto created = client_->Create(res::kConfigMaps, kube::NamespaceOf(campaign),
                                 PoolConfigMap(campaign, name, data));
  // Named by its content: one that exists already (a save that crashed) holds the same text.
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  cache_->Put("c/" + name, data);
  return Status::Ok();
}

// Moving off the earlier layout: its "-pool-g<gen>-<i>" shards go. Best effort: a ConfigMap left
// behind is garbage-collected with the campaign.
void ConfigMapPoolStore::DeleteChunks(const Json& campaign, const std::vector<std::string>& keep,
                                      bool legacy) {
  if (!legacy) return;
  const std::set<std::string> wanted(keep.begin(), keep.end());
  kube::ListOptions opts;
  opts.label_selector = std::string(kPoolOfLabel) + "=" + kube::NameOf(campaign);
  auto list = client_->List(res::kConfigMaps, kube::NamespaceOf(campaign), opts);
  if (!list.ok()) return;
  const std::string head = HeadName(kube::NameOf(campaign));
  for (const auto& cm : list->items) {
    if (kube::NameOf(cm) == head || wanted.count(kube::NameOf(cm)) > 0) continue;
    (void)client_->Delete(res::kConfigMaps, kube::NamespaceOf(cm), kube::NameOf(cm));
  }
}

namespace {

std::string PoolFullMessage(size_t limit) {
  return "the message pool exceeds " + std::to_string(limit) +
         " bytes even after compaction: no further trials are recorded";
}

}  // namespace

std::optional<CampaignCondition> ConfigMapPoolStore::PoolCondition(const Json& campaign) const {
  const PoolCompaction level = cache_->GetCompaction(kube::UidOf(campaign));
  if (level == PoolCompaction::kNone) return std::nullopt;
  const size_t limit = opts_.shard_bytes * opts_.max_shards;
  if (level == PoolCompaction::kTooLarge) {
    return CampaignCondition{kPoolCompacted, false, "PoolFull", PoolFullMessage(limit)};
  }
  const bool records = level == PoolCompaction::kRecords;
  return CampaignCondition{
      kPoolCompacted, true, records ? "RecordsCompacted" : "TextShortened",
      "the message pool outgrew " + std::to_string(limit) + " bytes: " +
          (records ? "older trials keep their configuration and results, not their prose"
                   : "older LLM exchanges and failure evidence were shortened")};
}

Result<std::string> ConfigMapPoolStore::Save(const Json& campaign, const MessagePool& pool,
                                             const std::string& version) {
  const std::string uid = kube::UidOf(campaign);
  Json j = pool.ToJson();
  const size_t limit = opts_.shard_bytes * opts_.max_shards;
  const PoolCompaction level = CompactPoolJsonLevel(&j, limit);
  if (level == PoolCompaction::kTooLarge) {
    // Refused, not truncated: PoolCondition says so, and retrying cannot make the pool smaller.
    cache_->SetCompaction(uid, level);
    return Status::Invalid("message pool of " + kube::NameOf(campaign) + ": " +
                           PoolFullMessage(limit))
        .AsTerminal();
  }
  Version prev;
  if (!version.empty() && !DecodeVersion(version, &prev)) {
    return Status::Invalid("message pool version \"" + version + "\" is malformed");
  }
  // ASCII only (non-ASCII escaped), so chunks can be cut at any byte.
  std::vector<std::string> chunks = ChunkPoolText(j.dump(-1, ' ', true), opts_.shard_bytes);
  std::string tail = std::move(chunks.back());
  chunks.pop_back();
  const std::string name = kube::NameOf(campaign);
  const std::set<std::string> existing(prev.chunks.begin(), prev.chunks.end());
  Version next;
  for (const auto& chunk : chunks) {
    next.chunks.push_back(name + "-pool-" + ChunkHash(chunk));
    if (existing.count(next.chunks.back()) > 0) continue;
    Status s = WriteChunk(campaign, next.chunks.back(), chunk);
    if (!s.ok()) {
      cache_->Forget("h/" + uid);
      return s;
    }
  }
  Json head = PoolConfigMap(campaign, HeadName(name), tail);
  head["metadata"]["annotations"][kChunksAnnotation] = JoinNames(next.chunks);
  Result<Json> written = Status::Internal("unset");
  if (version.empty()) {
    written = client_->Create(res::kConfigMaps, kube::NamespaceOf(campaign), head);
    if (!written.ok() && written.status().code() == StatusCode::kAlreadyExists) {
      written = Status::Conflict("message pool of " + name + " was created concurrently");
    }
  } else {
    head["metadata"]["resourceVersion"] = prev.rv;
    written = client_->Update(res::kConfigMaps, head);
  }
  if (!written.ok()) {
    cache_->Forget("h/" + uid);
    // Another writer's pool exists: the next Load reads it, not the one held here.
    if (written.status().code() == StatusCode::kConflict) cache_->Forget("p/" + uid);
    return written.status();
  }
  cache_->Forget("p/" + uid);
  next.rv = kube::ResourceVersionOf(*written);
  if (opts_.cache_heads) cache_->Put("h/" + uid, tail, next);
  cache_->SetCompaction(uid, level);
  const std::set<std::string> kept(next.chunks.begin(), next.chunks.end());
  for (const auto& old : prev.chunks) {
    if (kept.count(old) == 0) {
      (void)client_->Delete(res::kConfigMaps, kube::NamespaceOf(campaign), old);
      cache_->Forget("c/" + old);
    }
  }
  DeleteChunks(campaign, next.chunks, prev.legacy);
  return EncodeVersion(next);
}

bool ConfigMapPoolStore::Hold(const Json& campaign, const MessagePool& pool,
                              const std::string& version) {
  if (!opts_.cache_heads || !version.empty()) return false;
  return cache_->Put("p/" + kube::UidOf(campaign), pool.ToJson().dump());
}

}  // namespace paratune::controllers
