// The knowledge base: embedded knowledge, user extensions and BM25 retrieval.
#include "agents/knowledge/knowledge_base.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agents/knowledge/bm25.h"

namespace paratune {
namespace {

TEST(Bm25Test, RanksThePassageThatSharesRareTermsFirst) {
  Bm25Index index;
  index.Add("tensor parallelism splits every GEMM across GPUs");
  index.Add("pipeline parallelism splits layers into stages; the bubble grows with stages");
  index.Add("the distributed optimizer shards optimizer states over data parallel ranks");
  auto hits = index.Search("pipeline bubble", 3);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].first, 1u);
  EXPECT_TRUE(index.Search("unrelated words entirely", 3).empty());
  EXPECT_EQ(index.Search("splits", 1).size(), 1u);
}

TEST(Bm25Test, TokenizerStemsPluralsAndDropsStopWords) {
  EXPECT_EQ(Tokenize("The timeouts of NCCL"), (std::vector<std::string>{"timeout", "nccl"}));
}

TEST(KnowledgeBaseTest, EmbeddedKnowledgeCoversTheRequiredTopics) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok()) << kb.status().ToString();
  EXPECT_GE((*kb)->documents().size(), 6u);
  for (const char* key : {"cuda-oom", "host-oom-killed", "megatron-heads-tp", "megatron-layers-pp",
                          "jax-mesh-product", "xla-hbm-exhausted", "nccl-watchdog-timeout",
                          "nccl-connection", "gpu-xid-fatal", "gpu-ecc", "image-pull",
                          "unschedulable", "job-deadline-exceeded", "segfault"}) {
    EXPECT_NE((*kb)->FindSignature(key), nullptr) << key;
  }
  // Every document cites its sources.
  for (const auto& d : (*kb)->documents()) {
    EXPECT_NE(d.text.find("## Sources"), std::string::npos) << d.name;
  }
}

TEST(KnowledgeBaseTest, SearchFindsTheRelevantSection) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  auto hits = (*kb)->Search("when to raise tensor parallelism across NVLink", 3);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].id, "docs/parallelism.md#tensor-parallelism-tp");
  hits = (*kb)->Search("MoE expert parallel all-to-all", 3);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].id.rfind("docs/moe.md", 0), 0u) << hits[0].id;
  hits = (*kb)->Search("TPU v5e HBM 16 GB", 5);
  bool found = false;
  for (const auto& h : hits) found = found || h.id == "docs/accelerators.md#google-tpu-v5e";
  EXPECT_TRUE(found);
}

TEST(KnowledgeBaseTest, PastOptimizationsBecomeSearchable) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  PastOptimization p;
  p.id = "llama3-8b-h100x8/trial-7";
  p.workload = "llama3-8b on 8x nvidia-h100-80gb";
  p.before = {{"tp", ParamValue::Int(2)}};
  p.after = {{"tp", ParamValue::Int(1)}};
  p.metric = "mfu";
  p.before_value = 0.41;
  p.after_value = 0.48;
  p.note = "lowering tp from 2 to 1 removed exposed all-reduce on Hopper";
  (*kb)->AddPastOptimization(p);
  auto hits = (*kb)->Search("llama3-8b h100 lowering tp all-reduce", 2);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].id, "past:llama3-8b-h100x8/trial-7");
  EXPECT_EQ(hits[0].kind, "past-optimization");
}

TEST(KnowledgeBaseTest, BadSignaturesAreRejectedNamingTheField) {
  KnowledgeBase kb;
  Status st = kb.AddSignatures("custom.yaml",
                               "signatures:\n- key: x\n  category: Foo\n  "
                               "contains: [a]\n");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("custom.yaml: signatures[0].category"), std::string::npos)
      << st.message();
  st = kb.AddSignatures("re.yaml", "- {key: y, category: Unknown, regex: ['(unclosed']}\n");
  EXPECT_NE(st.message().find("re.yaml: signatures[0].regex[0]"), std::string::npos)
      << st.message();
  st = kb.AddSignatures("empty.yaml", "- {key: z, category: Unknown}\n");
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(kb.signatures().empty());  // all-or-nothing
  EXPECT_FALSE(kb.AddDocument("blank.md", "  \n").ok());
}

