#include <grafx/render/as_heard.h>

#include <ATen/ATen.h>

namespace grafx {
namespace {

class AsHeard final : public Processor {
 public:
  AsHeard(const Processor& inner, const NodeProperties& properties, const at::Tensor& raw_wet)
      : inner_(inner),
        type_(inner.node_type()),
        raw_wet_(properties.dry_wet && raw_wet.defined() ? raw_wet.view({-1, 1, 1}) : at::Tensor()),
        bypassed_(properties.bypassed) {}

  std::string name() const override { return inner_.name(); }
  std::vector<std::string> inlets() const override { return inner_.inlets(); }
  std::vector<std::string> outlets() const override { return inner_.outlets(); }
  std::vector<ParameterSpec> parameter_specs() const override { return inner_.parameter_specs(); }
  TemporalSupport temporal_support(const TensorDict& parameters) const override {
    return inner_.temporal_support(parameters);
  }

  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override {
    ProcessorOutput out = inner_.forward(inputs, parameters);
    if (!bypassed_ && !raw_wet_.defined()) return out;
    for (size_t o = 0; o < out.outputs.size(); ++o) {
      const int64_t passed = type_.passed_inlet(int64_t(o));
      at::Tensor& y        = out.outputs[o];
      const at::Tensor dry = passed >= 0 ? inputs[size_t(passed)] : at::zeros_like(y);
      y                    = bypassed_ ? dry : mix_dry_wet(dry, y, raw_wet_);
    }
    return out;
  }

 private:
  const Processor& inner_;
  NodeType type_;
  at::Tensor raw_wet_;  // [1, 1, 1]; undefined for a node without dry/wet
  bool bypassed_;
};

}  // namespace

std::unique_ptr<Processor> as_heard(const Processor& processor, const NodeProperties& properties,
                                    const at::Tensor& raw_wet) {
  return std::make_unique<AsHeard>(processor, properties, raw_wet);
}

}  // namespace grafx
