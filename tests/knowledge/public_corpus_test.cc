// The public failure-log corpus (tests/knowledge/data/public): well-formed, split before the
// signatures were written, and diagnosed on its held-out half at least as well as measured after
// the third collection (2026-11-25: 286 logs, 141 held-out; category 113/141 = 80.1%, retryable
// 129/141 = 91.5%; on the third collection's 42 held-out logs, never looked at case by case
// before they were measured, 28/42 = 66.7% and 34/42 = 81.0%). Issue 15 asks for 90% and 95%,
// not reached: see bench/RESULTS.md. A floor, not the target. Per-case misses are printed so a
// regression names its log.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "agents/knowledge/diagnosis_eval.h"
#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"

namespace paratune {
namespace {

const char kCorpus[] = PARATUNE_SOURCE_DIR "/tests/knowledge/data/public/cases.yaml";

TEST(PublicCorpusTest, EveryLogHasASourceAndTheSplitHasTwoHalves) {
  auto cases = LoadPublicCorpus(kCorpus);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  EXPECT_GE(cases->size(), 120u);
  std::set<std::string> urls;
  size_t heldout = 0;
  for (const auto& c : *cases) {
    EXPECT_EQ(c.url.rfind("https://github.com/", 0), 0u) << c.url;
    EXPECT_TRUE(urls.insert(c.url).second) << "duplicate " << c.url;
    EXPECT_FALSE(c.log.empty() && c.events.empty()) << c.url;
    EXPECT_LE(c.log.size(), 1200u) << c.url << ": quote only the error text";
    EXPECT_TRUE(c.retryable.has_value()) << c.url;
    heldout += c.split == "heldout";
  }
  EXPECT_GE(heldout, cases->size() / 3);
  EXPECT_LE(heldout, cases->size() * 2 / 3);
  // The split is a pure function of the URL.
  EXPECT_EQ(PublicCorpusSplit("https://github.com/a/b/issues/1"),
            PublicCorpusSplit("https://github.com/a/b/issues/1"));
}

TEST(PublicCorpusTest, HeldOutHalfHoldsItsMeasuredFloor) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  auto d = Diagnostician::Create(kb->get());
  ASSERT_TRUE(d.ok());
  auto cases = LoadPublicCorpus(kCorpus);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  struct Tally {
    int n = 0, category = 0, retryable = 0;
    std::string misses;
  } all, third;
  for (const auto& o : EvaluateCases(**d, *cases)) {
    if (o.c->split != "heldout") continue;
    for (Tally* t : {&all, &third}) {
      if (t == &third && o.c->collection != 3) continue;
      ++t->n;
      t->category += o.category_ok;
      t->retryable += o.retryable_ok;
      if (!o.category_ok || !o.retryable_ok) {
        t->misses += "\n  " + o.c->url + ": expected " + o.c->category + ", got " +
                     o.diagnosis.category + (o.diagnosis.retryable ? " (retryable)" : "");
      }
    }
  }
  ASSERT_GT(all.n, 0);
  EXPECT_GE(all.category * 1000, all.n * 801) << all.category << "/" << all.n << all.misses;
  EXPECT_GE(all.retryable * 1000, all.n * 914) << all.retryable << "/" << all.n << all.misses;
  ASSERT_GT(third.n, 0);
  EXPECT_GE(third.category * 1000, third.n * 666) << third.category << "/" << third.n;
  EXPECT_GE(third.retryable * 1000, third.n * 809) << third.retryable << "/" << third.n;
}

}  // namespace
}  // namespace paratune
