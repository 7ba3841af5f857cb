// The words model over known failures (agents/knowledge/failure_words.h) and the Diagnostician's
// last fallback on it: a fresh wording of a known kind of failure, no signature, no close case.
#include "agents/knowledge/failure_words.h"

#include <gtest/gtest.h>

#include <string>

#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"

namespace paratune {
namespace {

// Each category worded several ways, so that no single case is close to the queries below but
// the category's vocabulary is plain.
const char kCases[] = R"(cases:
- url: https://example.com/fabric/1
  category: NodeFault
  retryable: true
  log: |
    fabric manager reports nvswitch tray 3 degraded, gpu link training failed
- url: https://example.com/fabric/2
  category: NodeFault
  retryable: true
  log: |
    nvswitch fatal error on tray 1; gpu isolated by fabric manager
- url: https://example.com/fabric/3
  category: NodeFault
  retryable: true
  log: |
    gpu link down on nvswitch port 12, node drained
- url: https://example.com/ring/1
  category: CollectiveTimeout
  retryable: true
  log: |
    allreduce ring stalled: rank 3 sent nothing for 600 s, collective aborted
- url: https://example.com/ring/2
  category: CollectiveTimeout
  retryable: true
  log: |
    collective allgather on ring 2 aborted after rank 7 stalled
- url: https://example.com/ring/3
  category: CollectiveTimeout
  retryable: false
  log: |
    rank 1 stalled in allreduce: collective sequence numbers differ
- url: https://example.com/bug/1
  category: Unknown
  retryable: false
  log: |
    KeyError: 'labels' in collate_fn
- url: https://example.com/bug/2
  category: Unknown
  retryable: false
  log: |
    TypeError: collate_fn got an unexpected keyword argument 'labels'
)";

TEST(FailureWordModelTest, GuessesTheCategoryWhoseWordsTheLogShares) {
  auto cases = ParseLabelledCases("cases.yaml", kCases);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  FailureWordModel model;
  model.Rebuild(*cases);
  auto g = model.Guess("trainer: nvswitch tray 4 reported by fabric manager, gpu lost");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->category, "NodeFault");
  EXPECT_GT(g->posterior, 0.9);
  EXPECT_LE(g->posterior, 1.0);
  EXPECT_EQ(g->cases, 3u);
  // The terms that speak for it, strongest first: words of the NodeFault cases only.
  ASSERT_FALSE(g->terms.empty());
  EXPECT_LE(g->terms.size(), 3u);
  for (const auto& t : g->terms) {
    EXPECT_TRUE(t == "nvswitch" || t == "tray" || t == "fabric" || t == "manager" || t == "gpu")
        << t;
  }
  auto ring = model.Guess("rank 5 stalled, the allreduce was aborted");
  ASSERT_TRUE(ring.has_value());
  EXPECT_EQ(ring->category, "CollectiveTimeout");
  // A log that repeats one term is one vote for it, not forty.
  std::string repeated = "collate_fn";
  for (int i = 0; i < 40; ++i) repeated += " rank";
  auto once = model.Guess(repeated);
  ASSERT_TRUE(once.has_value());
  EXPECT_LT(once->posterior, 0.99);
}

TEST(FailureWordModelTest, SaysNothingWithoutTwoCategoriesOrAKnownTerm) {
  FailureWordModel empty;
  EXPECT_FALSE(empty.Guess("nvswitch fatal error").has_value());
  auto cases = ParseLabelledCases("cases.yaml", kCases);
  ASSERT_TRUE(cases.ok());
  std::vector<LabelledCase> one_category(cases->begin(), cases->begin() + 3);
  FailureWordModel single;
  single.Rebuild(one_category);
  EXPECT_FALSE(single.Guess("nvswitch fatal error").has_value());
  FailureWordModel model;
  model.Rebuild(*cases);
  EXPECT_FALSE(model.Guess("zzqx wvut").has_value());
  EXPECT_FALSE(model.Guess("").has_value());
}

class FailureWordsDiagnosisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kb_ = std::make_unique<KnowledgeBase>();
    ASSERT_TRUE(kb_->AddKnownFailures("cases.yaml", kCases).ok());
    auto d = Diagnostician::Create(kb_.get());
    ASSERT_TRUE(d.ok());
    diag_ = std::move(*d);
  }
  std::unique_ptr<KnowledgeBase> kb_;
  std::unique_ptr<Diagnostician> diag_;
};

TEST_F(FailureWordsDiagnosisTest, AFreshWordingOfAKnownKindIsNamedAsAGuess) {
  DiagnosisInput in;
  in.log = "step 40\nRuntimeError: nvswitch tray 6 isolated the gpu (fabric manager)\n";
  FailureDiagnosis d = diag_->Diagnose(in);
  EXPECT_EQ(d.category, "NodeFault");
  EXPECT_EQ(d.signature, "words:NodeFault");
  EXPECT_EQ(d.confidence, 30);  // below the vote's 35..60 and every signature's
  // A guess from words is no reason to spend a trial on the same run: not retryable, although
  // the NodeFault cases are.
  EXPECT_FALSE(d.retryable);
  EXPECT_TRUE(d.parameters.empty());
  EXPECT_NE(d.summary.find("3 known NodeFault failures"), std::string::npos) << d.summary;
  EXPECT_NE(d.summary.find("posterior"), std::string::npos) << d.summary;
  EXPECT_NE(d.evidence.find("RuntimeError: nvswitch tray 6"), std::string::npos) << d.evidence;
  EXPECT_NE(d.evidence.find("words like the known NodeFault failures"), std::string::npos)
      << d.evidence;
}

TEST_F(FailureWordsDiagnosisTest, WordsOfNoNamedCategoryOrUnsureWordsStayUnknown) {
  DiagnosisInput bug;
  bug.log = "ValueError: collate_fn returned 'labels' of the wrong type\n";
  FailureDiagnosis d = diag_->Diagnose(bug);
  EXPECT_EQ(d.category, "Unknown");
  EXPECT_EQ(d.signature, "");
  // Half one kind's words, half another's: not sure enough to name either.
  DiagnosisInput mixed;
  mixed.log = "nvswitch gpu rank stalled allreduce\n";
  FailureDiagnosis m = diag_->Diagnose(mixed);
  EXPECT_EQ(m.category, "Unknown") << m.summary;
  EXPECT_EQ(m.signature, "");
}

TEST_F(FailureWordsDiagnosisTest, ASignatureAndACloseCaseComeFirst) {
  ASSERT_TRUE(kb_->AddSignatures("site.yaml", R"(signatures:
- key: site-fabric
  category: NodeFault
  contains: ["nvswitch tray 6"]
  retryable: true
)")
                  .ok());
  DiagnosisInput in;
  in.log = "RuntimeError: nvswitch tray 6 isolated the gpu (fabric manager)\n";
  EXPECT_EQ(diag_->Diagnose(in).signature, "site-fabric");
  // A case close enough to cite (many rare terms in common) decides before the words do.
  ASSERT_TRUE(kb_->AddKnownFailures("more.yaml", R"(cases:
- url: https://example.com/ring/4
  category: CollectiveTimeout
  retryable: true
  log: |
    hierarchical reduce-scatter over spine switch leaf7 quiesced; sharp aggregation tree rebuilt
)")
                  .ok());
  DiagnosisInput close;
  close.log =
      "hierarchical reduce-scatter over spine switch leaf7 quiesced; sharp aggregation tree "
      "rebuilt\n";
  FailureDiagnosis d = diag_->Diagnose(close);
  EXPECT_EQ(d.signature, "case:https://example.com/ring/4") << d.summary;
  EXPECT_TRUE(d.retryable);
}

}  // namespace
}  // namespace paratune
