// Hostile text: multi-byte UTF-8 cut at every byte, invalid sequences, megabyte single-line logs.
// What a user would notice: `paratune diagnose` and the operator's status writes never abort on
// log text (nlohmann::json throws type_error.316 on invalid UTF-8), and evidence stays readable.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"
#include "base/utf8.h"
#include "tests/support/embedded_diagnostician.h"

namespace paratune {
namespace {

// 2-, 3- and 4-byte sequences next to ASCII.
const std::string kMixed =
    "a\xc3\xa9"
    "b\xe6\x97\xa5"
    "c\xf0\x9f\x94\xa5"
    "d";

bool DumpsStrictly(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

TEST(Utf8Test, EveryCutOfValidTextIsValid) {
  std::string text;
  for (int i = 0; i < 8; ++i) text += kMixed;
  for (size_t n = 0; n <= text.size() + 1; ++n) {
    EXPECT_TRUE(DumpsStrictly(std::string(Utf8Prefix(text, n)))) << "prefix " << n;
    EXPECT_TRUE(DumpsStrictly(std::string(Utf8Suffix(text, n)))) << "suffix " << n;
    std::string head = Utf8Head(text, n, "...");
    std::string tail = Utf8Tail(text, n);
    EXPECT_LE(head.size(), n) << n;
    EXPECT_LE(tail.size(), n) << n;
    EXPECT_TRUE(DumpsStrictly(head)) << "head " << n;
    EXPECT_TRUE(DumpsStrictly(tail)) << "tail " << n;
    // A cut backs off at most one incomplete sequence (3 bytes).
    EXPECT_GE(Utf8Prefix(text, n).size() + 3, std::min(n, text.size())) << n;
  }
}

TEST(Utf8Test, InvalidBytesBecomeReplacementCharacters) {
  const std::string bad = std::string("ok \xff\xfe ") + "\xc3" + " \xed\xa0\x80 end";  // surrogate
  std::string clean = Utf8Sanitize(bad);
  EXPECT_TRUE(DumpsStrictly(clean));
  EXPECT_NE(clean.find("ok "), std::string::npos);
  EXPECT_NE(clean.find(" end"), std::string::npos);
  EXPECT_NE(clean.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_EQ(Utf8Sanitize(kMixed), kMixed);  // valid text is left alone
}

class HostileLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    embedded_ = testing::LoadEmbeddedDiagnostician();
    ASSERT_NE(embedded_.diagnostician, nullptr);
  }
  FailureDiagnosis Run(const std::string& log) {
    DiagnosisInput in;
    in.log = log;
    return embedded_.diagnostician->Diagnose(in);
  }
  testing::EmbeddedDiagnostician embedded_;
};

// The evidence line is cut at 300 bytes and lines at 4 KiB: put a multi-byte character across
// every possible cut point and dump the diagnosis as the CLI does (strict, no replacement).
TEST_F(HostileLogTest, MultiByteTextAtEveryCutPointDumpsAsJson) {
  for (size_t pad = 280; pad < 310; ++pad) {
    for (const std::string ch : {"\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x94\xa5"}) {
      std::string line = "torch.OutOfMemoryError: CUDA out of memory. ";
      while (line.size() < pad) line += "x";
      for (int i = 0; i < 20; ++i) line += ch;
      FailureDiagnosis d = Run(line + "\n");
      EXPECT_EQ(d.category, "CudaOOM");
      EXPECT_TRUE(DumpsStrictly(d.ToJson().dump())) << "pad " << pad;
    }
  }
  std::string long_line(4090, 'y');
  long_line = "NCCL error in: x " + long_line + "\xe6\x97\xa5\xe6\x97\xa5\n";
  EXPECT_NO_THROW((void)Run(long_line).ToJson().dump());
}

TEST_F(HostileLogTest, InvalidUtf8InTheLogNeverAborts) {
  FailureDiagnosis d = Run("RuntimeError: CUDA out of memory \xff\xfe\xc3\n\x80\x80 tail\n");
  EXPECT_EQ(d.category, "CudaOOM");
  EXPECT_TRUE(
      DumpsStrictly(d.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::strict)));
}

// A megabyte on one line (no newline) and megabytes of long identifier-like lines: the verdict
// comes back (speed is measured in bench/knowledge_diagnosis_bench.cc, not here).
TEST_F(HostileLogTest, MegabyteSingleLineLogsAreDiagnosed) {
  std::string one_line;
  while (one_line.size() < (1u << 20)) one_line += "aaaaError_bbbb.cccc \xe6\x97\xa5 ";
  FailureDiagnosis d = Run(one_line);
  EXPECT_FALSE(d.category.empty());
  EXPECT_NO_THROW((void)d.ToJson().dump());
  std::string lines;
  while (lines.size() < (1u << 20)) lines += std::string(5000, 'x') + "Error\n";
  lines += "torch.OutOfMemoryError: CUDA out of memory.\n";
  EXPECT_EQ(Run(lines).category, "CudaOOM");
}

}  // namespace
}  // namespace paratune
