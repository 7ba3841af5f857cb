#include "agents/health/diagnostic_checks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "agents/model/catalog.h"
#include "base/strings.h"
#include "base/utf8.h"

namespace paratune::health {

namespace {

constexpr const char* kCudaImage = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04";
constexpr const char* kPytorchImage = "nvcr.io/nvidia/pytorch:24.05-py3";

// Thresholds (fractions of the catalog figure, or of the node's median GPU) below which a check
// fails. Set loosely enough that a healthy node passes with room: a healthy H100 sustains ~0.75
// of its dense bf16 peak in an 8192^3 GEMM, ~0.8-0.9 of its HBM bandwidth in a large copy.
constexpr double kMinGemmFraction = 0.55;
constexpr double kMinHbmFraction = 0.6;
constexpr double kMinBusFraction = 0.7;
constexpr double kMinClockFraction = 0.8;
constexpr double kMinOfMedian = 0.85;  // one GPU far below its siblings is sick

// NVML clock throttle reason bits (nvmlClocksThrottleReasons): the ones that mean hardware
// trouble rather than idling, application clocks or the software power cap.
constexpr uint64_t kGpuIdle = 0x1;
constexpr uint64_t kHwSlowdown = 0x8;
constexpr uint64_t kSwThermal = 0x20;
constexpr uint64_t kHwThermal = 0x40;
constexpr uint64_t kHwPowerBrake = 0x80;

const char* kGemmScript = R"PY(import time, torch
n = 8192
for i in range(torch.cuda.device_count()):
    torch.cuda.set_device(i)
    a = torch.randn(n, n, device='cuda', dtype=torch.bfloat16)
    b = torch.randn(n, n, device='cuda', dtype=torch.bfloat16)
    for _ in range(5):
        a @ b
    torch.cuda.synchronize()
    t, iters = time.perf_counter(), 50
    for _ in range(iters):
        a @ b
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / iters
    print(f'gpu {i}: gemm bf16 {n}x{n}x{n} {2 * n**3 / dt / 1e12:.1f} TFLOPS', flush=True)
)PY";

const char* kHbmScript = R"PY(import time, torch
mib = 4096
for i in range(torch.cuda.device_count()):
    torch.cuda.set_device(i)
    x = torch.empty(mib * 2**20, dtype=torch.uint8, device='cuda')
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    t, iters = time.perf_counter(), 20
    for _ in range(iters):
        y.copy_(x)
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / iters
    print(f'gpu {i}: hbm copy {mib} MiB {2 * x.numel() / dt / 1e9:.1f} GB/s', flush=True)
)PY";

// Run by torchrun on both pods; rank 0 prints nccl-tests' all_reduce_perf table (in-place
// timings in both column groups) and its "# Avg bus bandwidth" line.
const char* kAllReduceScript = R"PY(import os, socket, time, torch
import torch.distributed as dist
dist.init_process_group('nccl')
r, w = dist.get_rank(), dist.get_world_size()
local = int(os.environ['LOCAL_RANK'])
torch.cuda.set_device(local)
names = [None] * w
dist.all_gather_object(names, (socket.gethostname(), local, os.getpid()))
if r == 0:
    print('# paratune nccl-allreduce: all_reduce_perf format, in-place sum of float')
    print('#\n# Using devices')
    for i, (h, d, p) in enumerate(names):
        print(f'#  Rank {i:2d} Group  0 Pid {p:6d} on {h:>10} device {d:2d} [0x00] '
              + torch.cuda.get_device_name(local))
    print('#\n#       size         count      type   redop    root     time   algbw   busbw'
          ' #wrong     time   algbw   busbw #wrong')
    print('#        (B)    (elements)                               (us)  (GB/s)  (GB/s)'
          '            (us)  (GB/s)  (GB/s)', flush=True)
