// Known failures (labelled failure logs): parsing, the neighbours' vote, where they come from
// (the shipped dev half, a user's `cases:` file) and the Diagnostician's fallback on them.
#include "agents/knowledge/known_failures.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"
#include "testing/eval/diagnosis_eval.h"

namespace paratune {
namespace {

// Three XLA compile failures, one host OOM and one NCCL failure, worded as users paste them.
const char kCases[] = R"(cases:
- url: https://example.com/compile/1
  category: CompileError
  retryable: false
  log: |
    jaxlib.xla_extension.XlaRuntimeError: INTERNAL: ptxas exited with non-zero error code 65280
- url: https://example.com/compile/2
  category: CompileError
  retryable: false
  log: |
    XlaRuntimeError: INTERNAL: ptxas exited with non-zero error code 2, output: ptxas fatal
- url: https://example.com/compile/3
  category: CompileError
  retryable: false
  log: |
    INTERNAL: ptxas fatal: Unresolved extern function in the lowered kernel
- url: https://example.com/host/1
  category: HostOOM
  retryable: false
  log: |
    Worker was killed by the memory monitor: node memory usage 0.97 above threshold
- url: https://example.com/nccl/1
  category: CollectiveTimeout
  retryable: true
  log: |
    NCCL WARN Net/IB : peer unreachable, remote process exited
)";

TEST(KnownFailuresTest, TheNeighboursVoteAndTheClosestIsCited) {
  auto cases = ParseLabelledCases("cases.yaml", kCases);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  KnownFailureIndex index;
  index.Rebuild(*cases);
  auto s =
      index.MostSimilar("XlaRuntimeError: INTERNAL: ptxas exited with non-zero error code 255");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->category, "CompileError");
  EXPECT_FALSE(s->retryable);
  // The NCCL case shares only "exited": the compile failures' vote is far ahead.
  EXPECT_GT(s->margin, 0.9);
  EXPECT_LT(s->margin, 1.0);
  EXPECT_GT(s->score, 0);
  ASSERT_NE(s->known, nullptr);
  EXPECT_EQ(s->known->url.rfind("https://example.com/compile/", 0), 0u);
  auto nccl = index.MostSimilar("NCCL WARN Net/IB : peer unreachable after 3 retries");
  ASSERT_TRUE(nccl.has_value());
  EXPECT_EQ(nccl->category, "CollectiveTimeout");
  EXPECT_TRUE(nccl->retryable);
  EXPECT_FALSE(index.MostSimilar("nothing in common whatsoever").has_value());
}

TEST(KnownFailuresTest, TracebackFrameLinesDoNotMakeUnrelatedFailuresAlike) {
  const std::string a =
      "Traceback (most recent call last):\n  File \"train.py\", line 88, in main\n"
      "    assert heads % tp == 0\nAssertionError\n";
  const std::string text = FailureText({}, a, "OOMKilled", 137);
  EXPECT_EQ(text.find("Traceback"), std::string::npos);
  EXPECT_EQ(text.find("train.py"), std::string::npos);
  EXPECT_NE(text.find("assert heads % tp == 0"), std::string::npos);
  EXPECT_NE(text.find("pod terminated, reason: OOMKilled"), std::string::npos);
  EXPECT_NE(text.find("exit code 137"), std::string::npos);
}

TEST(KnownFailuresTest, BadCasesAreRejectedNamingTheField) {
  struct {
    const char* text;
    const char* error;
  } bad[] = {
      {"cases: {}", "cases: must be a list"},
      {"cases:\n- {url: http://x, category: CudaOOM, log: a}", "cases[0].url"},
      {"cases:\n- {url: https://x, category: Oops, log: a}", "cases[0].category"},
      {"cases:\n- {url: https://x, category: CudaOOM}", "cases[0].log"},
      {"cases:\n- {url: https://x, category: CudaOOM, log: a, retryable: maybe}",
       "cases[0].retryable"},
      {"cases:\n- {url: https://x, category: CudaOOM, log: a, colour: red}", "colour"},
      {"cases:\n- {url: https://x, category: CudaOOM, log: a}\n"
       "- {url: https://x, category: HostOOM, log: b}",
       "cases[1].url: https://x appears twice"},
  };
  for (const auto& b : bad) {
    auto r = ParseLabelledCases("mine.yaml", b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_NE(r.status().message().find("mine.yaml"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find(b.error), std::string::npos) << r.status().ToString();
  }
}

TEST(KnownFailuresTest, TheShippedCasesAreTheDevHalfOnly) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok()) << kb.status().ToString();
  auto corpus = LoadPublicCorpus(PublicCorpusPaths(PARATUNE_SOURCE_DIR));
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  size_t dev = 0;
  for (const auto& c : *corpus) dev += c.split == "dev";
  EXPECT_EQ((*kb)->known_failures().size(), dev);
  for (const auto& k : (*kb)->known_failures()) EXPECT_EQ(PublicCorpusSplit(k.url), "dev") << k.url;
}

