#include "operator/metrics.h"

#include <cstdio>
#include <sstream>

#include "base/strings.h"

namespace paratune::kube {

namespace {
std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string LabelString(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ",";
    out += k + "=\"" + Escape(v) + "\"";
  }
  return out;
}

std::string WithLabels(const std::string& name, const std::string& labels,
                       const std::string& extra = "") {
  std::string all = labels;
  if (!extra.empty()) all = all.empty() ? extra : all + "," + extra;
  return all.empty() ? name : name + "{" + all + "}";
}
}  // namespace

namespace {
thread_local double thread_api_seconds = 0;
}  // namespace

double ThreadApiSeconds() { return thread_api_seconds; }
void AddThreadApiSeconds(double seconds) { thread_api_seconds += seconds; }

std::vector<double> MetricsRegistry::LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

MetricsRegistry::Family& MetricsRegistry::FamilyLocked(const std::string& name,
                                                       const std::string& type) {
  Family& f = families_[name];
  if (f.type.empty()) {
    f.type = type;
    if (type == "histogram" && f.buckets.empty()) f.buckets = LatencyBuckets();
  }
  return f;
}

void MetricsRegistry::DeclareCounter(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  FamilyLocked(name, "counter").help = help;
}

void MetricsRegistry::DeclareGauge(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  FamilyLocked(name, "gauge").help = help;
}

void MetricsRegistry::DeclareHistogram(const std::string& name, const std::string& help,
                                       std::vector<double> buckets) {
  std::lock_guard lock(mu_);
  Family& f = FamilyLocked(name, "histogram");
  f.help = help;
  if (f.series.empty() && !buckets.empty()) f.buckets = std::move(buckets);
}

void MetricsRegistry::Inc(const std::string& name, const Labels& labels, double by) {
  std::lock_guard lock(mu_);
  FamilyLocked(name, "counter").series[LabelString(labels)].value += by;
}

void MetricsRegistry::Set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  FamilyLocked(name, "gauge").series[LabelString(labels)].value = value;
}

void MetricsRegistry::SetGaugeFunction(const std::string& name, const Labels& labels,
                                       std::function<double()> fn) {
  std::lock_guard lock(mu_);
  FamilyLocked(name, "gauge").series[LabelString(labels)].fn = std::move(fn);
}

void MetricsRegistry::SetFamilyFunction(const std::string& name, const std::string& type,
                                        const std::string& help, std::function<SeriesList()> fn) {
  std::lock_guard lock(mu_);
  Family& f = FamilyLocked(name, type);
  f.help = help;
  f.collect = std::move(fn);
}

void MetricsRegistry::Observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  Family& f = FamilyLocked(name, "histogram");
  Series& s = f.series[LabelString(labels)];
  if (s.bucket_counts.empty()) s.bucket_counts.assign(f.buckets.size(), 0);
  for (size_t i = 0; i < f.buckets.size(); ++i) {
    if (value <= f.buckets[i]) s.bucket_counts[i] += 1;
  }
  s.sum += value;
  s.count += 1;
}

double MetricsRegistry::Value(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  if (f->second.collect) {
    const std::string want = LabelString(labels);
    for (const auto& [l, v] : f->second.collect()) {
      if (LabelString(l) == want) return v;
    }
    return 0;
  }
  auto s = f->second.series.find(LabelString(labels));
  if (s == f->second.series.end()) return 0;
  return s->second.fn ? s->second.fn() : s->second.value;
}

double MetricsRegistry::HistogramCount(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.series.find(LabelString(labels));
  return s == f->second.series.end() ? 0 : static_cast<double>(s->second.count);
}

std::string MetricsRegistry::Render() const {
  std::lock_guard lock(mu_);
  std::ostringstream out;
  for (const auto& [name, f] : families_) {
    if (!f.help.empty()) out << "# HELP " << name << " " << f.help << "\n";
    out << "# TYPE " << name << " " << f.type << "\n";
    if (f.collect) {
      for (const auto& [labels, v] : f.collect()) {
        out << WithLabels(name, LabelString(labels)) << " " << Significant(v, 17) << "\n";
      }
      continue;
    }
    for (const auto& [labels, s] : f.series) {
      if (f.type != "histogram") {
        out << WithLabels(name, labels) << " " << Significant(s.fn ? s.fn() : s.value, 17) << "\n";
        continue;
      }
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        out << WithLabels(name + "_bucket", labels, "le=\"" + Significant(f.buckets[i], 17) + "\"")
            << " " << (i < s.bucket_counts.size() ? s.bucket_counts[i] : 0) << "\n";
      }
      out << WithLabels(name + "_bucket", labels, "le=\"+Inf\"") << " " << s.count << "\n";
      out << WithLabels(name + "_sum", labels) << " " << Significant(s.sum, 17) << "\n";
      out << WithLabels(name + "_count", labels) << " " << s.count << "\n";
    }
  }
  return out.str();
}

}  // namespace paratune::kube
