#include "agents/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <vector>

#include "agents/report/report_scheduling.h"
#include "base/json_fields.h"
#include "base/strings.h"
#include "base/utf8.h"

namespace paratune {

namespace {

std::string ConfigText(const nlohmann::json& c) {
  if (!c.is_object()) return "";
  std::string s;
  for (const auto& [k, v] : c.items()) {
    s += (s.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return s;
}

// Markdown table cells must not contain pipes or newlines.
std::string Cell(std::string s, size_t max = 160) {
  for (char& ch : s) {
    if (ch == '|' || ch == '\n') ch = ' ';
  }
  if (s.size() > max) s = Utf8Head(s, max, "...");
  return s;
}

// Anomalous trials and suspect nodes of a run with simulated or real node placement; nothing
// when the run has neither.
void WriteClusterHealth(const nlohmann::json& run, std::ostream& m) {
  bool any = false;
  for (const auto& t : run.at("trials")) {
    if (!t.contains("anomaly") || !t.at("anomaly").is_object()) continue;
    if (!any) m << "\n## Cluster health\n\n";
    any = true;
    std::string nodes;
    for (const auto& n : t.value("nodes", nlohmann::json::array())) {
      nodes += (nodes.empty() ? "" : ", ") + n.get<std::string>();
    }
    m << "- **" << StringField(t, "name") << "** (" << StringField(t.at("anomaly"), "kind")
      << (nodes.empty() ? "" : " on " + nodes) << "): " << StringField(t.at("anomaly"), "summary")
      << ". Not learned from.\n";
  }
  const nlohmann::json suspects = run.value("suspectNodes", nlohmann::json::array());
  if (!suspects.is_array() || suspects.empty()) return;
  if (!any) m << "\n## Cluster health\n\n";
  for (const auto& n : suspects) {
    std::string reasons;
    for (const auto& r : n.value("reasons", nlohmann::json::array())) {
      reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
    }
    m << "- suspect node **" << StringField(n, "name") << "** (score "
      << Significant(NumberField(n, "score"), 4) << "): " << reasons << "\n";
  }
}

std::string Escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '<')
      o += "&lt;";
    else if (ch == '>')
      o += "&gt;";
    else if (ch == '&')
      o += "&amp;";
    else
      o += ch;
  }
  return o;
}

struct Point {
  double iteration;
  double objective;  // 0 for failures
  bool failed;
};

std::vector<Point> Points(const nlohmann::json& run, const std::string& metric) {
  std::vector<Point> pts;
  for (const auto& t : run.at("trials")) {
    const std::string phase = StringField(t, "phase");
    if (phase != "Succeeded" && phase != "Failed") continue;
    const double obj = phase == "Succeeded"
                           ? NumberField(t.value("metrics", nlohmann::json()), metric.c_str())
                           : 0;
    pts.push_back({NumberField(t, "iteration"), obj, phase == "Failed"});
  }
  return pts;
}

}  // namespace

