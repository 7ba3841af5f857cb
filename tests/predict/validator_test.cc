#include "agents/predict/validator.h"

#include <gtest/gtest.h>

#include "tests/support/fake_model.h"

namespace paratune {
namespace {

using testing::FakeCampaign;
using testing::FakeModel;

Config Make(int64_t tp, int64_t pp, int64_t mbs, const char* rc) {
  return {{"tp", ParamValue::Int(tp)},
          {"pp", ParamValue::Int(pp)},
          {"mbs", ParamValue::Int(mbs)},
          {"recompute", ParamValue::Enum(rc)}};
}

class ValidatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    space_ = SearchSpaceIndex::Build(spec_, model_, 1000).value();
    pool_.calibration() = FitCalibration(space_, model_, pool_, CalibrationState{});
  }
  CalibratedPredictor Predictor() const {
    return CalibratedPredictor(&space_, spec_.objective, pool_.calibration(), {});
  }
  CampaignSpec spec_ = FakeCampaign();
  FakeModel model_;
  SearchSpaceIndex space_;
  MessagePool pool_;
};

TEST_F(ValidatorTest, RejectsWithAReasonAUserCanActOn) {
  Validator v(&spec_, &model_, &space_, {});
  const auto p = Predictor();
  auto r = v.Check(Make(8, 4, 1, "full"), pool_, p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("exceeds the 8 devices"), std::string::npos) << r.reason;
  r = v.Check(Make(3, 1, 1, "full"), pool_, p);
  EXPECT_NE(r.reason.find("outside the search space"), std::string::npos) << r.reason;
  r = v.Check(Make(1, 1, 4, "none"), pool_, p);
  EXPECT_NE(r.reason.find("exceeds the 80.0 GiB device capacity"), std::string::npos) << r.reason;
  EXPECT_TRUE(v.Check(Make(2, 1, 1, "selective"), pool_, p).ok);
}

TEST_F(ValidatorTest, MemoryMarginIsLearnedAndCanBeWaivedForOneBorderlineAttempt) {
  Validator v(&spec_, &model_, &space_, {});
  const Config edge = Make(1, 1, 1, "none");  // 76 GiB by the model: inside the 8 GiB prior
  EXPECT_NEAR(pool_.calibration().memory_margin_gib, 8.0, 1e-9);
  EXPECT_FALSE(v.Check(edge, pool_, Predictor()).ok);
  EXPECT_TRUE(v.Check(edge, pool_, Predictor(), 0.0).ok);
}

TEST_F(ValidatorTest, DuplicatesAndKnownFailuresAreRejected) {
  TrialRecord t;
  t.name = "fake-t001";
  t.config = Make(2, 2, 1, "full");
  t.phase = TrialPhase::kFailed;
  FailureDiagnosis d;
  d.category = "InvalidParallelism";
  d.parameters = {"pp"};
  t.failure = d;
  pool_.AddTrial(t);
  Validator v(&spec_, &model_, &space_, {});
  auto r = v.Check(t.config, pool_, Predictor());
  EXPECT_EQ(r.reason, "already tried");
  r = v.Check(Make(1, 2, 2, "selective"), pool_, Predictor());
  EXPECT_NE(r.reason.find("matches the failure of fake-t001"), std::string::npos) << r.reason;
  EXPECT_TRUE(v.Check(Make(1, 4, 1, "selective"), pool_, Predictor()).ok);
}

// A memory failure turns away configurations that need at least as much memory, and feeds the
// memory model; the same category guessed from the words of known failures (no signature, no
// close case) does neither.
TEST_F(ValidatorTest, AMemoryFailureGuessedFromWordsRulesNothingOut) {
  TrialRecord t;
  t.name = "fake-t001";
  t.config = Make(2, 1, 2, "selective");
  t.phase = TrialPhase::kFailed;
  FailureDiagnosis d;
  d.category = "CudaOOM";
  d.signature = "cuda-oom";
  t.failure = d;
  MessagePool by_signature;
  by_signature.AddTrial(t);
  t.failure->signature = "words:CudaOOM";
  MessagePool by_words;
  by_words.AddTrial(t);
  Validator v(&spec_, &model_, &space_, {});
  const Config same_memory = Make(2, 1, 2, "none");  // no more recomputation: as much memory
  const CalibrationState fit_signature =
      FitCalibration(space_, model_, by_signature, CalibrationState{});
  EXPECT_EQ(fit_signature.oom_observations, 1);
  EXPECT_NE(v.MatchKnownFailure(same_memory, by_signature, Predictor()), "");
  const CalibrationState fit_words = FitCalibration(space_, model_, by_words, CalibrationState{});
  EXPECT_EQ(fit_words.oom_observations, 0);
  EXPECT_EQ(v.MatchKnownFailure(same_memory, by_words, Predictor()), "");
}

}  // namespace
}  // namespace paratune
