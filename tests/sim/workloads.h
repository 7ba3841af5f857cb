// The workloads the simulated-cluster tests run: Llama 3 8B on H100 nodes of 8, and Llama 2 7B
// with MaxText on a TPU v5e 4x4 slice; and a cluster with node faults to run them on.
#ifndef PARATUNE_TESTS_SIM_WORKLOADS_H_
#define PARATUNE_TESTS_SIM_WORKLOADS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "agents/model/catalog.h"
#include "agents/model/workload.h"
#include "agents/sim/node_faults.h"
#include "agents/sim/simulated_cluster.h"

namespace paratune::testing {

inline Workload Llama8bH100(int64_t nodes = 1) {
  Workload w;
  w.model = *FindModelPreset("llama3-8b");
  w.training.seq_length = 8192;
  w.training.global_batch_size = 512;
  w.hardware.accelerator = "nvidia-h100-80gb";
  w.hardware.nodes = nodes;
  w.hardware.devices_per_node = 8;
  w.accel = FindAccelerator("nvidia-h100-80gb");
  w.devices = 8 * nodes;
  return w;
}

inline Workload Llama7bV5e() {
  Workload w;
  w.model = *FindModelPreset("llama2-7b");
  w.training.framework = "maxtext";
  w.training.seq_length = 2048;
  w.training.global_batch_size = 64;
  w.hardware.accelerator = "tpu-v5e";
  w.hardware.devices_per_node = 4;
  w.hardware.tpu_topology = "4x4";
  w.accel = FindAccelerator("tpu-v5e");
  w.devices = 16;
  return w;
}

// No infrastructure faults, the trial on `nodes`, the cluster's faults parsed from `faults`
// (node_faults.h syntax: "n1=flaky:1;n0=throttle:0.6").
inline SimOptions OnNodes(std::vector<std::string> nodes, const std::string& faults,
                          uint64_t seed = 7) {
  SimOptions o;
  o.seed = seed;
  o.infra_fault_rate = 0;
  o.nodes = std::move(nodes);
  auto f = ParseNodeFaults(faults);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  if (f.ok()) o.node_faults = *f;
  return o;
}

}  // namespace paratune::testing

#endif  // PARATUNE_TESTS_SIM_WORKLOADS_H_
