#include <grafx/error.h>
#include <grafx/processors/compressor.h>
#include <grafx/processors/containers.h>
#include <grafx/processors/crossover.h>
#include <grafx/processors/delay.h>
#include <grafx/processors/eq.h>
#include <grafx/processors/registry.h>
#include <grafx/processors/reverb.h>

#include <grafx/stream/container_form.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace grafx {
namespace {

/// softmax over the last dimension, written out: ATen's has no forward-mode rule for its
/// backward pass in LibTorch 1.13, which Hessian-vector products (forward over reverse) need.
at::Tensor softmax(const at::Tensor& z) {
  at::Tensor e = (z - std::get<0>(z.detach().max(-1, true))).exp();
  return e / e.sum(-1, true);
}

using Layout = Container::Layout;

// Raw names; a multiband node's band wet amounts are physically `band_wet`, as a node's `dry_wet`
// is `wet`.
const char kWeights[] = "parallel_weights", kBandDryWet[] = "band_dry_wet";

std::string prefix(size_t k) { return "members." + std::to_string(k) + "."; }

/// The default members' descriptors (from their own files: the registry may still be under
/// construction when this is called).
std::vector<ProcessorDescriptor> default_members(Layout layout) {
  if (layout == Layout::kSerial) return {eq_descriptor(), compressor_descriptor()};
  if (layout == Layout::kBands) return {compressor_descriptor(), compressor_descriptor()};
  return {delay_descriptor(), reverb_descriptor()};
}

const char* type_name(Layout layout) {
  if (layout == Layout::kSerial) return "serial_chain";
  return layout == Layout::kParallel ? "parallel_mix" : "multiband";
}

/// Settings of each part from its descriptor's `of` (the musical prior or the fit start): the
/// members' under their prefixes, the crossover's as they are. The members' wet amounts are
/// left out (a member has none; the node's is its own).
TensorDict parts_settings(const PriorContext& c, MusicalPrior ProcessorDescriptor::*of) {
  TensorDict settings;
  const auto& container = dynamic_cast<const Container&>(c.processor);
  auto add              = [&](const Processor& part, const std::string& prefix) {
    const ProcessorDescriptor* d = find_processor(part.name());
    if (!d || !(d->*of)) return;
    for (auto& [name, value] : (d->*of)({part, c.sample_rate, c.subgroup, c.random}))
      if (name != dry_wet_spec().physical_name) settings[prefix + name] = value;
  };
  if (container.split()) add(*container.split(), "");
  for (size_t k = 0; k < container.members().size(); ++k) add(*container.members()[k], prefix(k));
  return settings;
}

std::vector<std::string> names_of(const std::vector<ProcessorDescriptor>& descriptors) {
  std::vector<std::string> names;
  for (const auto& d : descriptors) names.push_back(d.name);
  return names;
}

/// Member `name`: a type of the graph (with its options) or a registered processor.
std::shared_ptr<const Processor> make_member(const std::string& name, const ProcessorConfig& config,
                                             size_t k) {
  const std::string where                   = "member " + std::to_string(k) + " \"" + name + "\": ";
  const std::vector<std::string>& enclosing = config.enclosing_types;
  if (std::find(enclosing.begin(), enclosing.end(), name) != enclosing.end()) {
    std::string cycle;
    for (auto it = std::find(enclosing.begin(), enclosing.end(), name); it != enclosing.end(); ++it)
      cycle += *it + " -> ";
    throw ProcessorError("grafx.processor.options",
                         where + "a container cannot contain itself (" + cycle + name + ")");
  }
  if (int(enclosing.size()) > Container::kMaxNesting)
    throw ProcessorError("grafx.processor.options", where + "containers nest deeper than " +
                                                        std::to_string(Container::kMaxNesting) +
                                                        " levels");
  ProcessorConfig own = config;
  own.options.clear();
  std::shared_ptr<const Processor> member;
  try {
    if (config.types && config.types->contains(name)) {
      member = make_processor((*config.types)[config.types->id(name)], own);
    } else {
      member = make_processor(name, own);
    }
  } catch (const ProcessorError& e) {
    throw ProcessorError(e.code(), where + e.message());
  }
  if (member->inlets() != std::vector<std::string>{"main"} ||
      member->outlets() != std::vector<std::string>{"main"})
    throw ProcessorError("grafx.processor.options",
                         where + "a member needs one inlet and one outlet, both \"main\"");
  return member;
}

ProcessorDescriptor container_descriptor(Layout layout) {
  const char letter     = layout == Layout::kSerial ? 'A' : layout == Layout::kBands ? 'D' : 'V';
  ProcessorDescriptor d = ProcessorDescriptor::of<Container>(type_name(layout), letter, layout);
  if (layout == Layout::kSerial) {
    d.summary    = "serial chain: its member processors one after another (default eq, compressor)";
    d.grafx_name = "SerialChain";
  } else if (layout == Layout::kParallel) {
    d.summary    = "parallel mix: a weighted sum of its members' outputs (default delay, reverb)";
    d.grafx_name = "ParallelMix";
  } else {  // GRAFX lists multiband processing as to do
    d.summary =
        "multiband: a Linkwitz-Riley crossover into a band per member, each band's dry and "
        "processed signal mixed by its wet amount, the bands summed (default a compressor on "
        "each of 2 bands)";
  }
  d.options = Container::option_specs(layout);
  // Each part's own musical settings and fit start, members under their prefixes.
  d.musical_prior = [](const PriorContext& c) {
    TensorDict settings   = parts_settings(c, &ProcessorDescriptor::musical_prior);
    const auto& container = dynamic_cast<const Container&>(c.processor);
    if (container.split())  // a musical multiband compressor processes its bands whole
      settings["band_wet"] = at::ones({int64_t(container.members().size())}, at::kDouble);
    return settings;
  };
  // A multiband node's wet amount, where it has one, starts nearly whole (its bands' own wet
  // amounts at half): its bands sum to an all-pass of the input, 180° out of phase at the
  // crossover, so half wet is a notch there (hidden producers' mix 216, 200 steps).
  d.fit_start = [layout](const PriorContext& c) {
    TensorDict start = parts_settings(c, &ProcessorDescriptor::fit_start);
    if (layout == Layout::kBands)
      start[dry_wet_spec().physical_name] = at::full({1}, 0.99, at::kDouble);
    return start;
  };
  // The default members' surrogate gradients (the delay's straight-through times).
  const std::vector<ProcessorDescriptor> members = default_members(layout);
  for (size_t k = 0; k < members.size(); ++k) {
    const GradientCheck& check = members[k].gradient_check;
    for (const auto& name : check.surrogate_parameters)
      d.gradient_check.surrogate_parameters.insert(prefix(k) + name);
    d.gradient_check.relative_tolerance =
        std::max(d.gradient_check.relative_tolerance, check.relative_tolerance);
    d.gradient_check.absolute_tolerance =
        std::max(d.gradient_check.absolute_tolerance, check.absolute_tolerance);
  }
  return d;
}

}  // namespace

