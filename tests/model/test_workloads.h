// The workload the framework-profile tests estimate: llama3-8b cut to 8 layers on one H100x8
// node, seq 4096, global batch 32, under `framework` and `precision` (`model_extra` is appended
// to the model block, e.g. ", tiedEmbeddings: true").
#ifndef PARATUNE_TESTS_MODEL_TEST_WORKLOADS_H_
#define PARATUNE_TESTS_MODEL_TEST_WORKLOADS_H_

#include <gtest/gtest.h>

#include <string>

#include "agents/core/campaign.h"
#include "agents/model/workload.h"

namespace paratune::testing {

inline Workload ProfileWorkload(const std::string& framework, const std::string& precision = "bf16",
                                const std::string& model_extra = "") {
  auto spec = CampaignFromYaml(
      "spec: {model: {preset: llama3-8b, numLayers: 8" + model_extra +
      "}, training: {framework: " + framework + ", precision: " + precision +
      ", seqLength: 4096, globalBatchSize: 32}, hardware: {accelerator: nvidia-h100-80gb, "
      "nodes: 1, devicesPerNode: 8}, searchSpace: {parameters: [{name: mbs, values: [1]}]}}");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto w = ResolveWorkload(*spec);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? *w : Workload{};
}

}  // namespace paratune::testing

#endif  // PARATUNE_TESTS_MODEL_TEST_WORKLOADS_H_
