// Nsight Systems kernel-summary CSV and the TensorBoard op_profile JSON (declared in
// profile_parsers.h).
#include <algorithm>
#include <functional>
#include <sstream>

#include "agents/knowledge/profile_parsers.h"

namespace paratune {

namespace {

// One CSV record (RFC 4180 quoting; kernel names hold commas inside quotes).
std::vector<std::string> CsvFields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        out.back().push_back('"');
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else if (c != '\r') {
      out.back().push_back(c);
    }
  }
  return out;
}

double CellNumber(const std::string& s) {
  std::string t;
  for (char c : s) {
    if (c != ',' && c != '%' && c != ' ') t.push_back(c);
  }
  try {
    return t.empty() ? 0 : std::stod(t);
  } catch (...) {
    return -1;
  }
}

std::string Bottleneck(const ProfileOp& op) {
  if (op.IsCollective()) return "ici";
  if (op.flops_utilization == 0 && op.hbm_bandwidth_utilization == 0) {
    return op.category == "matmul" ? "compute" : "unknown";
  }
  return op.flops_utilization >= op.hbm_bandwidth_utilization ? "compute" : "hbm";
}

double MetricsBandwidth(const nlohmann::json& m) {
  if (m.contains("memoryBandwidth") && m["memoryBandwidth"].is_number()) {
    return m["memoryBandwidth"].get<double>();
  }
  if (m.contains("bandwidthUtils") && m["bandwidthUtils"].is_array() &&
      !m["bandwidthUtils"].empty() && m["bandwidthUtils"][0].is_number()) {
    return m["bandwidthUtils"][0].get<double>();  // index 0: HBM
  }
  return 0;
}

// Leaves of the op_profile tree (the XLA ops), with the category of their parent node.
// The op's share of the profiled time: metrics.time (TensorBoard's fraction) or, in XProf's
// exports, metrics.rawTime (picoseconds) over the root's rawTime.
double TimeFraction(const nlohmann::json& m, double total_raw) {
  if (m.contains("time") && m["time"].is_number()) return m["time"].get<double>();
  if (total_raw > 0 && m.contains("rawTime") && m["rawTime"].is_number()) {
    return m["rawTime"].get<double>() / total_raw;
  }
  return 0;
}

void CollectLeaves(const nlohmann::json& node, const std::string& parent, double total_raw,
                   std::vector<ProfileOp>* out) {
  if (!node.is_object()) return;
  const nlohmann::json& children = node.value("children", nlohmann::json::array());
  std::string name = node.value("name", "");
  if (!children.is_array() || children.empty()) {
    const nlohmann::json& m = node.value("metrics", nlohmann::json::object());
    ProfileOp op;
    op.name = name;
    std::string xla_cat = node.contains("xla") && node["xla"].is_object()
                              ? node["xla"].value("category", parent)
                              : parent;
    op.category = CategorizeOpName(xla_cat + " " + name);
    op.time_fraction = TimeFraction(m, total_raw);
    op.flops_utilization = std::clamp(m.value("flops", 0.0), 0.0, 1.0);
    op.hbm_bandwidth_utilization = std::clamp(MetricsBandwidth(m), 0.0, 1.0);
    op.bottleneck = Bottleneck(op);
    if (op.time_fraction > 0) out->push_back(op);
    return;
  }
  for (const auto& c : children) CollectLeaves(c, name, total_raw, out);
}

// Overview-page numbers, by the names the profile plugin uses or the contract's.
void ReadOverview(const nlohmann::json& o, ProfileSummary* p) {
  if (!o.is_object()) return;
  auto num = [&](const char* k) {
    return o.contains(k) && o[k].is_number() ? o[k].get<double>() : -1;
  };
  if (double v = num("device_duty_cycle_percent"); v >= 0) p->device_duty_cycle = v / 100;
  if (double v = num("deviceDutyCycle"); v >= 0) p->device_duty_cycle = v;
  if (double v = num("steptime_ms_average"); v > 0) p->step_time_seconds = v / 1000;
  if (double v = num("stepTimeSeconds"); v > 0) p->step_time_seconds = v;
  if (double v = num("hbmPeakFraction"); v > 0) p->hbm_peak_fraction = v;
  if (double v = num("memory_usage_percent"); v > 0) p->hbm_peak_fraction = v / 100;
}

}  // namespace