ProcessorDescriptor serial_chain_descriptor() { return container_descriptor(Layout::kSerial); }
ProcessorDescriptor parallel_mix_descriptor() { return container_descriptor(Layout::kParallel); }
ProcessorDescriptor multiband_descriptor() { return container_descriptor(Layout::kBands); }

std::vector<OptionSpec> Container::option_specs(Layout layout) {
  std::vector<OptionSpec> specs = {OptionSpec::names(
      "members", names_of(default_members(layout)),
      layout == Layout::kBands ? "member types, one per band from the lowest (2 or 3): registered "
                                 "processors or types of the graph"
                               : "member types, in order: registered processors or types of the "
                                 "graph")};
  if (layout == Layout::kParallel)
    specs.push_back(OptionSpec::choice("activation", "softmax", {"softmax", "softplus"},
                                       "weights: softmax(z), or softplus(z)/(K ln 2)"));
  return specs;
}

Container::Container(const ProcessorConfig& config, Layout layout) : layout_(layout) {
  ProcessorOptions options              = resolve_options(option_specs(layout), config.options);
  const std::vector<std::string>& names = option_names(options, "members");
  if (names.empty())
    throw ProcessorError("grafx.processor.options", "option \"members\": expected at least one");
  if (layout == Layout::kBands && names.size() != 2 && names.size() != 3)
    throw ProcessorError("grafx.processor.options",
                         "option \"members\": a multiband container takes 2 or 3 members (one "
                         "per band), but got " +
                             std::to_string(names.size()));
  for (size_t k = 0; k < names.size(); ++k) members_.push_back(make_member(names[k], config, k));
  if (layout == Layout::kParallel) softmax_ = option_choice(options, "activation") == "softmax";
  if (layout == Layout::kBands) {
    ProcessorConfig own = config;
    own.options.clear();
    split_ = make_processor(names.size() == 2 ? "crossover" : "crossover_3band", own);
  }
}

