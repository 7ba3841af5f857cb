#include "agents/llm/redact.h"

#include <gtest/gtest.h>

#include "agents/llm/openai_wire.h"

namespace paratune::llm {
namespace {

TEST(RedactTest, RemovesKeysTokensPasswordsAndAddresses) {
  std::string log =
      "export OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234\n"
      "curl -H 'Authorization: Bearer "
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk'\n"
      "HF_TOKEN=hf_abcdefghijklmnopqrstuvwx password: hunter2\n"
      "aws AKIAIOSFODNN7EXAMPLE\n"
      "NCCL INFO Connected to 10.128.0.17:29500 and [fe80::1ff:fe23:4567:890a]\n"
      "MASTER_ADDR=2001:0db8:85a3:0000:0000:8a2e:0370:7334\n";
  std::string out = Redact(log);
  for (const char* leak : {"sk-proj-abcdefghijklmnop1234", "eyJhbGciOiJIUzI1NiJ9", "hunter2",
                           "hf_abcdefghijklmnopqrstuvwx", "AKIAIOSFODNN7EXAMPLE", "10.128.0.17",
                           "fe80::1ff", "2001:0db8"}) {
    EXPECT_EQ(out.find(leak), std::string::npos) << leak << "\n" << out;
  }
  EXPECT_NE(out.find("NCCL INFO Connected to [IP]"), std::string::npos) << out;
}

TEST(RedactTest, KeepsWhatTheDiagnosisNeeds) {
  std::string log =
      "[2024-05-01 12:34:56] iteration 10 | throughput per GPU (TFLOP/s/GPU): 162.1\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
      "  File \"/usr/lib/python3/dist-packages/megatron/core/transformer/attention.py\"\n"
      "std::runtime_error ValueError: num_attention_heads (14) must be divisible by tp (4)\n";
  EXPECT_EQ(Redact(log), log);
}

TEST(RedactTest, ScrubsKnownSecretsWhateverTheirShape) {
  EXPECT_EQ(Redact("key is plainword42 ok", {"plainword42"}), "key is [REDACTED] ok");
  EXPECT_EQ(RedactLogTail("line1\nline2\nline3 10.0.0.1\n", 16), "line3 [IP]\n");
}

TEST(RedactTest, LongLinesAreRedactedWithoutOverflowingTheStack) {
  // std::regex recursed once per matched character: a 200 KB token or line crashed.
  std::string words;
  for (int i = 0; i < 2000; ++i) words += "word ";
  const std::string blob(256 << 10, '7');  // one 256 KiB "token": crashed before
  std::string out = Redact(words + "key sk-abcdefghijklmnop1234 at 10.1.2.3 " + words + blob +
                           "\nnext line 10.0.0.1\n");
  EXPECT_EQ(out.find("sk-abcdefghijklmnop1234"), std::string::npos);
  EXPECT_EQ(out.find("10.1.2.3"), std::string::npos);
  EXPECT_NE(out.find("next line [IP]\n"), std::string::npos);
  EXPECT_NE(out.find(blob), std::string::npos);  // digits alone are no secret: kept whole
}

TEST(RedactTest, PrivateKeysAcrossLinesEvenWithoutTheirFooter) {
  const std::string key =
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x\nq2w3e4r5t6y7\n"
      "-----END RSA PRIVATE KEY-----";
  EXPECT_EQ(Redact("a\n" + key + "\nb"), "a\n[REDACTED]\nb");
  EXPECT_EQ(Redact("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\nAQEFAASC"),
            "[REDACTED]");  // a log tail cut inside the key
  EXPECT_EQ(Redact("-----BEGIN CERTIFICATE-----\nabc\n"), "-----BEGIN CERTIFICATE-----\nabc\n");
}

TEST(WireTest, BackoffRetryAfterAndStatusMapping) {
  using std::chrono::milliseconds;
  EXPECT_EQ(BackoffDelay(0, milliseconds(100), milliseconds(1000), 0.0), milliseconds(50));
  EXPECT_EQ(BackoffDelay(3, milliseconds(100), milliseconds(1000), 0.999), milliseconds(799));
  EXPECT_EQ(BackoffDelay(10, milliseconds(100), milliseconds(1000), 1.0), milliseconds(1000));
  auto now = std::chrono::system_clock::from_time_t(1700000000);  // Tue, 14 Nov 2023 22:13:20
  EXPECT_EQ(ParseRetryAfter("1.5", now, milliseconds(60000)), milliseconds(1500));
  EXPECT_EQ(ParseRetryAfter("Tue, 14 Nov 2023 22:13:30 GMT", now, milliseconds(60000)),
            milliseconds(10000));
  EXPECT_EQ(ParseRetryAfter("999", now, milliseconds(5000)), milliseconds(5000));
  EXPECT_EQ(ParseRetryAfter("soon", now, milliseconds(5000)), std::nullopt);
  // A date far away is the cap, one in the past no wait; neither overflows the clock.
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 6026 07:28:00 GMT", now, milliseconds(5000)),
            milliseconds(5000));
  EXPECT_EQ(ParseRetryAfter("Mon, 13 Nov 2023 22:13:30 GMT", now, milliseconds(5000)),
            milliseconds(0));
  EXPECT_EQ(StatusForHttp(429, "", "").code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatusForHttp(403, "", "").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusForHttp(404, "model not found", "").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune::llm