std::string RenderObjectiveChart(const nlohmann::json& run) {
  const std::string metric = run.at("objective").value("metric", "mfu");
  const bool maximize = run.at("objective").value("maximize", true);
  const auto pts = Points(run, metric);
  const double base = NumberField(run.value("baseline", nlohmann::json()), "objective");
  const double optimum = NumberField(run.value("optimum", nlohmann::json()), "objective");
  double lo = 1e300, hi = 0, max_it = 1;
  for (const auto& p : pts) {
    max_it = std::max(max_it, p.iteration);
    if (p.failed) continue;
    lo = std::min(lo, p.objective);
    hi = std::max(hi, p.objective);
  }
  for (double v : {base, optimum}) {
    if (v > 0) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (hi <= 0) lo = 0, hi = 1;
  const double pad = std::max((hi - lo) * 0.1, hi * 0.02);
  lo = std::max(0.0, lo - pad);
  hi += pad;
  const double W = 640, H = 360, L = 60, R = 20, T = 30, B = 40;
  auto x = [&](double it) {
    return L + (W - L - R) * (max_it <= 1 ? 0.5 : (it - 1) / (max_it - 1));
  };
  auto y = [&](double v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << L << "\" y=\"18\" font-size=\"13\">" << Escape(StringField(run, "campaign"))
    << ": " << Escape(metric) << " per iteration</text>\n"
    << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"black\"/>\n<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\""
    << H - B << "\" stroke=\"black\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4;
    s << "<text x=\"" << L - 6 << "\" y=\"" << y(v) + 4 << "\" text-anchor=\"end\">"
      << Significant(v, 3) << "</text>\n";
  }
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8
    << "\" text-anchor=\"middle\">iteration (1.." << max_it << ")</text>\n";
  if (base > 0) {
    s << "<line class=\"baseline\" x1=\"" << L << "\" y1=\"" << y(base) << "\" x2=\"" << W - R
      << "\" y2=\"" << y(base) << "\" stroke=\"gray\" stroke-dasharray=\"6,4\"/>\n"
      << "<text x=\"" << W - R << "\" y=\"" << y(base) - 4
      << "\" text-anchor=\"end\" fill=\"gray\">baseline</text>\n";
  }
  if (optimum > 0) {
    s << "<line class=\"optimum\" x1=\"" << L << "\" y1=\"" << y(optimum) << "\" x2=\"" << W - R
      << "\" y2=\"" << y(optimum) << "\" stroke=\"green\" stroke-dasharray=\"2,3\"/>\n"
      << "<text x=\"" << W - R << "\" y=\"" << y(optimum) - 4
      << "\" text-anchor=\"end\" fill=\"green\">optimum</text>\n";
  }
  std::string best_path;
  double best = 0;
  for (const auto& p : pts) {
    if (p.failed) continue;
    if (best == 0 || (maximize ? p.objective > best : p.objective < best)) best = p.objective;
    best_path +=
        (best_path.empty() ? "M" : " L") + Fixed(x(p.iteration), 1) + "," + Fixed(y(best), 1);
  }
  if (!best_path.empty()) {
    s << "<path class=\"best\" d=\"" << best_path
      << "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n";
  }
  for (const auto& p : pts) {
    if (p.failed) {
      const double cx = x(p.iteration), cy = H - B - 8;
      s << "<path class=\"failure\" d=\"M" << cx - 5 << "," << cy - 5 << " L" << cx + 5 << ","
        << cy + 5 << " M" << cx - 5 << "," << cy + 5 << " L" << cx + 5 << "," << cy - 5
        << "\" stroke=\"red\" stroke-width=\"2\"/>\n";
    } else {
      s << "<circle class=\"trial\" cx=\"" << x(p.iteration) << "\" cy=\"" << y(p.objective)
        << "\" r=\"4\" fill=\"#ff7f0e\"/>\n";
    }
  }
  s << "</svg>\n";
  return s.str();
}

Result<CampaignReport> RenderCampaignReport(const nlohmann::json& run,
                                            const std::string& chart_file_name) {
  if (!run.is_object() || !run.contains("trials") || !run.at("trials").is_array()) {
    return Status::Invalid("trials: missing; expected the JSON of `paratune simulate -o json`");
  }
  if (!run.contains("objective") || !run.at("objective").is_object() ||
      !run.at("objective").contains("metric")) {
    return Status::Invalid("objective.metric: missing");
  }
  CampaignReport r;
  r.svg = RenderObjectiveChart(run);
  const std::string metric = run.at("objective").value("metric", "mfu");
  const nlohmann::json best = run.value("best", nlohmann::json());
  const nlohmann::json base = run.value("baseline", nlohmann::json());
  const nlohmann::json opt = run.value("optimum", nlohmann::json());
  std::ostringstream m;
  m << "# Tuning report: " << StringField(run, "campaign") << "\n\n"
    << "Strategy `" << StringField(run, "strategy") << "`, objective `" << metric << "` ("
    << (run.at("objective").value("maximize", true) ? "maximize" : "minimize") << ").";
  if (!StringField(run, "stopReason").empty()) {
    m << " Stopped: **" << StringField(run, "stopReason")
      << "**: " << StringField(run, "stopMessage");
  }
  m << "\n\n| | trial | " << metric << " | configuration |\n|---|---|---|---|\n";
  if (base.is_object()) {
    m << "| baseline | " << StringField(base, "trialName") << " | "
      << Significant(NumberField(base, "objective"), 4) << " | "
      << ConfigText(base.value("config", nlohmann::json())) << " |\n";
  }
  if (best.is_object()) {
    m << "| best | " << StringField(best, "trialName") << " | "
      << Significant(NumberField(best, "objective"), 4) << " | "
      << ConfigText(best.value("config", nlohmann::json())) << " |\n";
  }
  if (opt.is_object()) {
    m << "| optimum (exhaustive) | - | " << Significant(NumberField(opt, "objective"), 4) << " | "
      << ConfigText(opt.value("config", nlohmann::json())) << " |\n";
  }
  m << "\n";
  if (best.is_object() && base.is_object()) {
    m << "Improvement over the baseline: "
      << SignedFixed(100 * NumberField(best, "improvementOverBaseline"), 1) << "%.";
  }
  if (best.is_object() && opt.is_object() && NumberField(opt, "objective") > 0) {
    const bool maximize = run.at("objective").value("maximize", true);
    const double frac = maximize ? NumberField(best, "objective") / NumberField(opt, "objective")
                                 : NumberField(opt, "objective") / NumberField(best, "objective");
    m << " Best reaches " << Fixed(100 * frac, 1) << "% of the optimum.";
  }
  const nlohmann::json counts = run.value("trialCounts", nlohmann::json());
  m << " Trials: " << NumberField(counts, "total") << " (" << NumberField(counts, "succeeded")
    << " succeeded, " << NumberField(counts, "failed") << " failed, "
    << (NumberField(counts, "anomalous") > 0
            ? Significant(NumberField(counts, "anomalous"), 4) + " anomalous, "
            : "")
    << NumberField(counts, "rejected") << " candidates rejected before running).";
  if (NumberField(run, "acceleratorHours") > 0) {
    m << " Accelerator-hours spent: " << Significant(NumberField(run, "acceleratorHours"), 4)
      << ".";
  }
  m << "\n\n![" << metric << " per iteration](" << chart_file_name
    << ")\n\n## Trials\n\n| # | trial | change | result | " << metric
    << " | predicted | accelerator-hours | rationale |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& t : run.at("trials")) {
    const std::string phase = StringField(t, "phase");
    std::string result = phase;
    if (phase == "Failed" && t.contains("failure") && t.at("failure").is_object()) {
      result = "Failed: " + StringField(t.at("failure"), "category");
    }
    if (t.contains("anomaly") && t.at("anomaly").is_object()) {
      result = "Anomaly: " + StringField(t.at("anomaly"), "kind");
    }
    const double obj = NumberField(t.value("metrics", nlohmann::json()), metric.c_str());
    m << "| " << NumberField(t, "iteration") << " | " << StringField(t, "name") << " | "
      << Cell(StringField(t, "change"), 60) << " | " << Cell(result) << " | "
      << (obj > 0 ? Significant(obj, 4) : "-") << " | "
      << Significant(NumberField(t.value("prediction", nlohmann::json()), "objective"), 4) << " | "
      << (NumberField(t, "acceleratorHours") > 0
              ? Significant(NumberField(t, "acceleratorHours"), 3)
              : "-")
      << " | " << Cell(StringField(t, "rationale")) << " |\n";
  }
  m << SchedulingSections(run);
  bool any_failure = false;
  for (const auto& t : run.at("trials")) {
    if (!t.contains("failure") || !t.at("failure").is_object()) continue;
    if (!any_failure) m << "\n## Failures\n\n";
    any_failure = true;
    m << "- **" << StringField(t, "name") << "** (" << StringField(t.at("failure"), "category")
      << "): " << StringField(t.at("failure"), "summary") << "\n";
  }
  WriteClusterHealth(run, m);
  const nlohmann::json a = run.value("lastAnalysis", nlohmann::json());
  if (a.is_object() && !StringField(a, "healthState").empty()) {
    m << "\n## Last analysis\n\n" << StringField(a, "summary") << "\n\n";
    for (const auto& sg : a.value("suggestions", nlohmann::json::array())) {
      m << "- " << StringField(sg, "text") << "\n";
    }
  }
  if (run.contains("pool") && run.at("pool").contains("calibration")) {
    const auto& c = run.at("pool").at("calibration");
    m << "\n## Calibration\n\nCompute efficiency "
      << Significant(NumberField(c, "computeEfficiency"), 4) << ", communication efficiency "
      << Significant(NumberField(c, "communicationEfficiency"), 4) << ", memory overhead "
      << Significant(NumberField(c, "memoryOverheadGiB"), 4) << " GiB, validator margin "
      << Significant(NumberField(c, "memoryMarginGiB"), 4) << " GiB, residual spread "
      << Significant(NumberField(c, "residualSigma"), 4) << " (from "
      << NumberField(c, "observations") << " observations).\n";
  }
  r.markdown = m.str();
  return r;
}

