#pragma once
/// The processor contract.
///
/// A processor is **stateless** between calls and **batch-first**: `forward` takes one tensor
/// per inlet, each `N×C×L` (N nodes of this type, times the source batch), and a dictionary of
/// raw parameters whose tensors all have first dimension N; it returns one tensor per outlet,
/// each `N×C×L`, and optional auxiliary losses, each of shape `[N]` (one value per node). Row n
/// of every output depends only on row n of the inputs and parameters, so the renderer can stack
/// all ready nodes of one type into one call, which is the whole point of grafx.
///
/// Raw parameters are unconstrained reals (friendly to gradient descent); the processor applies
/// its own activations. `parameter_specs()` lists each parameter with its per-node shape, its
/// initial value, and the mapping from raw values to physical units for reports.
///
/// Constant data (noise, windows, filter tables) is built once per processor instance, device
/// and dtype (see ConstantCache), never per call.

#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace grafx {

struct NodeType;

/// Named tensors, ordered by name.
using TensorDict = std::map<std::string, at::Tensor>;

/// Everything a processor is told when it is made.
struct ProcessorConfig {
  double sample_rate = 44100.0;  ///< Hz
};

struct ParameterSpec {
  std::string name;             ///< raw parameter name, e.g. "log_threshold"
  std::vector<int64_t> shape;   ///< per node, e.g. {1}, {1024}, {2, 193}
  double init_mean = 0.0;       ///< initial raw values are drawn from N(init_mean, init_std²)
  double init_std = 0.01;
  std::string physical_name;    ///< e.g. "threshold_db" (units in the name)
  std::string unit;             ///< e.g. "dB"
  std::string description;      ///< one line: what it does, its range
  /// Raw values `[N, shape...]` to physical values (any shape with first dimension N).
  std::function<at::Tensor(const at::Tensor&)> to_physical;
};

struct ProcessorOutput {
  std::vector<at::Tensor> outputs;  ///< one per outlet, each N×C×L
  TensorDict aux_losses;            ///< e.g. {"radii": [N]}: one value per node
};

class Processor {
 public:
  virtual ~Processor() = default;

  /// The node type name this processor implements (its registry name).
  virtual std::string name() const = 0;
  virtual std::vector<std::string> inlets() const { return {"main"}; }
  virtual std::vector<std::string> outlets() const { return {"main"}; }
  virtual std::vector<ParameterSpec> parameter_specs() const = 0;
  /// Pure, batch-first processing (see the header comment).
  virtual ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                                  const TensorDict& parameters) const = 0;

  /// The node type (name and ports) of this processor.
  NodeType node_type() const;
  /// Physical values of raw parameters, keyed by physical name.
  TensorDict to_physical(const TensorDict& parameters) const;
  /// Throws ProcessorError [grafx.processor.inputs] / [grafx.processor.parameters] unless there
  /// is one input per inlet, all N×C×L alike, and each parameter of the specs is present with
  /// shape [N, spec shape...] and nothing else is. `where` prefixes the message.
  void check_arguments(const std::vector<at::Tensor>& inputs, const TensorDict& parameters,
                       const std::string& where = "") const;
};

/// Caches constant tensors per (device, dtype) for one processor instance; thread-safe.
class ConstantCache {
 public:
  /// Returns the cached tensor for `options`' device and dtype, building it with `make` (on the
  /// CPU in float64, say) the first time and converting it to `options`.
  at::Tensor get(const std::string& key, const at::TensorOptions& options,
                 const std::function<at::Tensor()>& make) const;

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::string, at::Tensor> tensors_;
};

}  // namespace grafx
