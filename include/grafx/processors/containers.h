#pragma once
/// Containers (GRAFX's SerialChain and ParallelMix): one node whose processor is made of other
/// processors, its members, each any registered processor or configured type with one `main`
/// inlet and outlet.
///
/// | type           | letter | y                                                             |
/// |----------------|--------|---------------------------------------------------------------|
/// | `serial_chain` | A      | f_K(… f_2(f_1(x)))                                            |
/// | `parallel_mix` | V      | Σ_k w_k·f_k(x), w = softmax(z) or softplus(z)/(K·ln 2) (≈ 1/K at z = 0) |
/// | `multiband`    | D      | Σ_k b_k + v_k·(f_k(b_k) − b_k), b_k a Linkwitz-Riley crossover's band k (processors/crossover.h), v_k its wet amount |
///
/// Options: `members`, a list of node type names: registered processors (with their default
/// options) or types the graph declares (with theirs); `serial_chain` defaults to
/// [eq, compressor], `parallel_mix` to [delay, reverb], `multiband` to [compressor, compressor]
/// (2 or 3 members: one per band, low first). `parallel_mix` also takes `activation`,
/// softmax (default, GRAFX's) or softplus. In a graph file:
///
///   {"name": "strip", "processor": "serial_chain",
///    "options": {"members": ["eq", "compressor", "warm_drive"]}}
///
/// Parameters are the members', named `members.K.NAME` (K from 0, e.g. `members.1.log_ratio`,
/// physically `members.1.ratio`), plus `parallel_weights` [K] (physical `weight`, the
/// activated w) for `parallel_mix`, and the crossover's `crossover` (physical `crossover_hz`)
/// and `band_dry_wet` [K] (physical `band_wet`, v = sigmoid(raw)) for `multiband`. Members'
/// auxiliary losses are summed by name (two delays' `radii` make one `radii`), so the fit's
/// regularisers weigh them as a lone processor's. Members may change the channel count
/// (mono_to_stereo): a parallel mix adds mono to stereo as dual mono. A member may itself be a
/// container (to a depth of 8), but not contain itself. A fit's typical starts (fit/initialise.h)
/// start each member as a lone node of its type.

#include <grafx/processors/descriptor.h>
#include <grafx/processors/linear_processor.h>

#include <memory>

namespace grafx {

ProcessorDescriptor serial_chain_descriptor();  ///< letter A
ProcessorDescriptor parallel_mix_descriptor();  ///< letter V
ProcessorDescriptor multiband_descriptor();     ///< letter D

class Container : public Processor {
 public:
  enum class Layout { kSerial, kParallel, kBands };
  static constexpr int kMaxNesting = 8;

  Container(const ProcessorConfig& config, Layout layout);
  static std::vector<OptionSpec> option_specs(Layout layout);

  std::string name() const override;
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  /// Its members' streams in series (each silenced outside the song, as offline), or summed
  /// with its weights or after its crossover (aligned to the slowest member).
  std::unique_ptr<NodeStream> make_stream(const TensorDict& parameters,
                                          const StreamSetup& setup) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

  /// The member processors, in order.
  const std::vector<std::shared_ptr<const Processor>>& members() const { return members_; }
  /// The crossover that splits a multiband container's input; null for the other layouts.
  const Processor* split() const { return split_.get(); }

 private:
  /// Member k's raw parameters, without their prefix.
  TensorDict member_parameters(size_t k, const TensorDict& parameters) const;
  /// The crossover's raw parameters (multiband).
  TensorDict split_parameters(const TensorDict& parameters) const;
  at::Tensor weights(const TensorDict& parameters) const;

  Layout layout_;
  bool softmax_ = true;
  std::vector<std::shared_ptr<const Processor>> members_;
  std::shared_ptr<const Processor> split_;  ///< multiband: the crossover into one band a member
};

}  // namespace grafx