total, rows, size = 0.0, 0, 512 * 2**20
while size <= 8 * 2**30:
    x = torch.ones(size // 4, device='cuda')
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    t, iters = time.perf_counter(), 10
    for _ in range(iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / iters
    alg = size / dt / 1e9
    bus = alg * 2 * (w - 1) / w
    total, rows = total + bus, rows + 1
    if r == 0:
        us = dt * 1e6
        print(f'{size:12d} {size // 4:13d}     float     sum      -1 {us:8.1f} {alg:7.2f} '
              f'{bus:7.2f}      0 {us:8.1f} {alg:7.2f} {bus:7.2f}      0', flush=True)
    del x
    size *= 2
if r == 0:
    print(f'# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {total / rows:.2f} \n#',
          flush=True)
dist.destroy_process_group()
)PY";

// ecc-xid: the nvidia-smi counters, then the kernel's NVRM Xid lines. Reading the kernel log
// needs CAP_SYSLOG or kernel.dmesg_restrict=0; when it is refused the check says so and judges
// the counters alone (the Job is never privileged).
const char* kEccXidScript =
    "nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total,"
    "remapped_rows.failure,retired_pages.pending --format=csv,noheader; "
    "echo '# kernel log'; "
    "if dmesg >/tmp/kmsg 2>/dev/null; then grep -F 'NVRM: Xid' /tmp/kmsg | tail -n 50; "
    "else echo '# kernel log unreadable'; fi";

std::vector<CheckSpec> BuildWhitelist() {
  std::vector<CheckSpec> w;
  w.push_back({"gpu-clocks",
               "SM clock of every GPU against its maximum, and the active throttle reasons "
               "(HW Slowdown, thermal, power brake): a pass means no GPU is held down by hardware",
               kCudaImage,
               {"nvidia-smi",
                "--query-gpu=index,clocks.sm,clocks.max.sm,clocks_throttle_reasons.active,"
                "clocks_throttle_reasons.hw_slowdown,clocks_throttle_reasons.sw_thermal_slowdown,"
                "temperature.gpu,power.draw",
                "--format=csv,noheader"},
               1,
               "compute"});
  w.push_back({"ecc-xid",
               "uncorrected ECC errors, row-remapping failures, pending page retirements and "
               "hardware Xid events: a pass means the GPUs' memory and bus report no fault",
               kCudaImage,
               {"/bin/sh", "-c", kEccXidScript},
               1,
               "hardware"});
  w.push_back({"gemm",
               "bf16 8192^3 matmul TFLOPS on every GPU against the catalog peak and the other "
               "GPUs: a pass means every GPU computes at full speed",
               kPytorchImage,
               {"python3", "-c", kGemmScript},
               1,
               "compute"});
  w.push_back({"hbm-bandwidth",
               "device-to-device copy GB/s on every GPU against the catalog HBM bandwidth: a pass "
               "means every GPU's memory runs at full speed",
               kPytorchImage,
               {"python3", "-c", kHbmScript},
               1,
               "memory"});
  w.push_back({"nccl-allreduce",
               "all-reduce bus bandwidth between the suspect node and a healthy peer against the "
               "expected inter-node figure: a pass means the node's network links are healthy",
               kPytorchImage,
               {"torchrun", "--nnodes=2", "--nproc-per-node=gpu",
                "--node-rank=$(JOB_COMPLETION_INDEX)", "--master-addr=$(PARATUNE_DIAG_MASTER)",
                "--master-port=29500", "--no-python", "python3", "-c", kAllReduceScript},
               2,
               "fabric"});
  return w;
}

// ---- text helpers -------------------------------------------------------------------------

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(Trim(line));
  return out;
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(Trim(field));
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A number, optionally followed by a unit ("1980 MHz", "120.53 W", "45"). nullopt for
// nvidia-smi's "[N/A]", "[Not Supported]", "[Unknown Error]" and anything else.
std::optional<double> LeadingNumber(const std::string& field) {
  if (field.empty() || field[0] == '[') return std::nullopt;
  const char* begin = field.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return std::nullopt;
  const std::string rest = Trim(std::string(end));
  if (!rest.empty() && !std::isalpha(static_cast<unsigned char>(rest[0])) && rest[0] != '%') {
    return std::nullopt;
  }
  return v;
}

bool NotAvailable(const std::string& field) { return !field.empty() && field[0] == '['; }

Status LineError(const std::string& check, size_t line_no, const std::string& line,
                 const std::string& what) {
  std::string shown = Utf8Head(line, 123, "...");
  return Status::Invalid(check + ": output line " + std::to_string(line_no) + " \"" + shown +
                         "\": " + what);
}

double Expect(const nlohmann::json& expected, const char* key, double fallback) {
  if (expected.is_object() && expected.contains(key) && expected[key].is_number()) {
    return expected[key].get<double>();
  }
  return fallback;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// nvidia-smi's answer when the driver or a device cannot be reached: a real fault, not a format
// error.
bool IsSmiFailureLine(const std::string& line) {
  return line.rfind("Unable to determine the device handle", 0) == 0 ||
         line.rfind("NVIDIA-SMI has failed", 0) == 0 || line.rfind("No devices were found", 0) == 0;
}

// ---- gpu-clocks -----------------------------------------------------------------------------

std::optional<uint64_t> HexMask(const std::string& field) {
  if (field.size() < 3 || field[0] != '0' || (field[1] != 'x' && field[1] != 'X')) {
    return std::nullopt;
  }
  char* end = nullptr;
  const uint64_t v = std::strtoull(field.c_str() + 2, &end, 16);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return v;
}

// "Active" -> true, "Not Active" -> false, "[N/A]" -> false; anything else is a format error.
std::optional<bool> ActiveFlag(const std::string& field) {
  if (field == "Active") return true;
  if (field == "Not Active" || NotAvailable(field)) return false;
  return std::nullopt;
}

std::string ThrottleNames(uint64_t mask, bool hw, bool sw_thermal) {
  std::vector<std::string> names;
  if (hw || (mask & kHwSlowdown)) names.push_back("HW Slowdown");
  if (mask & kHwThermal) names.push_back("HW Thermal Slowdown");
  if (mask & kHwPowerBrake) names.push_back("HW Power Brake Slowdown");
  if (sw_thermal || (mask & kSwThermal)) names.push_back("SW Thermal Slowdown");
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// One CSV row of the gpu-clocks query into `gpu`; a problem found is appended to `problems`.
Status ParseClockRow(const std::vector<std::string>& f, size_t line_no, const std::string& line,
                     double min_clock, nlohmann::json* gpu, std::vector<std::string>* problems) {
  const auto index = LeadingNumber(f[0]);
  if (!index || *index < 0 || *index != std::floor(*index)) {
    return LineError("gpu-clocks", line_no, line, "index \"" + f[0] + "\" is not a GPU index");
  }
  const auto sm = LeadingNumber(f[1]), max_sm = LeadingNumber(f[2]);
  const auto mask = NotAvailable(f[3]) ? std::optional<uint64_t>(0) : HexMask(f[3]);
  const auto hw = ActiveFlag(f[4]), sw_thermal = ActiveFlag(f[5]);
  if ((!sm && !NotAvailable(f[1])) || (!max_sm && !NotAvailable(f[2]))) {
    return LineError("gpu-clocks", line_no, line, "clocks must read like \"1980 MHz\"");
  }
  if (!mask) return LineError("gpu-clocks", line_no, line, "throttle reasons must be hex 0x...");
  if (!hw || !sw_thermal) {
    return LineError("gpu-clocks", line_no, line, "slowdowns must be Active or Not Active");
  }
  const int idx = static_cast<int>(*index);
  (*gpu)["index"] = idx;
  if (sm) (*gpu)["smClockMHz"] = *sm;
  if (max_sm) (*gpu)["maxSmClockMHz"] = *max_sm;
  (*gpu)["throttleReasons"] = f[3];
  if (auto t = LeadingNumber(f[6])) (*gpu)["temperatureC"] = *t;
  if (auto p = LeadingNumber(f[7])) (*gpu)["powerW"] = *p;
  const std::string throttles = ThrottleNames(*mask, *hw, *sw_thermal);
  const bool idle = (*mask & kGpuIdle) != 0;
  const bool slow = !idle && sm && max_sm && *max_sm > 0 && *sm < min_clock * *max_sm;
  (*gpu)["idle"] = idle;
  (*gpu)["throttled"] = !throttles.empty() || slow;
  if (throttles.empty() && !slow) return Status::Ok();
  std::string p = "GPU " + std::to_string(idx);
  if (sm && max_sm) p += " SM clock " + Fixed(*sm, 0) + " MHz of " + Fixed(*max_sm, 0) + " MHz";
  if (!throttles.empty())
    p += (sm && max_sm ? "; " : " ") + std::string("throttle reasons ") + throttles;
  problems->push_back(p);
  return Status::Ok();
}

Result<CheckResult> ParseGpuClocks(const std::string& output, const nlohmann::json& expected) {
  const double min_clock = Expect(expected, "minClockFraction", kMinClockFraction);
  CheckResult r;
  nlohmann::json gpus = nlohmann::json::array();
  std::vector<std::string> problems;
  const auto lines = Lines(output);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty() || line[0] == '#') continue;
    if (IsSmiFailureLine(line)) {
      problems.push_back("nvidia-smi: " + line);
      continue;
    }
    const auto f = SplitCsv(line);
    if (f.size() != 8) {
      return LineError("gpu-clocks", i + 1, line,
                       "expected 8 comma-separated fields (index, clocks.sm, clocks.max.sm, "
                       "throttle reasons, hw_slowdown, sw_thermal_slowdown, temperature.gpu, "
                       "power.draw), got " +
                           std::to_string(f.size()));
    }
    nlohmann::json gpu;
    PARATUNE_RETURN_IF_ERROR(ParseClockRow(f, i + 1, line, min_clock, &gpu, &problems));
    gpus.push_back(gpu);
  }
  if (gpus.empty() && problems.empty()) {
    return Status::Invalid("gpu-clocks: output holds no nvidia-smi GPU line");
  }
  r.measurements = {{"gpus", gpus}};
  r.passed = problems.empty();
  if (!r.passed) {
    r.summary = problems[0];
    for (size_t i = 1; i < problems.size(); ++i) r.summary += "; " + problems[i];
  } else {
    r.summary = std::to_string(gpus.size()) + " GPUs: no hardware throttling";
    const auto& g = gpus[0];
    if (g.contains("maxSmClockMHz")) {
      r.summary += ", max SM clock " + Fixed(g["maxSmClockMHz"].get<double>(), 0) + " MHz";
    }
  }
  return r;
}

// ---- ecc-xid --------------------------------------------------------------------------------

// Xid codes that point at the GPU, its memory or its bus (NVIDIA's Xid catalog), not at the
// application (13, 31, 43, 45 are usually a program's own fault).
bool IsHardwareXid(int xid) {
  static const std::set<int> kHardware = {48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140};
  return kHardware.count(xid) > 0;
}

// "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus." -> {pci, xid, text}.
std::optional<nlohmann::json> ParseXidLine(const std::string& line) {
  const auto at = line.find("NVRM: Xid (");
  if (at == std::string::npos) return std::nullopt;
  const auto close = line.find("):", at);
  if (close == std::string::npos) return std::nullopt;
  std::string pci = line.substr(at + 11, close - at - 11);
  if (pci.rfind("PCI:", 0) == 0) pci = pci.substr(4);
  const char* begin = line.c_str() + close + 2;
  char* end = nullptr;
  const long xid = std::strtol(begin, &end, 10);
  if (end == begin || xid <= 0) return std::nullopt;
  return nlohmann::json{{"pci", pci}, {"xid", xid}, {"line", line.substr(at)}};
}

Status ParseEccRow(const std::vector<std::string>& f, size_t line_no, const std::string& line,
                   nlohmann::json* gpu, std::vector<std::string>* problems) {
  const auto index = LeadingNumber(f[0]);
  const auto ecc = LeadingNumber(f[1]);
  auto yes_no = [](const std::string& s) -> std::optional<bool> {
    if (s == "Yes") return true;
    if (s == "No" || NotAvailable(s)) return false;
    return std::nullopt;
  };
  const auto remap_failed = yes_no(f[2]), pending = yes_no(f[3]);
  if (!index || (!ecc && !NotAvailable(f[1])) || !remap_failed || !pending) {
    return LineError("ecc-xid", line_no, line,
                     "expected index, uncorrected ECC count, remapped_rows.failure (Yes/No), "
                     "retired_pages.pending (Yes/No)");
  }
  const int idx = static_cast<int>(*index);
  *gpu = {
      {"index", idx}, {"remappedRowsFailure", *remap_failed}, {"retiredPagesPending", *pending}};
  if (ecc) (*gpu)["uncorrectedEcc"] = static_cast<int64_t>(*ecc);
  const std::string name = "GPU " + std::to_string(idx);
  if (ecc && *ecc > 0) problems->push_back(name + " " + Fixed(*ecc, 0) + " uncorrected ECC errors");
  if (*remap_failed) problems->push_back(name + " row remapping failed");
  if (*pending) problems->push_back(name + " page retirement pending");
  return Status::Ok();
}

Result<CheckResult> ParseEccXid(const std::string& output) {
  CheckResult r;
  nlohmann::json gpus = nlohmann::json::array(), xids = nlohmann::json::array();
  std::vector<std::string> problems;
  bool in_kernel_log = false, log_readable = true, saw_smi = false;
  const auto lines = Lines(output);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (auto xid = ParseXidLine(line)) {
      const int code = (*xid)["xid"].get<int>();
      if (IsHardwareXid(code)) {
        problems.push_back("Xid " + std::to_string(code) + " on PCI " +
                           (*xid)["pci"].get<std::string>());
      }
      xids.push_back(*xid);
      continue;
    }
    if (line == "# kernel log unreadable") log_readable = false;
    if (line.rfind("# kernel log", 0) == 0) in_kernel_log = true;
    if (line.empty() || line[0] == '#' || in_kernel_log) continue;
    if (IsSmiFailureLine(line)) {
      saw_smi = true;
      problems.push_back("nvidia-smi: " + line);
      continue;
    }
    const auto f = SplitCsv(line);
    if (f.size() != 4) {
      return LineError("ecc-xid", i + 1, line,
                       "expected 4 comma-separated fields, got " + std::to_string(f.size()));
    }
    nlohmann::json gpu;
    PARATUNE_RETURN_IF_ERROR(ParseEccRow(f, i + 1, line, &gpu, &problems));
    gpus.push_back(gpu);
  }
  if (gpus.empty() && !saw_smi && xids.empty()) {
    return Status::Invalid("ecc-xid: output holds no nvidia-smi GPU line and no Xid line");
  }
  r.measurements = {{"gpus", gpus}, {"xids", xids}, {"kernelLogReadable", log_readable}};
  r.passed = problems.empty();
  if (!r.passed) {
    r.summary = problems[0];
    for (size_t i = 1; i < problems.size() && i < 4; ++i) r.summary += "; " + problems[i];
  } else {
    r.summary = std::to_string(gpus.size()) + " GPUs: no uncorrected ECC errors, no hardware Xid";
    if (!log_readable) r.summary += " (kernel log not readable: Xid events unchecked)";
  }
  return r;
}

