#include <grafx/fit/console_processors.h>
#include <grafx/loss/regularizers.h>

#include <ATen/ATen.h>

namespace grafx {
namespace {

class DryWet : public Processor {
 public:
  DryWet(std::shared_ptr<const Processor> inner, bool dry_wet, double init, bool gain_staging)
      : inner_(std::move(inner)), dry_wet_(dry_wet), init_(init), gain_staging_(gain_staging) {}

  std::string name() const override { return inner_->name(); }
  std::vector<std::string> inlets() const override { return inner_->inlets(); }
  std::vector<std::string> outlets() const override { return inner_->outlets(); }

  std::vector<ParameterSpec> parameter_specs() const override {
    auto specs = inner_->parameter_specs();
    if (dry_wet_)
      specs.push_back({"dry_wet", {1}, init_, 0.0, "wet", "ratio",
                       "share of the processed signal in the output (0 dry, 1 wet)",
                       [](const at::Tensor& raw) { return at::sigmoid(raw); }});
    return specs;
  }

  ProcessorOutput forward(const std::vector<at::Tensor>& inputs, const TensorDict& parameters) const override {
    check_arguments(inputs, parameters);
    TensorDict own = parameters;
    own.erase("dry_wet");
    ProcessorOutput out = inner_->forward(inputs, own);
    if (gain_staging_) out.aux_losses["gain_staging"] = gain_staging_loss(inputs[0], out.outputs[0]);
    if (dry_wet_) {
      at::Tensor wet = at::sigmoid(parameters.at("dry_wet")).unsqueeze(-1);  // [N, 1, 1]
      out.outputs[0] = inputs[0] + wet * (out.outputs[0] - inputs[0]);
    }
    return out;
  }

 private:
  std::shared_ptr<const Processor> inner_;
  bool dry_wet_;
  double init_;
  bool gain_staging_;
};

}  // namespace

std::shared_ptr<const Processor> with_dry_wet(std::shared_ptr<const Processor> processor,
                                              const ConsoleProcessorOptions& options) {
  bool gain_staging = options.gain_staging_types.count(processor->name()) > 0;
  return std::make_shared<DryWet>(std::move(processor), options.dry_wet, options.dry_wet_init, gain_staging);
}

Processors console_processors(const NodeTypes& types, const ProcessorConfig& config,
                              const ConsoleProcessorOptions& options) {
  Processors processors = make_processors(types, config);
  for (auto& [name, processor] : processors)
    if (processor->inlets().size() == 1 && processor->outlets().size() == 1)
      processor = with_dry_wet(processor, options);
  return processors;
}

}  // namespace grafx
