#include <grafx/render/as_heard.h>

#include <ATen/ATen.h>

namespace grafx {
namespace {

class AsHeard final : public Processor {
 public:
  AsHeard(const Processor& inner, const NodeProperties& properties)
      : inner_(inner),
        type_{inner.name(), inner.inlets(), inner.outlets()},
        dry_wet_(properties.dry_wet),
        bypassed_(properties.bypassed) {}

  std::string name() const override { return inner_.name(); }
  std::vector<std::string> inlets() const override { return inner_.inlets(); }
  std::vector<std::string> outlets() const override { return inner_.outlets(); }
  std::vector<ParameterSpec> parameter_specs() const override {
    return node_parameter_specs(inner_, dry_wet_);
  }
  TemporalSupport temporal_support(const TensorDict& parameters) const override {
    TensorDict own = parameters;
    take_wet_amount(own);
    return inner_.temporal_support(own);
  }

  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override {
    TensorDict own           = parameters;
    const at::Tensor raw_wet = take_wet_amount(own);
    ProcessorOutput out      = inner_.forward(inputs, own);
    if (!bypassed_ && !(dry_wet_ && raw_wet.defined())) return out;
    for (size_t o = 0; o < out.outputs.size(); ++o) {
      const int64_t passed = type_.passed_inlet(int64_t(o));
      at::Tensor& y        = out.outputs[o];
      const at::Tensor dry = passed >= 0 ? inputs[size_t(passed)] : at::zeros_like(y);
      y = bypassed_ ? dry : mix_dry_wet(dry, y, raw_wet.view({raw_wet.size(0), 1, 1}));
    }
    return out;
  }

 private:
  const Processor& inner_;
  NodeType type_;
  bool dry_wet_, bypassed_;
};

}  // namespace

std::unique_ptr<Processor> as_heard(const Processor& processor, const NodeProperties& properties) {
  return std::make_unique<AsHeard>(processor, properties);
}

}  // namespace grafx