TEST(KnownFailuresTest, AUsersCasesFileIsReadFromTheKnowledgeDirectoryAndDecidesUnmatchedLogs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("paratune-cases-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // A site's own failure, worded nothing like any signature.
  std::ofstream(dir / "site-failures.yaml") << R"(cases:
- url: https://tickets.example.com/GPU-1234
  category: NodeFault
  retryable: true
  log: |
    fabricmanager: partition activation failed on nvswitch tray 3, link training timeout
- url: https://tickets.example.com/GPU-1240
  category: NodeFault
  retryable: true
  log: |
    fabricmanager: nvswitch tray 5 link training timeout, partition degraded
)";
  auto kb = KnowledgeBase::LoadDefault(dir.string());
  ASSERT_TRUE(kb.ok()) << kb.status().ToString();
  auto d = Diagnostician::Create(kb->get());
  ASSERT_TRUE(d.ok());
  DiagnosisInput in;
  in.log =
      "step 120\nfabricmanager: partition activation failed on nvswitch tray 1, link "
      "training timeout\n";
  FailureDiagnosis got = (*d)->Diagnose(in);
  EXPECT_EQ(got.category, "NodeFault");
  EXPECT_TRUE(got.retryable);
  EXPECT_EQ(got.signature, "case:https://tickets.example.com/GPU-1234");
  EXPECT_GE(got.confidence, 35);
  EXPECT_LE(got.confidence, 60);  // below every signature's: a resemblance, not a match
  EXPECT_TRUE(got.parameters.empty());
  EXPECT_NE(got.evidence.find("like https://tickets.example.com/GPU-1234"), std::string::npos);
  // A trial's log tail: only its last 30 lines are compared, so the progress lines before the
  // error neither hide it nor make the log like the cases that quote progress lines.
  std::string tail;
  for (int i = 0; i < 200; ++i) {
    tail += " iteration " + std::to_string(i) + " | lm loss 2.31 | grad norm 0.8 | fabric ok\n";
  }
  in.log = tail +
           "fabricmanager: partition activation failed on nvswitch tray 1, link training "
           "timeout\n";
  EXPECT_EQ((*d)->Diagnose(in).signature, "case:https://tickets.example.com/GPU-1234");
  in.log =
      "fabricmanager: partition activation failed on nvswitch tray 1, link training timeout\n" +
      tail;
  EXPECT_EQ((*d)->Diagnose(in).category, "Unknown");
  // A bad cases file is an error naming it, not silently skipped.
  std::ofstream(dir / "broken.yaml") << "cases:\n- {url: https://x, category: Nope, log: a}\n";
  auto broken = KnowledgeBase::LoadDefault(dir.string());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("broken.yaml"), std::string::npos);
  fs::remove_all(dir);
}

TEST(KnownFailuresTest, ASignatureStillWinsAndAGenericLogStaysUnknown) {
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  auto d = Diagnostician::Create(kb->get());
  ASSERT_TRUE(d.ok());
  DiagnosisInput oom;
  oom.log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
  EXPECT_EQ((*d)->Diagnose(oom).signature.rfind("case:", 0), std::string::npos);
  DiagnosisInput generic;
  generic.log =
      "step 3\nTraceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n"
      "KeyError: 'valid'\n";
  generic.exit_code = 1;
  FailureDiagnosis got = (*d)->Diagnose(generic);
  EXPECT_EQ(got.category, "Unknown");
  EXPECT_EQ(got.signature, "");
}

}  // namespace
}  // namespace paratune
