#include <grafx/device_graph.h>

#ifdef GRAFX_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <optional>
#endif

namespace grafx {

#ifdef GRAFX_CUDA

struct DeviceGraph::Impl {
  std::optional<c10::cuda::CUDAStream> stream;  // captures must run on a stream of their own
  std::unique_ptr<at::cuda::CUDAGraph> graph;

  /// Runs `work` on the capture stream, ordered after the device's current stream's work and
  /// before its later work.
  void on_stream(const at::Device& device, const std::function<void()>& work) {
    c10::cuda::CUDAGuard device_guard(device);
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device.index());
    if (!stream) stream = c10::cuda::getStreamFromPool(false, device.index());
    at::cuda::CUDAEvent ready, done;
    ready.record(current);
    ready.block(*stream);
    {
      c10::cuda::CUDAStreamGuard stream_guard(*stream);
      work();
    }
    done.record(*stream);
    done.block(current);
  }
};

DeviceGraph::DeviceGraph() : impl_(std::make_unique<Impl>()) {}

bool DeviceGraph::available(const at::Device& device) { return device.is_cuda(); }

void DeviceGraph::run_on_capture_stream(const at::Device& device,
                                        const std::function<void()>& work) {
  if (!available(device)) throw DeviceGraphError("work on " + device.str() + " is not captured");
  impl_->on_stream(device, work);
}

void DeviceGraph::capture(const at::Device& device, const std::function<void()>& work) {
  if (!available(device)) throw DeviceGraphError("work on " + device.str() + " is not captured");
  impl_->graph.reset();
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  impl_->on_stream(device, [&] {
    graph->capture_begin();
    try {
      work();
    } catch (const std::exception& e) {
      // End the capture (it fails, having been invalidated) so that the stream and the
      // allocator's pool are usable again; what the work launched never ran.
      try {
        graph->capture_end();
      } catch (const std::exception&) {
      }
      cudaGetLastError();  // the capture's error is not the next call's
      std::string why = e.what();
      throw DeviceGraphError(why.substr(0, why.find('\n')));
    }
    try {
      graph->capture_end();
    } catch (const std::exception& e) {
      cudaGetLastError();
      std::string why = e.what();
      throw DeviceGraphError(why.substr(0, why.find('\n')));
    }
  });
  impl_->graph = std::move(graph);
}

void DeviceGraph::replay() {
  if (!impl_->graph) throw DeviceGraphError("nothing was captured to replay");
  impl_->graph->replay();
}

bool DeviceGraph::captured() const { return impl_->graph != nullptr; }

#else  // a build without CUDA: nothing can be captured

struct DeviceGraph::Impl {};

DeviceGraph::DeviceGraph() : impl_(std::make_unique<Impl>()) {}

bool DeviceGraph::available(const at::Device&) { return false; }

void DeviceGraph::run_on_capture_stream(const at::Device&, const std::function<void()>&) {
  throw DeviceGraphError("grafx was built without CUDA");
}

void DeviceGraph::capture(const at::Device&, const std::function<void()>&) {
  throw DeviceGraphError("grafx was built without CUDA");
}

void DeviceGraph::replay() { throw DeviceGraphError("grafx was built without CUDA"); }

bool DeviceGraph::captured() const { return false; }

#endif

DeviceGraph::~DeviceGraph()                                 = default;
DeviceGraph::DeviceGraph(DeviceGraph&&) noexcept            = default;
DeviceGraph& DeviceGraph::operator=(DeviceGraph&&) noexcept = default;

}  // namespace grafx
