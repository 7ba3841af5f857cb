// libFuzzer target: a TuningCampaign object as the API server serves it (JSON), through
// CampaignFromJson, plus the duration parser it uses. Any input gives a Status, never a crash.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "agents/core/campaign.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)paratune::ParseDurationSeconds(text, "fuzz");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto campaign = paratune::CampaignFromJson(j);
  if (campaign.ok()) {
    (void)campaign->SearchSpaceSize();
    (void)paratune::WorkloadJson(*campaign).dump();
    if (campaign->baseline) {
      (void)campaign->CheckInSearchSpace(*campaign->baseline, "fuzz");
    }
  } else {
    (void)campaign.status().ToString();
  }
  return 0;
}
