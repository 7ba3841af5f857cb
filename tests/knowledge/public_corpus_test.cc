// The public failure-log corpus (agents/knowledge/data/failures/public-dev.yaml, the dev half,
// shipped; tests/knowledge/data/public/heldout.yaml): well-formed, each case in its half's file,
// and diagnosed on the held-out half above a fixed regression floor (measured figures:
// bench/RESULTS.md, "Diagnosis on public logs"). The third to eighth collections' held-out halves,
// never looked at case by case, are held to their own floors. Issue 15 asks for 90% category and
// 95% retryable, not reached (two blind labellers of the same excerpts agree on 90.3% and 88.9%). A
// floor, not the target. The first two collections' misses are printed so a regression names its
// log; the later ones are only counted.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"
#include "testing/eval/diagnosis_eval.h"

namespace paratune {
namespace {

const std::vector<std::string> kCorpus = PublicCorpusPaths(PARATUNE_SOURCE_DIR);

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
  // Each file holds one half: the dev half ships (known failures), the held-out half must not.
  for (const auto& path : kCorpus) {
    auto half = LoadPublicCorpus({path});
    ASSERT_TRUE(half.ok()) << half.status().ToString();
    const std::string expected = path.find("/agents/") != std::string::npos ? "dev" : "heldout";
    for (const auto& c : *half) EXPECT_EQ(c.split, expected) << c.url << " is in " << path;
  }
  // The split is a pure function of the URL.
  EXPECT_EQ(PublicCorpusSplit("https://github.com/a/b/issues/1"),
            PublicCorpusSplit("https://github.com/a/b/issues/1"));
}

// The second, blind labelling (bench: "Two labellers") covers the corpus exactly: a new
// collection needs its second labels before the bench's agreement figures mean anything.
TEST(PublicCorpusTest, EveryLogHasASecondBlindLabelAndNothingElseHasOne) {
  auto cases = LoadPublicCorpus(kCorpus);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  auto second = LoadSecondLabelling(SecondLabellingPath(PARATUNE_SOURCE_DIR));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  std::set<std::string> urls;
  for (const auto& c : *cases) {
    urls.insert(c.url);
    EXPECT_EQ(second->count(c.url), 1u) << c.url << " has no second label";
  }
  for (const auto& [url, label] : *second) {
    EXPECT_EQ(urls.count(url), 1u) << url << " is labelled but not in the corpus";
  }
  // The two labellings are independent: were one a copy of the other, agreement would be total.
  int same = 0;
  for (const auto& c : *cases)
    same += second->count(c.url) && second->at(c.url).category == c.category;
  EXPECT_LT(same, static_cast<int>(cases->size()));
}

TEST(PublicCorpusTest, ASecondLabellingWithABadFieldIsRefusedByName) {
  const std::string path = testing::TempDir() + "/second-labelling.yaml";
  const auto refused = [&](const std::string& text) {
    std::ofstream(path) << text;
    auto r = LoadSecondLabelling(path);
    std::remove(path.c_str());
    return r.ok() ? std::string("accepted") : r.status().ToString();
  };
  EXPECT_NE(refused("labels:\n- {url: \"u\", category: Oom, retryable: false}\n")
                .find("labels[0].category"),
            std::string::npos);
  EXPECT_NE(refused("labels:\n- {url: \"u\", category: Timeout}\n").find("labels[0].retryable"),
            std::string::npos);
  EXPECT_NE(refused("labels:\n- {url: \"u\", category: Timeout, retryable: true}\n"
                    "- {url: \"u\", category: Unknown, retryable: false}\n")
                .find("labelled twice"),
            std::string::npos);
  EXPECT_NE(
      refused("labels:\n- {url: \"u\", category: Timeout, retryable: true, why: x}\n").find("why"),
      std::string::npos);
  EXPECT_EQ(refused("labels:\n- {url: \"u\", category: Timeout, retryable: true}\n"), "accepted");
}

TEST(PublicCorpusTest, HeldOutHalfStaysAboveItsFixedFloor) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  auto d = Diagnostician::Create(kb->get());
  ASSERT_TRUE(d.ok());
  auto cases = LoadPublicCorpus(kCorpus);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  struct Tally {
    int collection = 0;  // 0: every collection
    int n = 0, category = 0, retryable = 0, unnamed_misses = 0;
    std::string misses;
  } all, third, fourth, fifth, sixth, seventh, eighth, ninth;
  third.collection = 3;
  fourth.collection = 4;
  fifth.collection = 5;
  sixth.collection = 6;
  seventh.collection = 7;
  eighth.collection = 8;
  ninth.collection = 9;
  for (const auto& o : EvaluateCases(**d, *cases)) {
    if (o.c->split != "heldout") continue;
    for (Tally* t : {&all, &third, &fourth, &fifth, &sixth, &seventh, &eighth, &ninth}) {
      if (t->collection != 0 && o.c->collection != t->collection) continue;
      ++t->n;
      t->category += o.category_ok;
      t->retryable += o.retryable_ok;
      // The third and later collections' held-out misses are counted, never named: nobody
      // may read them case by case, or that half stops measuring generalization.
      if ((!o.category_ok || !o.retryable_ok) && o.c->collection >= 3) {
        ++t->unnamed_misses;
      } else if (!o.category_ok || !o.retryable_ok) {
        t->misses += "\n  " + o.c->url + ": expected " + o.c->category + ", got " +
                     o.diagnosis.category + (o.diagnosis.retryable ? " (retryable)" : "");
      }
    }
  }
  // Per mille regression floors, fixed: set once below what was measured (2026-11-27: 338/424
  // category = 797, 359/424 retryable = 846 over every collection; each collection between 651
  // and 904) and never moved to a new measurement, so the held-out half stays a measurement and
  // not a target. The measured figures live in bench/RESULTS.md (knowledge_diagnosis_bench).
  // A drop below a floor is a real regression of several logs, not noise.
  constexpr int kAllCategory = 750, kAllRetryable = 800;
  constexpr int kCollectionCategory = 600, kCollectionRetryable = 650;
  const struct {
    const Tally* t;
    int category, retryable;
  } floors[] = {{&all, kAllCategory, kAllRetryable},
                {&third, kCollectionCategory, kCollectionRetryable},
                {&fourth, kCollectionCategory, kCollectionRetryable},
                {&fifth, kCollectionCategory, kCollectionRetryable},
                {&sixth, kCollectionCategory, kCollectionRetryable},
                {&seventh, kCollectionCategory, kCollectionRetryable},
                {&eighth, kCollectionCategory, kCollectionRetryable},
                {&ninth, kCollectionCategory, kCollectionRetryable}};
  for (const auto& f : floors) {
    ASSERT_GT(f.t->n, 0) << "collection " << f.t->collection;
    EXPECT_GE(f.t->category * 1000, f.t->n * f.category)
        << "collection " << f.t->collection << ": " << f.t->category << "/" << f.t->n << f.t->misses
        << "\n  and " << f.t->unnamed_misses << " of the third and later collections";
    EXPECT_GE(f.t->retryable * 1000, f.t->n * f.retryable)
        << "collection " << f.t->collection << ": " << f.t->retryable << "/" << f.t->n
        << f.t->misses << "\n  and " << f.t->unnamed_misses
        << " of the third and later collections";
  }
}

}  // namespace
}  // namespace paratune
