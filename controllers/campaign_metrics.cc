#include "controllers/campaign_metrics.h"

#include <array>
#include <utility>

#include "base/json_fields.h"
#include "controllers/campaign_status.h"
#include "controllers/trial_run_status.h"

namespace paratune::controllers {

namespace {

using kube::Json;
using kube::Labels;
using SeriesList = kube::MetricsRegistry::SeriesList;

// The TrialRun phases, as the CRD spells them; "Pending" also holds TrialRuns whose status the
// trial reconciler has not written yet.
constexpr std::array<const char*, 6> kPhases = {"Pending", "Running",  "Succeeded",
                                                "Failed",  "Rejected", "EarlyStopped"};

struct TrialTally {
  std::map<std::string, double> by_phase;
  double queue_seconds = 0;
  double evictions = 0;
};

// TrialRuns by "namespace/campaign".
std::map<std::string, TrialTally> TallyTrials(const std::vector<kube::ObjectPtr>& trials) {
  std::map<std::string, TrialTally> out;
  for (const kube::ObjectPtr& t : trials) {
    const std::string campaign =
        StringField(ObjectField(ObjectField(*t, "spec"), "campaignRef"), "name");
    if (campaign.empty()) continue;
    TrialTally& tally = out[kube::NamespaceOf(*t) + "/" + campaign];
    auto status = TrialRunStatusOf(*t);
    std::string phase = "Pending";
    if (status.ok() && status->phase) phase = std::string(TrialRunPhaseName(*status->phase));
    tally.by_phase[phase] += 1;
    if (status.ok() && status->queue_seconds) {
      tally.queue_seconds += static_cast<double>(*status->queue_seconds);
    }
    if (status.ok() && status->evictions)
      tally.evictions += static_cast<double>(*status->evictions);
  }
  return out;
}

void AddCampaign(const Json& campaign, const TrialTally& tally,
                 std::map<std::string, SeriesList>* out) {
  const Labels who = {{"namespace", kube::NamespaceOf(campaign)},
                      {"campaign", kube::NameOf(campaign)}};
  auto with = [&who](const char* key, const std::string& value) {
    Labels l = who;
    l.emplace_back(key, value);
    return l;
  };
  const Json& spec = ObjectField(campaign, "spec");
  const Json& status = ObjectField(campaign, "status");
  std::string objective = StringField(ObjectField(spec, "objective"), "metric");
  if (objective.empty()) objective = "mfu";  // the CRD's default
  const Json& best = ObjectField(status, "best");
  if (!StringField(best, "trialName").empty()) {
    (*out)[kCampaignBestObjective].emplace_back(with("objective", objective),
                                                NumberField(best, "objective"));
  }
  const Json& baseline = ObjectField(status, "baseline");
  if (!StringField(baseline, "trialName").empty()) {
    (*out)[kCampaignBaselineObjective].emplace_back(with("objective", objective),
                                                    NumberField(baseline, "objective"));
  }
  for (const char* phase : kPhases) {
    auto it = tally.by_phase.find(phase);
    (*out)[kCampaignTrials].emplace_back(with(kube::kPhaseLabel, phase),
                                         it == tally.by_phase.end() ? 0 : it->second);
  }
  (*out)[kCampaignOomsAvoided].emplace_back(
      who, NumberField(ObjectField(status, "trials"), "oomsAvoided"));
  const Json& hours = ObjectField(status, "acceleratorHours");
  (*out)[kCampaignHoursSpent].emplace_back(who, NumberField(hours, "total"));
  (*out)[kCampaignHoursSaved].emplace_back(with("reason", "early_stopping"),
                                           NumberField(hours, "savedByEarlyStopping"));
  (*out)[kCampaignQueueWait].emplace_back(who, tally.queue_seconds);
  (*out)[kCampaignEvictions].emplace_back(who, tally.evictions);
  const auto campaign_phase = CampaignPhaseIn(status);
  Labels info =
      with(kube::kPhaseLabel,
           std::string(CampaignPhaseName(campaign_phase.value_or(CampaignPhase::kPending))));
  info.emplace_back("accelerator", StringField(ObjectField(spec, "hardware"), "accelerator"));
  info.emplace_back("framework", StringField(ObjectField(spec, "training"), "framework"));
  (*out)[kCampaignInfo].emplace_back(std::move(info), 1);
}

}  // namespace

std::vector<std::string> CampaignMetricNames() {
  return {kCampaignBestObjective, kCampaignBaselineObjective, kCampaignTrials,
          kCampaignOomsAvoided,   kCampaignHoursSpent,        kCampaignHoursSaved,
          kCampaignQueueWait,     kCampaignEvictions,         kCampaignInfo,
          kCampaignSeriesDropped};
}

std::map<std::string, SeriesList> CampaignMetricSeries(
    const std::vector<kube::ObjectPtr>& campaigns, const std::vector<kube::ObjectPtr>& trials,
    const CampaignMetricsOptions& opts) {
  std::map<std::string, SeriesList> out;
  for (const std::string& name : CampaignMetricNames()) out[name];  // every family, even empty
  const std::map<std::string, TrialTally> tallies = TallyTrials(trials);
  static const TrialTally kNone;
  size_t kept = 0;
  for (const kube::ObjectPtr& c : campaigns) {
    if (kept == opts.max_campaigns) break;
    ++kept;
    auto it = tallies.find(kube::NamespaceOf(*c) + "/" + kube::NameOf(*c));
    AddCampaign(*c, it == tallies.end() ? kNone : it->second, &out);
  }
  out[kCampaignSeriesDropped].emplace_back(Labels{}, static_cast<double>(campaigns.size() - kept));
  return out;
}

void ExportCampaignMetrics(const kube::ObjectReader* campaigns, const kube::ObjectReader* trials,
                           kube::MetricsRegistry* metrics, CampaignMetricsOptions opts) {
  if (metrics == nullptr || campaigns == nullptr || trials == nullptr) return;
  struct Family {
    const char* name;
    const char* type;
    const char* help;
  };
  static constexpr Family kFamilies[] = {
      {kCampaignBestObjective, "gauge", "Best objective value measured so far (status.best)"},
      {kCampaignBaselineObjective, "gauge", "Objective value of the campaign's baseline trial"},
      {kCampaignTrials, "gauge", "TrialRuns of the campaign by phase"},
      {kCampaignOomsAvoided, "counter",
       "Candidates the pre-flight check refused as predicted to run out of device memory"},
      {kCampaignHoursSpent, "counter", "Accelerator-hours spent by the campaign's finished trials"},
      {kCampaignHoursSaved, "counter", "Accelerator-hours saved, by reason (early stopping)"},
      {kCampaignQueueWait, "counter", "Seconds the campaign's trials waited in the queue (Kueue)"},
      {kCampaignEvictions, "counter",
       "Times Kueue suspended one of the campaign's trials again after admitting it"},
      {kCampaignInfo, "gauge", "1 per campaign, with its phase, accelerator and framework"},
      {kCampaignSeriesDropped, "gauge", "Campaigns left without series (past the bound)"},
  };
  for (const Family& f : kFamilies) {
    const std::string name = f.name;
    metrics->SetFamilyFunction(name, f.type, f.help, [campaigns, trials, opts, name] {
      // Each family reads the caches again: a scrape's families may differ by an event, which
      // Prometheus tolerates (each series is sampled on its own).
      auto all = CampaignMetricSeries(campaigns->List(), trials->List(), opts);
      return std::move(all[name]);
    });
  }
}

}  // namespace paratune::controllers
