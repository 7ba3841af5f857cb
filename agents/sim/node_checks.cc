#include "agents/sim/node_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "agents/model/catalog.h"
#include "agents/sim/reality.h"

namespace paratune {

namespace {

// PCI bus ids of the eight GPUs of an HGX H100 baseboard, as nvidia-smi and the kernel name them.
constexpr const char* kPciBus[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};

struct SimNode {
  const Accelerator* accel = nullptr;
  int gpus = 8;
  double max_sm_mhz = 1980;
  std::optional<NodeFault> throttle, slow_link, flaky;
  int sick_gpu = 0;  // the GPU a throttle or flaky fault hits
};

double MaxSmClock(const std::string& name) {
  if (name == "nvidia-a100-80gb") return 1410;
  if (name == "nvidia-b200") return 1965;
  return 1980;  // H100 / H200 SXM
}

SimNode Describe(const std::string& node, const std::vector<NodeFault>& faults,
                 const std::string& accelerator) {
  SimNode n;
  n.accel = FindAccelerator(accelerator);
  if (n.accel == nullptr || n.accel->tpu) n.accel = FindAccelerator("nvidia-h100-80gb");
  n.gpus = std::clamp(n.accel->devices_per_node_default, 1, 8);
  n.max_sm_mhz = MaxSmClock(n.accel->name);
  n.sick_gpu = static_cast<int>(sim::HashString(node) % static_cast<uint64_t>(n.gpus));
  for (const auto& f : FaultsOn(faults, {node})) {
    if (f.kind == NodeFaultKind::kThrottle) n.throttle = f;
    if (f.kind == NodeFaultKind::kSlowLink) n.slow_link = f;
    if (f.kind == NodeFaultKind::kFlaky) n.flaky = f;
  }
  return n;
}

std::string Printf(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

std::string BusId(int gpu) { return std::string("0000:") + kPciBus[gpu % 8] + ":00"; }

// Flaky nodes log one hardware Xid: 79 (fallen off the bus) or 48 (double-bit ECC error).
int FlakyXid(const std::string& node, uint64_t seed) {
  return (sim::HashCombine(seed, sim::HashString(node + "/xid")) & 1) ? 79 : 48;
}

std::string GpuClocks(const SimNode& n, sim::Rng& rng) {
  std::string out;
  for (int g = 0; g < n.gpus; ++g) {
    const int temp = 30 + static_cast<int>(rng.Uniform(0, 6));
    if (n.throttle && g == n.sick_gpu) {
      const double sm = std::round(n.throttle->severity * n.max_sm_mhz / 15) * 15;
      out += Printf("%d, %.0f MHz, %.0f MHz, 0x0000000000000008, Active, Not Active, %d, %.2f W\n",
                    g, sm, n.max_sm_mhz, temp + 9, rng.Uniform(105, 125));
    } else {
      out +=
          Printf("%d, 345 MHz, %.0f MHz, 0x0000000000000001, Not Active, Not Active, %d, %.2f W\n",
                 g, n.max_sm_mhz, temp, rng.Uniform(66, 74));
    }
  }
  return out;
}

std::string EccXid(const SimNode& n, const std::string& node, uint64_t seed) {
  const int xid = n.flaky ? FlakyXid(node, seed) : 0;
  std::string out;
  for (int g = 0; g < n.gpus; ++g) {
    if (xid == 79 && g == n.sick_gpu) {
      out += "Unable to determine the device handle for GPU" + BusId(g) + ".0: Unknown Error\n";
      continue;
    }
    const int ecc = xid == 48 && g == n.sick_gpu ? 1 + static_cast<int>(4 * n.flaky->severity) : 0;
    out += Printf("%d, %d, No, [N/A]\n", g, ecc);
  }
  out += "# kernel log\n";
  if (xid == 79) {
    out += "[ 81234.567890] NVRM: Xid (PCI:" + BusId(n.sick_gpu) +
           "): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";
  } else if (xid == 48) {
    out += "[ 81234.567890] NVRM: Xid (PCI:" + BusId(n.sick_gpu) +
           "): 48, pid=40213, name=python3, An uncorrectable double bit error (DBE) has been "
           "detected on GPU in the framebuffer.\n";
  }
  return out;
}

std::string PerGpu(const SimNode& n, bool gemm, sim::Rng& rng) {
  std::string out;
  for (int g = 0; g < n.gpus; ++g) {
    const double noise = 1 + 0.015 * rng.Normal();
    if (gemm) {
      double tflops = 0.88 * n.accel->kernel_efficiency * n.accel->bf16_tflops * noise;
      if (n.throttle && g == n.sick_gpu) tflops *= n.throttle->severity;
      out += Printf("gpu %d: gemm bf16 8192x8192x8192 %.1f TFLOPS\n", g, tflops);
    } else {
      // HW Slowdown holds the SM clock down; a streaming copy stays near the memory's speed.
      out += Printf("gpu %d: hbm copy 4096 MiB %.1f GB/s\n", g, 0.88 * n.accel->hbm_gbps * noise);
    }
  }
  return out;
}

std::string AllReduceHeader(const SimNode& n, const std::vector<std::string>& hosts) {
  std::string out =
      "# nThread 1 nGpus 1 minBytes 536870912 maxBytes 8589934592 step: 2(factor) warmup iters: "
      "5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  int rank = 0;
  for (const auto& host : hosts) {
    for (int g = 0; g < n.gpus; ++g, ++rank) {
      out += Printf("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%s] NVIDIA %s\n", rank,
                    1200 + rank, host.c_str(), g, kPciBus[g % 8],
                    n.accel->name == "nvidia-a100-80gb" ? "A100-SXM4-80GB" : "H100 80GB HBM3");
    }
  }
  out +=
      "#\n#                                                              out-of-place          "
      "             in-place          \n#       size         count      type   redop    root   "
      "  time   algbw   busbw #wrong     time   algbw   busbw #wrong\n#        (B)    "
      "(elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
      "(GB/s)       \n";
  return out;
}

std::string AllReduce(const SimNode& n, const std::string& node,
                      const std::vector<std::string>& peers, const std::vector<NodeFault>& faults,
                      const std::string& accelerator, sim::Rng& rng) {
  std::vector<std::string> hosts = {node};
  for (const auto& p : peers) {
    if (p != node && std::find(hosts.begin(), hosts.end(), p) == hosts.end()) hosts.push_back(p);
  }
  // Across nodes: the node's NICs (one per GPU) at ~95% of the expected 90% of line rate; on one
  // node: NVLink.
  double peak = hosts.size() > 1 ? 0.95 * 0.9 * n.accel->scale_out_gbps * n.gpus
                                 : 0.8 * n.accel->scale_up_gbps / 2;
  std::string out = AllReduceHeader(n, hosts);
  for (const auto& h : hosts) {
    const SimNode other = Describe(h, faults, accelerator);
    if (other.slow_link) peak = std::min(peak, peak * other.slow_link->severity);
    if (other.flaky && rng.Uniform() < other.flaky->severity) {
      return out + h +
             ": Test NCCL failure all_reduce.cu:1005 'remote process exited or there was a "
             "network error / '\n .. " +
             h + " pid 1207: Test failure common.cu:1151\n";
    }
  }
  const int ranks = static_cast<int>(hosts.size()) * n.gpus;
  const double factor = 2.0 * (ranks - 1) / ranks;
  double total = 0;
  int rows = 0;
  for (double bytes = 536870912.0, ramp = 0.93; bytes <= 8589934592.0; bytes *= 2, ++rows) {
    const double bus_out = peak * ramp * (1 + 0.01 * rng.Normal());
    const double bus_in = peak * ramp * (1 + 0.01 * rng.Normal());
    const double t_out = bytes / (bus_out / factor) / 1e3, t_in = bytes / (bus_in / factor) / 1e3;
    out += Printf(
        "%12.0f %13.0f     float     sum      -1 %8.0f %7.2f %7.2f      0 %8.0f %7.2f %7.2f      "
        "0\n",
        bytes, bytes / 4, t_out, bus_out / factor, bus_out, t_in, bus_in / factor, bus_in);
    total += 0.5 * (bus_out + bus_in);
    ramp = std::min(1.0, ramp + 0.02);
  }
  out += Printf("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %.2f \n#\n", total / rows);
  return out;
}

}  // namespace

const std::vector<std::string>& SimulatedCheckNames() {
  static const std::vector<std::string> kNames = {"gpu-clocks", "ecc-xid", "gemm", "hbm-bandwidth",
                                                  "nccl-allreduce"};
  return kNames;
}

std::string SimulatedCheckOutput(const std::string& check, const std::string& node,
                                 const std::vector<NodeFault>& faults,
                                 const std::vector<std::string>& peers,
                                 const std::string& accelerator, uint64_t seed) {
  const SimNode n = Describe(node, faults, accelerator);
  sim::Rng rng(sim::HashCombine(seed, sim::HashString(node + "/" + check)));
  if (check == "gpu-clocks") return GpuClocks(n, rng);
  if (check == "ecc-xid") return EccXid(n, node, seed);
  if (check == "gemm") return PerGpu(n, true, rng);
  if (check == "hbm-bandwidth") return PerGpu(n, false, rng);
  if (check == "nccl-allreduce") return AllReduce(n, node, peers, faults, accelerator, rng);
  return "";
}

}  // namespace paratune
