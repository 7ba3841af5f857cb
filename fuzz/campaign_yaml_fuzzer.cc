// libFuzzer target: a TuningCampaign as YAML text (what `paratune -f` and kubectl users write).
// YamlToJson and CampaignFromYaml must return a Status for any input, never crash, hang or
// allocate without bound (alias bombs, deep nesting, huge scalars).
#include <cstddef>
#include <cstdint>
#include <string>

#include "agents/core/campaign.h"
#include "base/yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto json = paratune::YamlToJson(text);
  if (json.ok()) (void)json->dump();
  for (bool require_model : {true, false}) {
    paratune::CampaignParseOptions options;
    options.require_model = require_model;
    auto campaign = paratune::CampaignFromYaml(text, options);
    if (campaign.ok()) {
      (void)campaign->SearchSpaceSize();
      (void)paratune::WorkloadJson(*campaign).dump();
    } else {
      (void)campaign.status().ToString();
    }
  }
  return 0;
}
