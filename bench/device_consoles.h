#pragma once
// What device_bench and device_profile share: the paper's console (8 tracks, 3 subgroups, the
// shape bench/grafx_python_device.py gives GRAFX) on stereo crops of 3.8 s at 30 kHz, the same
// console built of biquad EQs and ballistics dynamics, and a wait for a device's queued work.

#include <grafx/graph/console.h>
#include <grafx/processors/registry.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace grafx::bench {

constexpr int64_t kConsoleRate = 30000, kConsoleCrop = 114000;

/// The paper's chain with a biquad parametric EQ and the ballistics compressor and gate: the
/// recursions' device kernels at work.
inline std::vector<std::string> iir_console_chain() {
  return {"parametric_eq",
          "compressor_ballistics",
          "noise_gate_ballistics",
          "stereo_imager",
          "gain_pan",
          "delay",
          "reverb"};
}

/// 8 tracks in 3 subgroups, each strip and subgroup of `chain`.
inline Graph device_console(const std::vector<std::string>& chain, bool dry_wet) {
  ConsoleOptions options;
  options.n_tracks     = 8;
  options.track_groups = ConsoleOptions::even_groups(8, 3);
  options.chain        = chain;
  options.dry_wet      = dry_wet;
  return build_console(options, registry_node_types()).graph;
}

/// Waits for the device's queued work (a copy to the host is ordered after it).
inline void synchronize(at::Device device) {
  if (!device.is_cpu()) at::zeros({1}, at::TensorOptions().device(device)).item<float>();
}

}  // namespace grafx::bench
