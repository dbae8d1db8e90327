#pragma once
/// Device work captured once and replayed: a CUDA graph of the kernels that a piece of host code
/// launches, for work whose shapes and addresses stay fixed (a fit step on crops of one length).
/// One replay launches all of them at once, where running the code launches each in turn.
///
///   DeviceGraph graph;
///   graph.capture(device, [&] { out.copy_(f(in)); });   // the kernels are recorded, not run
///   in.copy_(next); graph.replay();                      // runs f on the new input into `out`
///
/// The work must read its inputs from, and leave its results in, tensors that outlive the graph
/// (their addresses are recorded), and must not wait for the device (no .item(), no copy to the
/// host) or copy from the host: such work cannot be captured, and `capture` then throws
/// DeviceGraphError saying why, having run nothing and left the device usable. Available where
/// grafx is built against a LibTorch with CUDA (GRAFX_CUDA) and on CUDA devices only.

#include <ATen/Tensor.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace grafx {

class DeviceGraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DeviceGraph {
 public:
  DeviceGraph();
  ~DeviceGraph();
  DeviceGraph(DeviceGraph&&) noexcept;
  DeviceGraph& operator=(DeviceGraph&&) noexcept;

  /// Whether work on `device` can be captured: a CUDA device in a build with CUDA.
  static bool available(const at::Device& device);
  /// Runs `work` as it is on the stream captures use: the first run of new work, so that what
  /// it sets up lazily (plans, handles, workspaces, cached constants) is made outside a capture.
  void run_on_capture_stream(const at::Device& device, const std::function<void()>& work);
  /// Records the kernels `work` launches on `device` (forgetting any earlier capture); throws
  /// DeviceGraphError where it cannot.
  void capture(const at::Device& device, const std::function<void()>& work);
  /// Launches the recorded kernels on the device's current stream.
  void replay();
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grafx
