#include "agents/report/report_scheduling.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "base/json_fields.h"
#include "base/strings.h"

namespace paratune {

namespace {

using nlohmann::json;

std::string ConfigText(const json& c) {
  std::string s;
  if (!c.is_object()) return s;
  for (const auto& [k, v] : c.items()) {
    s += (s.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return s;
}

void WriteBaseline(const json& pre, std::ostream& m) {
  if (!pre.is_object() || !pre.value("rejected", false)) return;
  m << "\n## Baseline pre-flight\n\nThe campaign's baseline ("
    << ConfigText(pre.value("config", json())) << ") was **not launched**: ";
  if (!StringField(pre, "constraint").empty()) {
    m << "it breaks a constraint: " << StringField(pre, "constraint") << ".\n";
  } else {
    m << "predicted peak memory " << Fixed(NumberField(pre, "predictedPeakMemoryGiB"), 1)
      << " GiB against " << Fixed(NumberField(pre, "capacityGiB"), 1)
      << " GiB of device memory: verdict " << StringField(pre, "verdict")
      << ", beyond even the optimistic end of the estimate (the prediction less "
      << Fixed(std::max(NumberField(pre, "uncertaintyGiB"), NumberField(pre, "intervalGiB")), 1)
      << " GiB, the larger of the model's calibrated uncertainty and its interval).\n";
  }
  const json start = pre.value("startedFrom", json());
  if (start.is_object()) {
    m << "The campaign started from the nearest feasible configuration ("
      << ConfigText(start.value("config", json())) << ", "
      << Fixed(NumberField(start, "changedParameters"), 0) << " parameter(s) changed, predicted "
      << Fixed(NumberField(start, "predictedPeakMemoryGiB"), 1)
      << " GiB), which stands in as the baseline.\n";
  } else {
    m << "No configuration of the search space is predicted to fit.\n";
  }
}

void WriteQueue(const json& trials, std::ostream& m) {
  if (!trials.is_array()) return;
  double total = 0, longest = 0;
  int queued = 0;
  std::string longest_name;
  for (const auto& t : trials) {
    if (!t.is_object() || !t.contains("queueSeconds") || !t.at("queueSeconds").is_number())
      continue;
    const double q = t.at("queueSeconds").get<double>();
    ++queued;
    total += q;
    if (q >= longest) {
      longest = q;
      longest_name = StringField(t, "name");
    }
  }
  if (queued == 0) return;
  m << "\n## Queue\n\n"
    << queued << " trial(s) waited for admission in the Kueue queue for " << Fixed(total, 0)
    << " s in total (longest: " << longest_name << ", " << Fixed(longest, 0)
    << " s). Queue time does not count against the trial timeout.\n";
}

}  // namespace

std::string SchedulingSections(const json& run) {
  if (!run.is_object()) return "";
  std::ostringstream m;
  WriteBaseline(run.value("baselinePreflight", json()), m);
  WriteQueue(run.value("trials", json()), m);
  return m.str();
}

}  // namespace paratune
