#include "agents/trials/message_pool.h"

#include <gtest/gtest.h>

#include <limits>

namespace paratune {
namespace {

MessagePool Sample() {
  MessagePool p;
  TrialRecord t;
  t.iteration = 2;
  t.name = "c-t002";
  t.config = {{"tp", ParamValue::Int(2)}, {"recompute", ParamValue::Enum("selective")}};
  t.phase = TrialPhase::kFailed;
  FailureDiagnosis d;
  d.category = "CudaOOM";
  d.parameters = {"mbs"};
  d.summary = "mbs 4 caused torch.OutOfMemoryError (Confidence: 90)";
  d.confidence = 90;
  t.failure = d;
  t.proposal = {"because", "+5%", 0.7, "builtin"};
  t.prediction.peak_memory_gib = 71.5;
  t.change = "tp 1->2";
  p.AddTrial(t);
  Analysis a;
  a.iteration = 2;
  a.health_state = "communication-bound";
  a.suggestions.push_back({"tp", ParamValue::Int(2), ParamValue::Int(1), "less comm", 0.08});
  p.AddAnalysis(a);
  p.AddRejected({3, t.config, "already tried", "llm"});
  p.AddLlmExchange({3, "strategist", "prompt", "reply", "ok", 1.5, 100, 20, false});
  p.calibration().compute_efficiency = 0.87;
  return p;
}

TEST(MessagePoolTest, JsonRoundTripKeepsEverything) {
  const MessagePool p = Sample();
  auto back = MessagePool::FromJson(nlohmann::json::parse(p.ToJson().dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), p.ToJson());
  EXPECT_EQ(back->trials()[0].failure->category, "CudaOOM");
  EXPECT_EQ(back->analyses()[0].suggestions[0].Text(), "Change tp from 2 to 1: less comm");
  EXPECT_DOUBLE_EQ(back->calibration().compute_efficiency, 0.87);
  EXPECT_TRUE(back->WasTried(p.trials()[0].config));
}

TEST(MessagePoolTest, BadJsonNamesTheField) {
  nlohmann::json j = Sample().ToJson();
  j["trials"][0]["config"]["tp"] = "two";
  auto r = MessagePool::FromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("pool.trials[0].config.tp"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace paratune

namespace paratune {
namespace {

TEST(MessagePoolPredictionTest, UnpredictableValuesRoundTripAsZero) {
  Prediction p;
  p.peak_memory_gib = -1.0;
  p.step_time_seconds = std::numeric_limits<double>::infinity();
  p.mfu = std::numeric_limits<double>::quiet_NaN();
  auto back = Prediction::FromJson(p.ToJson(), "prediction");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->peak_memory_gib, 0.0);
  EXPECT_EQ(back->step_time_seconds, 0.0);
  EXPECT_EQ(back->mfu, 0.0);
}

}  // namespace
}  // namespace paratune
