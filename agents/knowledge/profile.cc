#include "agents/knowledge/profile.h"

#include <algorithm>
#include <cctype>

#include "agents/knowledge/gzip_text.h"
#include "agents/knowledge/profile_parsers.h"
#include "base/json_fields.h"
#include "base/strings.h"

namespace paratune {

namespace {

const std::vector<std::string>& Categories() {
  static const std::vector<std::string> k = {
      "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
      "matmul",     "attention",  "fusion",         "copy",       "custom"};
  return k;
}

bool Has(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (s.find(w) != std::string::npos) return true;
  }
  return false;
}

Result<ProfileOp> OpFromJson(const nlohmann::json& j, const std::string& path) {
  JsonFields f(j, path);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  ProfileOp op;
  PARATUNE_RETURN_IF_ERROR(f.ReadString("name", &op.name));
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("category", Categories(), &op.category));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("timeFraction", 0, 1, &op.time_fraction));
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum(
      "bottleneck", {"compute", "hbm", "vmem", "ici", "dcn", "unknown"}, &op.bottleneck));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("flopsUtilization", 0, 1, &op.flops_utilization));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadDouble("hbmBandwidthUtilization", 0, 1, &op.hbm_bandwidth_utilization));
  return op;
}

}  // namespace

bool ProfileOp::IsCollective() const {
  return category == "all-reduce" || category == "all-gather" || category == "reduce-scatter" ||
         category == "all-to-all" || category == "collective-permute";
}

std::string CategorizeOpName(const std::string& name) {
  std::string n = Lower(name);
  if (Has(n, {"allreduce", "all-reduce", "all_reduce"})) return "all-reduce";
  if (Has(n, {"allgather", "all-gather", "all_gather"})) return "all-gather";
  if (Has(n, {"reducescatter", "reduce-scatter", "reduce_scatter"})) return "reduce-scatter";
  if (Has(n, {"alltoall", "all-to-all", "all_to_all"})) return "all-to-all";
  if (Has(n, {"sendrecv", "collective-permute", "collective_permute", "ncclkernel_send",
              "ncclkernel_recv", "nccldevkernel_send", "nccldevkernel_sendrecv"})) {
    return "collective-permute";
  }
  if (Has(n, {"flash", "fmha", "attn", "attention", "sdpa", "softmax"})) return "attention";
  if (Has(n, {"gemm", "matmul", "aten::mm", "aten::bmm", "aten::addmm", "cublas", "cutlass", "xmma",
              "convolution", "dot"})) {
    return "matmul";
  }
  if (Has(n, {"memcpy", "memset", "copy", "transpose", "data formatting"})) return "copy";
  if (Has(n, {"fusion", "elementwise", "vectorized", "triton", "reduce", "layer_norm", "rms"})) {
    return "fusion";
  }
  return "custom";
}

nlohmann::json ProfileSummary::ToJson() const {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : top_ops) {
    ops.push_back({{"name", op.name},
                   {"category", op.category},
                   {"timeFraction", op.time_fraction},
                   {"bottleneck", op.bottleneck},
                   {"flopsUtilization", op.flops_utilization},
                   {"hbmBandwidthUtilization", op.hbm_bandwidth_utilization}});
  }
  return {{"stepTimeSeconds", step_time_seconds},
          {"deviceDutyCycle", device_duty_cycle},
          {"communicationFraction", communication_fraction},
          {"hbmPeakFraction", hbm_peak_fraction},
          {"topOps", ops},
          {"config", ConfigToJson(config)}};
}

Result<ProfileSummary> ProfileFromJson(const nlohmann::json& j) {
  JsonFields f(j, "profile");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(
      f.CheckKnownKeys({"stepTimeSeconds", "deviceDutyCycle", "communicationFraction",
                        "hbmPeakFraction", "topOps", "config"}));
  ProfileSummary p;
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("stepTimeSeconds", 0, 1e7, &p.step_time_seconds));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("deviceDutyCycle", 0, 1, &p.device_duty_cycle));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("communicationFraction", 0, 1, &p.communication_fraction));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("hbmPeakFraction", 0, 2, &p.hbm_peak_fraction));
  const nlohmann::json& ops = f.Get("topOps");
  if (!ops.is_null() && !ops.is_array()) {
    return Status::Invalid("profile.topOps: must be a list");
  }
  for (size_t i = 0; ops.is_array() && i < ops.size(); ++i) {
    auto op = OpFromJson(ops[i], "profile.topOps[" + std::to_string(i) + "]");
    if (!op.ok()) return op.status();
    p.top_ops.push_back(std::move(*op));
  }
  if (f.Has("config")) {
    auto c = ConfigFromJson(f.Get("config"), "profile.config");
    if (!c.ok()) return c.status();
    p.config = *c;
  }
  std::stable_sort(p.top_ops.begin(), p.top_ops.end(),
                   [](const auto& a, const auto& b) { return a.time_fraction > b.time_fraction; });
  return p;
}

const std::vector<std::string>& ProfileFormats() {
  static const std::vector<std::string> k = {"summary", "pytorch-table", "pytorch-trace",
                                             "nsys-csv", "xla-op-profile"};
  return k;
}

Result<ProfileSummary> ParseProfile(const std::string& raw, const std::string& format) {
  std::string inflated;
  if (IsGzip(raw)) {  // e.g. torch.profiler's *.pt.trace.json.gz
    auto g = Gunzip(raw);
    if (!g.ok()) return g.status().WithPrefix("profile");
    inflated = std::move(*g);
  }
  const std::string& text = inflated.empty() ? raw : inflated;
  if (format == "summary") {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return Status::Invalid("profile: not valid JSON");
    return ProfileFromJson(j);
  }
  if (format == "pytorch-table") return ParsePytorchTable(text);
  if (format == "pytorch-trace") return ParseChromeTrace(text);
  if (format == "nsys-csv") return ParseNsysKernelCsv(text);
  if (format == "xla-op-profile") return ParseXlaOpProfile(text);
  return Status::Invalid("--profile-format: unknown format \"" + format +
                         "\" (summary, pytorch-table, pytorch-trace, nsys-csv, xla-op-profile)");
}

}  // namespace paratune