TEST(KnowledgeBaseTest, DirectoryAddsDocumentsAndReplacesSignaturesByKey) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "paratune_kb_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "sigs");
  std::ofstream(dir / "site.md") << "# Site notes\n\n## Cluster fabric\nOur RoCE fabric drops "
                                    "packets above 85 percent load; keep ep within a node.\n";
  std::ofstream(dir / "past.yaml") << "pastOptimizations:\n- {id: c1/t3, workload: mixtral-8x7b "
                                      "h100, before: {ep: 8}, after: {ep: 4}, metric: mfu, "
                                      "beforeValue: 0.31, afterValue: 0.36, note: halving ep kept "
                                      "all-to-all inside NVLink}\n";
  std::ofstream(dir / "sigs" / "oom.json")
      << R"({"signatures": [{"key": "cuda-oom", "category": "CudaOOM", "contains": ["OOM!"],
             "confidence": 42}]})";
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  size_t n = (*kb)->signatures().size();
  ASSERT_TRUE((*kb)->LoadDirectory(dir.string()).ok());
  EXPECT_EQ((*kb)->signatures().size(), n);
  EXPECT_EQ((*kb)->FindSignature("cuda-oom")->confidence, 42);
  auto hits = (*kb)->Search("RoCE fabric packets", 1);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].title, "Site notes / Cluster fabric");
  ASSERT_EQ((*kb)->past_optimizations().size(), 1u);
  EXPECT_EQ(GetInt((*kb)->past_optimizations()[0].after, "ep", 0), 4);
  EXPECT_EQ((*kb)->Search("mixtral all-to-all NVLink ep", 1)[0].id, "past:c1/t3");
  EXPECT_EQ((*kb)->LoadDirectory((dir / "missing").string()).code(), StatusCode::kNotFound);
  Status bad =
      (*kb)->AddPastOptimizations("p.yaml", "pastOptimizations: [{id: x, before: {tq: 1}}]");
  EXPECT_NE(bad.message().find("p.yaml: pastOptimizations[0].before"), std::string::npos)
      << bad.message();
  fs::remove_all(dir);
}

// The operator mounts each knowledge ConfigMap at $PARATUNE_KNOWLEDGE_DIR/<name> (Helm value
// knowledgeConfigMaps). The kubelet lays a ConfigMap volume out as `<key> -> ..data/<key>`,
// `..data -> ..<timestamp>`, the files in `..<timestamp>/`, with an older timestamp directory
// lingering during an update: each key must be loaded once, with its current content.
TEST(KnowledgeBaseTest, DirectoryReadsConfigMapVolumesOnceByKey) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / "paratune_kb_configmap_test";
  fs::remove_all(root);
  auto mount = [&](const std::string& name, const std::string& key, const std::string& text) {
    fs::path cm = root / name;
    fs::create_directories(cm / "..2026_11_21_08_00_00.000000001");
    fs::create_directories(cm / "..2026_11_20_07_00_00.000000001");
    std::ofstream(cm / "..2026_11_21_08_00_00.000000001" / key) << text;
    std::ofstream(cm / "..2026_11_20_07_00_00.000000001" / key) << "# Stale\n\nold text\n";
    fs::create_directory_symlink("..2026_11_21_08_00_00.000000001", cm / "..data");
    fs::create_symlink(fs::path("..data") / key, cm / key);
  };
  mount("site-runbook", "runbook.md",
        "# Site runbook\n\n## Fabric\nOur InfiniBand rails flap above 85 percent load.\n");
  mount("site-signatures", "sigs.yaml",
        "signatures:\n- {key: site-rail-flap, category: NodeFault, contains: [\"rail flap\"]}\n");
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  const size_t docs = (*kb)->documents().size(), sigs = (*kb)->signatures().size();
  Status st = (*kb)->LoadDirectory(root.string());
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ((*kb)->documents().size(), docs + 1);
  EXPECT_EQ((*kb)->documents().back().name, (root / "site-runbook" / "runbook.md").string());
  EXPECT_EQ((*kb)->documents().back().title, "Site runbook");
  EXPECT_EQ((*kb)->signatures().size(), sigs + 1);
  ASSERT_NE((*kb)->FindSignature("site-rail-flap"), nullptr);
  for (const auto& d : (*kb)->documents()) {
    EXPECT_EQ(d.name.find(".."), std::string::npos) << d.name;  // no timestamp dir, no stale copy
  }
  auto hits = (*kb)->Search("InfiniBand rails flap", 1);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].title, "Site runbook / Fabric");
  fs::remove_all(root);
}

}  // namespace
}  // namespace paratune