// ---- gemm, hbm-bandwidth --------------------------------------------------------------------

struct PerGpuFormat {
  const char* check;
  const char* kind;      // word after "gpu N:"
  const char* unit;      // last word
  const char* expect;    // key in `expected` of the catalog figure
  const char* fraction;  // key of the threshold fraction
  double default_fraction;
  const char* measure;  // measurement key
};
const PerGpuFormat kGemm = {"gemm",           "gemm",  "TFLOPS", "peakTflops", "minGemmFraction",
                            kMinGemmFraction, "tflops"};
const PerGpuFormat kHbm = {"hbm-bandwidth",  "hbm",           "GB/s", "hbmGBps",
                           "minHbmFraction", kMinHbmFraction, "gbps"};

// A script that died (Python traceback, CUDA error) is a finding about the node, not a format
// error: the last such line becomes the summary.
std::optional<std::string> ScriptFailure(const std::vector<std::string>& lines) {
  bool traceback = false;
  std::string last;
  for (const auto& l : lines) {
    if (l.rfind("Traceback (most recent call last)", 0) == 0) traceback = true;
    if (l.find("Error") != std::string::npos || l.find("error") != std::string::npos) last = l;
  }
  if (!traceback && last.find("CUDA error") == std::string::npos) return std::nullopt;
  return last.empty() ? std::string("the script failed") : last;
}

