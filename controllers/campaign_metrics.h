// Per-campaign Prometheus metrics (issue 38): what an operator of a shared cluster watches across
// many campaigns, each series labelled {namespace, campaign}. Computed at every scrape from the
// informer caches the controllers already hold (campaigns and TrialRuns: no API call, no state
// of its own), so a deleted campaign's series are gone from the next scrape and the number of
// series is bounded by the campaigns that exist (and by max_campaigns).
//
// Families (all gauges or counters of the campaign's life; counters restart with a campaign of
// the same name):
//   paratune_campaign_best_objective{namespace,campaign,objective}   status.best.objective
//   paratune_campaign_baseline_objective{namespace,campaign,objective}
//   paratune_campaign_trials{namespace,campaign,phase}  TrialRuns by status.phase (Pending
//                          includes not yet started; every phase is present, 0 included)
//   paratune_campaign_ooms_avoided_total{namespace,campaign}  candidates the pre-flight check
//                          refused as predicted to run out of memory (status.trials.oomsAvoided)
//   paratune_campaign_accelerator_hours_spent_total{namespace,campaign}  finished trials
//   paratune_campaign_accelerator_hours_saved_total{namespace,campaign,reason="early_stopping"}
//   paratune_campaign_queue_wait_seconds_total{namespace,campaign}  TrialRuns' queueSeconds
//   paratune_campaign_trial_evictions_total{namespace,campaign}  TrialRuns' evictions (Kueue
//                          suspended an admitted trial again: preemption, PodsReadyTimeout, ...)
//   paratune_campaign_info{namespace,campaign,phase,accelerator,framework} 1
//   paratune_campaign_series_dropped  campaigns left out past max_campaigns (0 normally)
#ifndef PARATUNE_CONTROLLERS_CAMPAIGN_METRICS_H_
#define PARATUNE_CONTROLLERS_CAMPAIGN_METRICS_H_

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "operator/metrics.h"
#include "operator/object_reader.h"

namespace paratune::controllers {

inline constexpr char kCampaignBestObjective[] = "paratune_campaign_best_objective";
inline constexpr char kCampaignBaselineObjective[] = "paratune_campaign_baseline_objective";
inline constexpr char kCampaignTrials[] = "paratune_campaign_trials";
inline constexpr char kCampaignOomsAvoided[] = "paratune_campaign_ooms_avoided_total";
inline constexpr char kCampaignHoursSpent[] = "paratune_campaign_accelerator_hours_spent_total";
inline constexpr char kCampaignHoursSaved[] = "paratune_campaign_accelerator_hours_saved_total";
inline constexpr char kCampaignQueueWait[] = "paratune_campaign_queue_wait_seconds_total";
inline constexpr char kCampaignEvictions[] = "paratune_campaign_trial_evictions_total";
inline constexpr char kCampaignInfo[] = "paratune_campaign_info";
inline constexpr char kCampaignSeriesDropped[] = "paratune_campaign_series_dropped";

struct CampaignMetricsOptions {
  // At most this many campaigns (the first by namespace/name) get series; the rest are counted
  // in paratune_campaign_series_dropped. Bounds a scrape of a cluster with runaway campaigns.
  size_t max_campaigns = 5000;
};

// One scrape's series, by family name (pure; for tests and the collector below). `campaigns`
// and `trials` are TuningCampaign and TrialRun objects; a TrialRun counts for the campaign its
// spec.campaignRef.name names in its namespace.
std::map<std::string, kube::MetricsRegistry::SeriesList> CampaignMetricSeries(
    const std::vector<kube::ObjectPtr>& campaigns, const std::vector<kube::ObjectPtr>& trials,
    const CampaignMetricsOptions& opts = {});

// The family names CampaignMetricSeries returns (dashboards query these).
std::vector<std::string> CampaignMetricNames();

// Registers every family on `metrics`, computed from the readers at each scrape. Borrows the
// readers (they must outlive the registry's scrapes); null `metrics` does nothing.
void ExportCampaignMetrics(const kube::ObjectReader* campaigns, const kube::ObjectReader* trials,
                           kube::MetricsRegistry* metrics, CampaignMetricsOptions opts = {});

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_CAMPAIGN_METRICS_H_