Result<ProfileSummary> ParseNsysKernelCsv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int time_pct = -1, total_ns = -1, name = -1;
  std::vector<ProfileOp> ops;
  double total = 0;
  while (std::getline(in, line)) {
    auto f = CsvFields(line);
    if (name < 0) {
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "Time (%)" || f[i] == "Time(%)") time_pct = static_cast<int>(i);
        if (f[i] == "Total Time (ns)" || f[i] == "Total Time") total_ns = static_cast<int>(i);
        if (f[i] == "Name") name = static_cast<int>(i);
      }
      continue;
    }
    if (static_cast<int>(f.size()) <= name) continue;
    int col = total_ns >= 0 ? total_ns : time_pct;
    if (col < 0 || static_cast<int>(f.size()) <= col) continue;
    double v = CellNumber(f[col]);
    if (v < 0) return Status::Invalid("profile (nsys-csv): bad number \"" + f[col] + "\"");
    ProfileOp op;
    op.name = f[name];
    op.category = CategorizeOpName(op.name);
    op.time_fraction = v;
    total += v;
    ops.push_back(op);
  }
  if (name < 0) {
    return Status::Invalid(
        "profile (nsys-csv): no header with Name and Time (%) or Total Time "
        "(ns) (use nsys stats --report cuda_gpu_kern_sum --format csv)");
  }
  if (ops.empty() || total <= 0) return Status::Invalid("profile (nsys-csv): no kernel rows");
  for (auto& op : ops) op.time_fraction /= total;
  ProfileSummary p;
  for (auto& op : ops) {
    if (op.IsCollective()) p.communication_fraction += op.time_fraction;
    op.bottleneck =
        op.IsCollective()
            ? "unknown"
            : (op.category == "matmul" || op.category == "attention" ? "compute" : "hbm");
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.time_fraction > b.time_fraction; });
  if (ops.size() > 20) ops.resize(20);
  p.top_ops = std::move(ops);
  return p;
}

Result<ProfileSummary> ParseXlaOpProfile(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Invalid("profile (xla-op-profile): not a JSON object");
  }
  const nlohmann::json& prof = j.contains("opProfile") ? j["opProfile"] : j;
  const char* roots[] = {"byCategory", "byProgram", "byCategoryExcludeIdle"};
  const nlohmann::json* root = nullptr;
  for (const char* r : roots) {
    if (prof.contains(r) && prof[r].is_object()) {
      root = &prof[r];
      break;
    }
  }
  if (root == nullptr) {
    return Status::Invalid(
        "profile (xla-op-profile): byCategory: required (TensorBoard "
        "profile plugin op_profile JSON)");
  }
  std::vector<ProfileOp> ops;
  const nlohmann::json& rm = root->value("metrics", nlohmann::json::object());
  const double total_raw = rm.is_object() && rm.contains("rawTime") && rm["rawTime"].is_number()
                               ? rm["rawTime"].get<double>()
                               : 0;
  CollectLeaves(*root, "", total_raw, &ops);
  if (ops.empty()) {
    return Status::Invalid("profile (xla-op-profile): no op with metrics.time or metrics.rawTime");
  }
  ProfileSummary p;
  for (const auto& op : ops) {
    if (op.IsCollective()) p.communication_fraction += op.time_fraction;
  }
  p.communication_fraction = std::min(1.0, p.communication_fraction);
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.time_fraction > b.time_fraction; });
  if (ops.size() > 20) ops.resize(20);
  p.top_ops = std::move(ops);
  if (j.contains("overview")) ReadOverview(j["overview"], &p);
  return p;
}

}  // namespace paratune