std::string Container::name() const { return type_name(layout_); }

std::vector<ParameterSpec> Container::parameter_specs() const {
  std::vector<ParameterSpec> specs;
  if (split_) specs = split_->parameter_specs();
  for (size_t k = 0; k < members_.size(); ++k) {
    for (ParameterSpec spec : members_[k]->parameter_specs()) {
      spec.name          = prefix(k) + spec.name;
      spec.physical_name = prefix(k) + spec.physical_name;
      spec.description   = members_[k]->name() + ": " + spec.description;
      spec.automation.clear();  // a container's nodes automate only their wet amounts
      specs.push_back(std::move(spec));
    }
  }
  if (split_)
    specs.push_back(ParameterSpec::raw(kBandDryWet, {int64_t(members_.size())})
                        .physical(
                            "band_wet", "ratio",
                            [](const at::Tensor& raw) { return raw.sigmoid(); },
                            [](const at::Tensor& wet) { return wet.logit(); })
                        .range(0, 1)
                        .about("share of each band's processed signal in its sum with its dry band "
                               "(low first)")
                        .maps("sigmoid(raw)"));
  if (layout_ == Layout::kParallel) {
    const double k = double(members_.size());
    ValueMap to_weight, to_raw;
    if (softmax_) {
      to_weight = softmax;
      to_raw    = [](const at::Tensor& w) { return w.log(); };  // softmax(log w) = w / Σw
    } else {
      to_weight = [k](const at::Tensor& z) { return at::softplus(z) / (k * std::log(2.0)); };
      to_raw    = [k](const at::Tensor& w) { return (w * k * std::log(2.0)).expm1().log(); };
    }
    specs.push_back(ParameterSpec::raw(kWeights, {int64_t(members_.size())})
                        .physical("weight", "ratio", to_weight, to_raw)
                        .range(0, softmax_ ? 1 : std::numeric_limits<double>::infinity())
                        .about("share of each member's output in the sum")
                        .maps(softmax_ ? "softmax(raw)" : "softplus(raw)/(K ln 2), 1/K at raw 0"));
  }
  return specs;
}

TensorDict Container::member_parameters(size_t k, const TensorDict& parameters) const {
  TensorDict own;
  const std::string p = prefix(k);
  for (const auto& spec : members_[k]->parameter_specs())
    own[spec.name] = parameters.at(p + spec.name);
  return own;
}

TensorDict Container::split_parameters(const TensorDict& parameters) const {
  TensorDict own;
  for (const auto& spec : split_->parameter_specs()) own[spec.name] = parameters.at(spec.name);
  return own;
}