Result<CheckResult> ParsePerGpu(const std::string& output, const nlohmann::json& expected,
                                const PerGpuFormat& fmt) {
  std::map<int, double> values;
  const auto lines = Lines(output);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.rfind("gpu ", 0) != 0) continue;
    const auto w = Words(line);
    const auto idx = w.size() >= 2 ? LeadingNumber(w[1].substr(0, w[1].size() - 1)) : std::nullopt;
    const auto v = w.size() >= 4 ? LeadingNumber(w[w.size() - 2]) : std::nullopt;
    if (w.size() < 5 || w[1].back() != ':' || !idx || w[2] != fmt.kind || w.back() != fmt.unit ||
        !v) {
      return LineError(
          fmt.check, i + 1, line,
          std::string("expected \"gpu N: ") + fmt.kind + " ... VALUE " + fmt.unit + "\"");
    }
    values[static_cast<int>(*idx)] = *v;
  }
  CheckResult r;
  if (values.empty()) {
    if (auto failure = ScriptFailure(lines)) {
      r.summary = std::string(fmt.check) + " script failed: " + *failure;
      r.measurements = {{"gpus", nlohmann::json::array()}};
      return r;
    }
    return Status::Invalid(std::string(fmt.check) + ": output holds no \"gpu N: " + fmt.kind +
                           " ... " + fmt.unit + "\" line");
  }
  std::vector<double> all;
  for (const auto& [idx, v] : values) all.push_back(v);
  const double median = Median(all);
  const double peak = Expect(expected, fmt.expect, 0);
  const double floor = peak * Expect(expected, fmt.fraction, fmt.default_fraction);
  nlohmann::json gpus = nlohmann::json::array();
  std::vector<std::string> problems;
  for (const auto& [idx, v] : values) {
    gpus.push_back({{"index", idx}, {fmt.measure, v}});
    const bool below_peak = peak > 0 && v < floor;
    const bool below_peers = values.size() >= 2 && v < kMinOfMedian * median;
    if (!below_peak && !below_peers) continue;
    std::string p = "GPU " + std::to_string(idx) + " " + Fixed(v, 1) + " " + fmt.unit;
    if (peak > 0) p += " (" + Fixed(100 * v / peak, 0) + "% of " + Fixed(peak, 0) + ")";
    if (below_peers) p += ", " + Fixed(100 * v / median, 0) + "% of the node median";
    problems.push_back(p);
  }
  r.measurements = {{"gpus", gpus}, {"median", median}};
  if (peak > 0) r.measurements["expected"] = peak;
  r.passed = problems.empty();
  if (!r.passed) {
    r.summary = problems[0];
    for (size_t i = 1; i < problems.size() && i < 4; ++i) r.summary += "; " + problems[i];
  } else {
    r.summary =
        std::to_string(values.size()) + " GPUs: median " + Fixed(median, 1) + " " + fmt.unit +
        (peak > 0 ? " (" + Fixed(100 * median / peak, 0) + "% of " + Fixed(peak, 0) + ")" : "");
  }
  return r;
}