std::string WorkloadText(const nlohmann::json& w) {
  if (!w.is_object()) return "";
  const nlohmann::json model = w.value("model", nlohmann::json::object());
  const nlohmann::json training = w.value("training", nlohmann::json::object());
  const nlohmann::json hw = w.value("hardware", nlohmann::json::object());
  std::ostringstream s;
  s << model.value("preset", std::string("custom model")) << " on "
    << hw.value("nodes", 1) * hw.value("devicesPerNode", 1) << " x "
    << hw.value("accelerator", std::string("?")) << ", seq " << training.value("seqLength", 0)
    << ", global batch " << training.value("globalBatchSize", 0);
  return s.str();
}

Result<nlohmann::json> PastOptimizationRecord(const nlohmann::json& run) {
  const nlohmann::json best = run.value("best", nlohmann::json());
  const nlohmann::json base = run.value("baseline", nlohmann::json());
  if (!best.is_object() || !base.is_object() || !best.contains("config") ||
      !base.contains("config")) {
    return Status::Precondition("the run has no successful baseline and best to record");
  }
  const std::string metric =
      run.value("objective", nlohmann::json::object()).value("metric", std::string("mfu"));
  const double gain = best.value("improvementOverBaseline", 0.0);
  std::ostringstream note;
  note << StringField(run, "campaign") << ": " << metric << " " << base.value("objective", 0.0)
       << " -> " << best.value("objective", 0.0) << " (" << std::showpos << std::fixed
       << std::setprecision(1) << 100.0 * gain << "%) in "
       << run.value("trials", nlohmann::json::array()).size()
       << " trials; stopped: " << StringField(run, "stopMessage");
  nlohmann::json rec = {{"id", StringField(run, "campaign") + "/" + StringField(best, "trialName")},
                        {"workload", WorkloadText(run.value("workload", nlohmann::json()))},
                        {"workloadSpec", run.value("workload", nlohmann::json::object())},
                        {"before", base["config"]},
                        {"after", best["config"]},
                        {"metric", metric},
                        {"beforeValue", base.value("objective", 0.0)},
                        {"afterValue", best.value("objective", 0.0)},
                        {"note", note.str()}};
  return nlohmann::json{{"pastOptimizations", nlohmann::json::array({rec})}};
}

}  // namespace paratune