at::Tensor Container::weights(const TensorDict& parameters) const {
  const at::Tensor& z = parameters.at(kWeights);
  return softmax_ ? softmax(z) : at::softplus(z) / (double(members_.size()) * std::log(2.0));
}

ProcessorOutput Container::forward(const std::vector<at::Tensor>& inputs,
                                   const TensorDict& parameters) const {
  check_arguments(inputs, parameters);
  ProcessorOutput out;
  at::Tensor w      = layout_ == Layout::kParallel ? weights(parameters)
                      : layout_ == Layout::kBands  ? parameters.at(kBandDryWet).sigmoid()
                                                   : at::Tensor();
  at::Tensor signal = inputs[0];
  std::vector<at::Tensor> bands;
  if (split_) bands = split_->forward(inputs, split_parameters(parameters)).outputs;
  at::Tensor sum;
  for (size_t k = 0; k < members_.size(); ++k) {
    const at::Tensor& input = layout_ == Layout::kSerial  ? signal
                              : layout_ == Layout::kBands ? bands[k]
                                                          : inputs[0];
    ProcessorOutput member  = members_[k]->forward({input}, member_parameters(k, parameters));
    // Summed by name, so that the fit's regularisers (e.g. the delay's radii) weigh them alike.
    for (auto& [key, loss] : member.aux_losses) {
      at::Tensor& total = out.aux_losses[key];
      total             = total.defined() ? total + loss : loss;
    }
    if (layout_ == Layout::kSerial) {
      signal = member.outputs[0];
      continue;
    }
    // Mono and stereo outputs add as dual mono (broadcast over channels).
    // Each band mixed with its own dry band, in phase with it (the input is not: the bands sum
    // to an all-pass of it).
    at::Tensor weighted =
        layout_ == Layout::kBands
            ? at::lerp(input, member.outputs[0], w.select(1, int64_t(k)).view({-1, 1, 1}))
            : member.outputs[0] * w.select(1, int64_t(k)).view({-1, 1, 1});
    sum = sum.defined() ? sum + weighted : weighted;
  }
  out.outputs = {layout_ == Layout::kSerial ? signal : sum};
  return out;
}

TemporalSupport Container::temporal_support(const TensorDict& parameters) const {
  TemporalSupport support = TemporalSupport::pointwise();
  for (size_t k = 0; k < members_.size(); ++k) {
    TemporalSupport member = members_[k]->temporal_support(member_parameters(k, parameters));
    support = layout_ == Layout::kSerial ? support.then(member) : support.widest(member);
  }
  return split_ ? split_->temporal_support(split_parameters(parameters)).then(support) : support;
}

std::unique_ptr<NodeStream> Container::make_stream(const TensorDict& parameters,
                                                   const StreamSetup& setup) const {
  std::vector<std::unique_ptr<NodeStream>> members;
  std::unique_ptr<NodeStream> split;
  int64_t channels = setup.inlet_channels.front();
  if (split_) split = split_->make_stream(split_parameters(parameters), setup);
  for (size_t k = 0; k < members_.size(); ++k) {
    StreamSetup member    = setup;
    member.inlet_channels = {layout_ == Layout::kSerial  ? channels
                             : layout_ == Layout::kBands ? split->outlet_channels()[k]
                                                         : setup.inlet_channels.front()};
    members.push_back(members_[k]->make_stream(member_parameters(k, parameters), member));
    channels = members.back()->outlet_channels().front();
  }
  std::vector<float> weights;
  if (layout_ != Layout::kSerial) {
    const at::Tensor w = (split_ ? parameters.at(kBandDryWet).sigmoid() : this->weights(parameters))
                             .to(at::kFloat)
                             .reshape({-1})
                             .contiguous();
    weights.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
  }
  if (split)
    return band_stream(std::move(split), std::move(members), std::move(weights), setup.max_block);
  return container_stream(std::move(members), std::move(weights), setup.inlet_channels.front(),
                          setup.max_block);
}

}  // namespace grafx
