// The public failure-log corpus (tests/knowledge/data/public): well-formed, split before the
// signatures were written, and diagnosed on its held-out half at least as well as last measured
// (see bench/RESULTS.md, "Diagnosis on public logs"). The third and fourth collections' held-out
// halves, never looked at case by case, are held to their own floors. Issue 15 asks for 90%
// category and 95% retryable, not reached. A floor, not the target. Per-case misses are printed
// so a regression names its log.
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
    int collection = 0;  // 0: every collection
    int n = 0, category = 0, retryable = 0;
    std::string misses;
  } all, third, fourth;
  third.collection = 3;
  fourth.collection = 4;
  for (const auto& o : EvaluateCases(**d, *cases)) {
    if (o.c->split != "heldout") continue;
    for (Tally* t : {&all, &third, &fourth}) {
      if (t->collection != 0 && o.c->collection != t->collection) continue;
      ++t->n;
      t->category += o.category_ok;
      t->retryable += o.retryable_ok;
      if (!o.category_ok || !o.retryable_ok) {
        t->misses += "\n  " + o.c->url + ": expected " + o.c->category + ", got " +
                     o.diagnosis.category + (o.diagnosis.retryable ? " (retryable)" : "");
      }
    }
  }
  // Per mille floors: category and retryable, as measured after the changes written from the
  // fourth collection's dev half (2026-11-25, 372 logs, 181 held-out: 140/181 and 158/181; third
  // collection 29/42 and 35/42; fourth 26/40 and 28/40, one retryable fewer than before them).
  const struct {
    const Tally* t;
    int category, retryable;
  } floors[] = {{&all, 773, 872}, {&third, 690, 833}, {&fourth, 650, 700}};
  for (const auto& f : floors) {
    ASSERT_GT(f.t->n, 0) << "collection " << f.t->collection;
    EXPECT_GE(f.t->category * 1000, f.t->n * f.category)
        << "collection " << f.t->collection << ": " << f.t->category << "/" << f.t->n
        << f.t->misses;
    EXPECT_GE(f.t->retryable * 1000, f.t->n * f.retryable)
        << "collection " << f.t->collection << ": " << f.t->retryable << "/" << f.t->n
        << f.t->misses;
  }
}

}  // namespace
}  // namespace paratune