// ---- nccl-allreduce -------------------------------------------------------------------------

struct AllReduceRow {
  double bytes = 0, busbw = 0;
  int64_t wrong = 0;
};

// A row of all_reduce_perf's table: size count type redop root time algbw busbw #wrong (then the
// same four for in-place). "N/A" stands in for #wrong when validation is off.
Result<AllReduceRow> ParseAllReduceRow(const std::vector<std::string>& w, size_t line_no,
                                       const std::string& line) {
  if (w.size() < 9) {
    return LineError("nccl-allreduce", line_no, line, "table row has fewer than 9 columns");
  }
  const auto bytes = LeadingNumber(w[0]), busbw = LeadingNumber(w[7]);
  if (!bytes || !busbw || !LeadingNumber(w[1]) || !LeadingNumber(w[5]) || !LeadingNumber(w[6])) {
    return LineError("nccl-allreduce", line_no, line,
                     "expected size count type redop root time algbw busbw #wrong");
  }
  AllReduceRow row{*bytes, *busbw, 0};
  for (size_t k : {size_t{8}, size_t{12}}) {
    if (k < w.size()) {
      if (auto n = LeadingNumber(w[k])) row.wrong += static_cast<int64_t>(*n);
    }
  }
  return row;
}

Result<CheckResult> ParseAllReduce(const std::string& output, const nlohmann::json& expected) {
  std::vector<AllReduceRow> rows;
  std::optional<double> avg;
  std::set<std::string> hosts;
  std::vector<std::string> failures;
  const auto lines = Lines(output);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.find("NCCL failure") != std::string::npos ||
        line.find("NCCL WARN") != std::string::npos) {
      failures.push_back(line);
      continue;
    }
    if (line.rfind("# Avg bus bandwidth", 0) == 0) {
      const auto colon = line.find(':');
      avg = colon == std::string::npos ? std::nullopt : LeadingNumber(Trim(line.substr(colon + 1)));
      if (!avg) return LineError("nccl-allreduce", i + 1, line, "bus bandwidth is not a number");
      continue;
    }
    const auto w = Words(line);
    if (w.size() >= 9 && w[0] == "#" && w[1] == "Rank") {
      for (size_t k = 2; k + 1 < w.size(); ++k) {
        if (w[k] == "on") hosts.insert(w[k + 1]);
      }
    }
    if (line.empty() || line[0] == '#' || !std::isdigit(static_cast<unsigned char>(line[0]))) {
      continue;
    }
    auto row = ParseAllReduceRow(w, i + 1, line);
    if (!row.ok()) return row.status();
    rows.push_back(*row);
  }
  CheckResult r;
  if (rows.empty() && !avg) {
    if (!failures.empty() || ScriptFailure(lines)) {
      r.summary = "all-reduce failed: " + (failures.empty() ? *ScriptFailure(lines) : failures[0]);
      r.measurements = {{"hosts", hosts}};
      return r;
    }
    return Status::Invalid(
        "nccl-allreduce: output holds no all_reduce_perf table row and no \"# Avg bus "
        "bandwidth\" line");
  }
  // Judge on the largest message (the bandwidth-bound regime); the average includes the sizes
  // where latency dominates.
  const AllReduceRow* largest = nullptr;
  int64_t wrong = 0;
  for (const auto& row : rows) {
    wrong += row.wrong;
    if (largest == nullptr || row.bytes >= largest->bytes) largest = &row;
  }
  const double bus = largest ? largest->busbw : *avg;
  const double want = Expect(expected, "busBandwidthGBps", 0);
  const double floor = want * Expect(expected, "minBusFraction", kMinBusFraction);
  r.measurements = {{"busBandwidthGBps", bus}, {"hosts", hosts}, {"wrong", wrong}};
  if (avg) r.measurements["avgBusBandwidthGBps"] = *avg;
  if (largest) r.measurements["largestBytes"] = largest->bytes;
  if (want > 0) r.measurements["expectedGBps"] = want;
  std::string text = "all-reduce bus bandwidth " + Fixed(bus, 1) + " GB/s";
  if (want > 0)
    text += " (" + Fixed(100 * bus / want, 0) + "% of the expected " + Fixed(want, 0) + ")";
  r.passed = failures.empty() && wrong == 0 && !(want > 0 && bus < floor);
  r.summary = text;
  if (wrong > 0) r.summary += "; " + std::to_string(wrong) + " wrong values";
  if (!failures.empty()) r.summary += "; " + failures[0];
  return r;
}
}  // namespace

// ---- public API ---------------------------------------------------------------------------

const std::vector<CheckSpec>& DiagnosticWhitelist() {
  static const std::vector<CheckSpec> kWhitelist = BuildWhitelist();
  return kWhitelist;
}

std::string WhitelistNames() {
  std::string out;
  for (const auto& c : DiagnosticWhitelist()) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

Result<const CheckSpec*> FindCheck(const std::string& name) {
  for (const auto& c : DiagnosticWhitelist()) {
    if (c.name == name) return &c;
  }
  std::string shown = name.size() > 64 ? name.substr(0, 64) + "..." : name;
  return Status::NotFound("diagnostic check \"" + shown + "\" is not in the whitelist (" +
                          WhitelistNames() + ")");
}

Result<CheckResult> InterpretCheckOutput(const std::string& check, const std::string& node,
                                         const std::string& output,
                                         const nlohmann::json& expected) {
  auto spec = FindCheck(check);
  if (!spec.ok()) return spec.status();
  Result<CheckResult> r = Status::Internal("unreachable");
  if (check == "gpu-clocks") {
    r = ParseGpuClocks(output, expected);
  } else if (check == "ecc-xid") {
    r = ParseEccXid(output);
  } else if (check == "gemm") {
    r = ParsePerGpu(output, expected, kGemm);
  } else if (check == "hbm-bandwidth") {
    r = ParsePerGpu(output, expected, kHbm);
  } else {
    r = ParseAllReduce(output, expected);
  }
  if (!r.ok()) return r;
  r->check = check;
  r->node = node;
  return r;
}

std::vector<std::string> ChecksFor(const std::vector<std::string>& evidence_kinds) {
  static const std::map<std::string, std::vector<std::string>> kByKind = {
      {"NodeFault", {"gpu-clocks", "ecc-xid"}},
      {"CollectiveTimeout", {"ecc-xid", "nccl-allreduce"}},
      {"SlowerThanPredicted", {"gpu-clocks", "gemm", "hbm-bandwidth", "nccl-allreduce"}},
      {"StepTimeDrift", {"gpu-clocks", "gemm"}},
      {"StepTimeSpikes", {"gpu-clocks", "ecc-xid", "nccl-allreduce"}},
  };
  std::set<std::string> wanted;
  for (const auto& kind : evidence_kinds) {
    auto it = kByKind.find(kind);
    if (it != kByKind.end()) wanted.insert(it->second.begin(), it->second.end());
  }
  if (evidence_kinds.empty()) wanted = {"gpu-clocks", "ecc-xid"};
  std::vector<std::string> out;
  for (const auto& c : DiagnosticWhitelist()) {
    if (wanted.count(c.name)) out.push_back(c.name);
  }
  return out;
}

nlohmann::json ExpectationsFor(const std::string& accelerator) {
  nlohmann::json e = {{"minGemmFraction", kMinGemmFraction},
                      {"minHbmFraction", kMinHbmFraction},
                      {"minBusFraction", kMinBusFraction},
                      {"minClockFraction", kMinClockFraction}};
  const Accelerator* a = FindAccelerator(accelerator);
  if (a == nullptr || a->tpu) return e;
  e["accelerator"] = a->name;
  e["peakTflops"] = a->bf16_tflops;
  e["hbmGBps"] = a->hbm_gbps;
  e["gpusPerNode"] = a->devices_per_node_default;
  // Two nodes' ring all-reduce runs at about the node's aggregate NIC bandwidth (one NIC per
  // GPU): nccl-tests reports ~90% of it as bus bandwidth on healthy InfiniBand/RoCE fabrics.
  e["busBandwidthGBps"] = 0.9 * a->scale_out_gbps * a->devices_per_node_default;
  return e;
}

}  // namespace paratune::health
