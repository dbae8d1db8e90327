#include <grafx/error.h>
#include <grafx/fit/checkpoint.h>
#include <grafx/fit/fit.h>
#include <grafx/fit/fit_settings.h>
#include <grafx/graph/graph_json.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/render/chunked.h>
#include <grafx/render/derivatives.h>
#include <grafx/render/parameters.h>
#include <grafx/tensors.h>
#include <grafx/text.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <iomanip>
#include <limits>
#include <set>
#include <sstream>

namespace grafx {
namespace {

/// Checks the data against the graph; returns the tracks as they will be used.
at::Tensor checked_tracks(const Graph& graph, const at::Tensor& tracks, const at::Tensor& mix) {
  graph.check();
  const int64_t n_inputs = graph.count_per_type()[NodeTypes::kIn];
  auto fail              = [](const std::string& what) { throw FitError("grafx.fit.data", what); };
  // The loss compares one output with the mix: a second output would go unfitted, unnoticed.
  const int64_t n_outputs = graph.count_per_type()[NodeTypes::kOut];
  if (n_outputs != 1)
    fail("expected a graph with one `out` node (its output is fitted to the mix), but got " +
         std::to_string(n_outputs) + "; fit each output on its own graph");
  if (!tracks.defined() || tracks.dim() != 3) fail("expected tracks of shape K×C×L");
  if (tracks.size(0) != n_inputs)
    fail("expected " + std::to_string(n_inputs) + " tracks (one per `in` node), but got " +
         std::to_string(tracks.size(0)));
  if (!mix.defined() || mix.dim() != 2 || mix.size(0) != tracks.size(1) ||
      mix.size(1) != tracks.size(2))
    fail("expected a mix of shape C×L with the tracks' channels and length (" +
         std::to_string(tracks.size(1)) + "×" + std::to_string(tracks.size(2)) + ")");
  if (!at::isFloatingType(tracks.scalar_type()) || mix.scalar_type() != tracks.scalar_type())
    fail("expected floating-point tracks and mix of one dtype");
  if (!all_finite(tracks) || !all_finite(mix))
    fail("the tracks or the mix hold non-finite samples");
  return tracks.detach().contiguous();
}

FitOptions completed(FitOptions options, SampleRate sample_rate, int64_t length) {
  auto require = [](bool ok, const std::string& what, double value) {
    if (!ok)
      throw FitError("grafx.fit.options",
                     "expected " + what + ", but got " + std::to_string(value));
  };
  auto finite = [](double x) { return std::isfinite(x); };
  check_fit_settings(options);  // every scalar setting against its range (fit_settings.h)
  // In double first: a huge crop or warm-up in seconds must not overflow a sample count.
  auto samples = [&](double seconds) {
    return int64_t(std::llround(std::min(seconds * double(sample_rate), double(length))));
  };
  const int64_t crop        = samples(options.crop_seconds);
  options.loss.sample_rate  = sample_rate;
  options.loss.skip_samples = samples(options.skip_seconds);
  const int64_t largest_fft =
      *std::max_element(options.loss.fft_sizes.begin(), options.loss.fft_sizes.end());
  if (crop - options.loss.skip_samples < largest_fft)
    throw FitError("grafx.fit.data",
                   "a crop of " + std::to_string(crop) + " samples (" + std::to_string(length) +
                       " available) minus the warm-up of " +
                       std::to_string(options.loss.skip_samples) +
                       " is shorter than the loss's largest FFT (" + std::to_string(largest_fft) +
                       "); use longer audio, a longer crop or a shorter warm-up");
  options.crop_seconds = double(crop) / double(sample_rate);
  // As lr (fit_setting("lr")): at most 10, and 0 freezes a group.
  for (const auto& [group, lr] : options.learning_rates)
    if (!(finite(lr) && lr >= 0 && lr <= 10)) {
      std::ostringstream got;
      got << lr;
      throw FitError("grafx.fit.options", "expected a finite learning rate of at least 0 for \"" +
                                              group + "\" and at most 10, but got " + got.str());
    }
  double last = 0;
  for (const auto& stage : options.stages) {
    require(finite(stage.until) && stage.until > last && stage.until <= 1,
            "stages ending in order, each at a share of the fit in (0, 1]", stage.until);
    require(!stage.groups.empty(), "a stage with at least one group", stage.until);
    last = stage.until;
  }
  return options;
}

std::string number(double value) { return significant_digits(value, 10); }

/// `graph` with the automation `automation` asks for, on a clock that covers `length` samples.
Graph with_automation(Graph graph, const FitAutomation& automation, SampleRate sample_rate,
                      int64_t length) {
  if (automation.parameters.empty()) return graph;
  auto fail = [](const std::string& what) { throw FitError("grafx.fit.options", what); };
  if (!(automation.rate_hz > 0) || !std::isfinite(automation.rate_hz) ||
      automation.rate_hz > double(sample_rate))
    fail("expected an automation rate above 0 Hz and at most the sample rate, but got " +
         number(automation.rate_hz) + " Hz");
  if (graph.has_automation()) return graph;  // its own curves, which train from the start
  const Processors processors = make_processors(graph.types(), {sample_rate});
  for (const auto& [type, names] : automation.parameters) {
    const std::vector<NodeId> nodes =
        graph.types().contains(type) ? graph.nodes_of_type(type) : std::vector<NodeId>{};
    if (nodes.empty() || !processors.count(type))
      fail("cannot automate \"" + type + "\": the graph has no processor nodes of that type");
    const std::vector<ParameterSpec> specs = node_parameter_specs(*processors.at(type), true);
    std::vector<std::string> automatable;
    for (const auto& spec : specs)
      if (!spec.automation.empty()) automatable.push_back(spec.name);
    std::set<std::string> chosen = names;
    if (chosen.empty()) chosen = {automatable.begin(), automatable.end()};
    for (const std::string& name : chosen) {
      if (std::find(automatable.begin(), automatable.end(), name) == automatable.end()) {
        std::string list;
        for (const auto& a : automatable) list += (list.empty() ? "" : ", ") + a;
        fail("cannot automate " + type + "." + name + ": " + type + " automates " + list);
      }
      for (NodeId id : nodes)  // a wet amount only where the node carries one
        if (!is_wet_amount(name) || graph.node(id).dry_wet) graph.set_automated(id, name);
    }
  }
  const double seconds = double(length) / double(sample_rate);
  graph.set_automation(
      {automation.rate_hz, int64_t(std::ceil(seconds * automation.rate_hz - 1e-9)) + 1});
  return graph;
}

bool has_curves(const Parameters& parameters) {
  for (const auto& [type, values] : parameters)
    if (!values.curves.empty()) return true;
  return false;
}

Graph without_automation(Graph graph) {
  for (NodeId id : graph.nodes())
    for (const std::string& name : std::vector<std::string>(graph.node(id).automated))
      graph.set_automated(id, name, false);
  return graph;
}

/// The keys a parameter group may name parameter `name` of `type` by, most specific first.
std::vector<std::string> group_keys(const std::string& type, const std::string& name) {
  return {type + "." + name, type, name};
}

/// Throws unless every group names a parameter of `parameters`.
void check_groups(const std::vector<std::string>& groups, const Parameters& parameters,
                  const std::string& what) {
  std::set<std::string> keys;  // every group a key may name
  for (const auto& [type, values] : parameters)
    for (const auto& [name, p] : values.named())
      for (const std::string& key : group_keys(type, name)) keys.insert(key);
  for (const auto& group : groups)
    if (!keys.count(group))
      throw FitError("grafx.fit.options",
                     what + " \"" + group +
                         "\" names no parameter of the graph; expected TYPE, TYPE.PARAMETER or "
                         "a parameter name (e.g. eq, eq.log_magnitude, dry_wet)");
}

/// The optimizer's options with the factors on lr of the parameters in a group of their own;
/// throws for a group that names no parameter.
AdamWOptions grouped(const FitOptions& options, const Parameters& parameters) {
  AdamWOptions grouped = options.optimizer;
  for (const auto& [type, values] : parameters)
    for (const auto& [name, p] : values.named())
      for (const std::string& key : group_keys(type, name)) {
        auto group = options.learning_rates.find(key);
        if (group == options.learning_rates.end()) continue;
        grouped.lr_factors[type + "." + name] = group->second / options.optimizer.lr;
        break;
      }
  std::vector<std::string> groups;
  for (const auto& [group, lr] : options.learning_rates) groups.push_back(group);
  check_groups(groups, parameters, "learning-rate group");
  return grouped;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The gain-staging regulariser of the pruning paper on the nodes of the types whose
/// descriptors ask for it (single-port types: it compares a signal with itself processed).
RenderOptions gain_staging(const NodeTypes& types) {
  std::set<std::string> regularised;
  for (TypeId t = NodeTypes::kMix + 1; t < types.size(); ++t) {
    const ProcessorDescriptor* d = find_processor(types[t].processor_name());
    if (d && d->gain_staging && types.n_inlets(t) == 1 && types.n_outlets(t) == 1)
      regularised.insert(types.name(t));
  }
  RenderOptions options;
  if (regularised.empty()) return options;
  options.extra_aux_losses = [regularised](const std::string& type,
                                           const std::vector<at::Tensor>& inputs,
                                           const std::vector<at::Tensor>& outputs) {
    return regularised.count(type)
               ? TensorDict{{"gain_staging", gain_staging_loss(inputs[0], outputs[0])}}
               : TensorDict{};
  };
  return options;
}

}  // namespace

double clip_gradient_norm(Parameters& parameters, double max_norm) {
  c10::NoGradGuard no_grad;
  at::Tensor squared;  // summed where the gradients are, read once (one wait on a GPU)
  for (const auto& [type, values] : parameters)
    for (const auto& [name, p] : values.named())
      if (p.grad().defined()) {
        at::Tensor sum = p.grad().to(at::kDouble).pow(2).sum();
        squared        = squared.defined() ? squared + sum : sum;
      }
  const double norm = squared.defined() ? std::sqrt(squared.item<double>()) : 0.0;
  if (max_norm > 0 && std::isfinite(norm) && norm > max_norm)
    for (auto& [type, values] : parameters)
      for (auto& [name, p] : values.named())
        if (p.grad().defined()) p.mutable_grad().mul_(max_norm / norm);
  return norm;
}

Fitter::Fitter(Graph graph, at::Tensor tracks, at::Tensor mix, SampleRate sample_rate,
               FitOptions options, Parameters initial)
    : graph_(with_automation(std::move(graph), options.automation, sample_rate,
                             tracks.defined() && tracks.dim() == 3 ? tracks.size(2) : 0)),
      tracks_(checked_tracks(graph_, tracks, mix).to(at::kCPU)),  // initialised on the CPU
      mix_(mix.detach().to(at::kCPU).contiguous()),
      sample_rate_(sample_rate),
      options_(completed(std::move(options), sample_rate, tracks_.size(2))),
      crop_samples_(std::llround(options_.crop_seconds * double(sample_rate))),
      processors_(make_processors(graph_.types(), {sample_rate})),
      plan_(make_render_plan(to_tensor(graph_), options_.schedule)),
      static_plan_(make_render_plan(to_tensor(without_automation(graph_)), options_.schedule)),
      // Curves given with the parameters (a fitted console's) train from the start.
      curves_live_(options_.automation.parameters.empty() || options_.automation.start == 0 ||
                   has_curves(initial)),
      render_options_(gain_staging(graph_.types())),
      parameters_(
          initial.empty()
              ? create_parameters(graph_, processors_, {options_.seed, tracks_.scalar_type(), true})
              : with_curves(graph_, processors_,
                            cloned_parameters(initial, true))),  // trained in place
      loss_(options_.loss),
      optimizer_(parameters_, grouped(options_, parameters_)) {
  render_options_.node_gradient_hooks = options_.node_gradient_hooks;
  if (parameters_.empty())
    throw FitError("grafx.fit.options",
                   "the graph has nothing to fit: no processor with parameters and no dry/wet "
                   "node (e.g. a chain of mix nodes only)");
  for (const auto& stage : options_.stages)
    check_groups({stage.groups.begin(), stage.groups.end()}, parameters_, "stage group");
  if (initial.empty()) {
    // The initialisation finds constant values, on the graph without curves; curves that train
    // from the start then begin flat at them, as they do when they start later.
    const bool curves_from_start = curves_live_;
    curves_live_                 = false;
    Parameters started           = live(parameters_);
    initialisation_              = initialise_from_data(
                     without_automation(graph_), processors_, live_plan(), started, tracks_, mix_, sample_rate_,
                     options_.initialisation, [this] { return evaluate().total.item<double>(); });
    for (const auto& [type, values] : started)
      for (const auto& [name, p] : values.named()) parameters_[type][name] = p;
    if (curves_from_start) start_curves();
  }
  if (!initial.empty())
    check_parameters(graph_, processors_, parameters_, 0, tracks_.scalar_type());
  bool elsewhere = options_.device != tracks_.device();
  for (const auto& [type, values] : parameters_)
    for (const auto& [name, p] : values.named())
      elsewhere = elsewhere || p.device() != options_.device;
  if (elsewhere) move_to(options_.device);
  initial_parameters_ = cloned_parameters(parameters_);
}

void Fitter::move_to(at::Device device) {
  options_.device        = device;
  const TensorDict state = optimizer_.state();
  tracks_                = tracks_.to(device);
  mix_                   = mix_.to(device);
  song_frames_.reset();  // made again on the device at the next step
  next_inputs_.reset();
  parameters_ =
      map_parameters(parameters_, [&](const std::string&, const std::string&, const at::Tensor& p) {
        return p.detach().to(device).requires_grad_(true);
      });
  initial_parameters_ = map_parameters(
      initial_parameters_,
      [&](const std::string&, const std::string&, const at::Tensor& p) { return p.to(device); });
  optimizer_ = AdamW(parameters_, grouped(options_, parameters_));
  optimizer_.load_state(state);  // the moments and step count carry over
  // Captured steps read the old device's buffers: the next steps capture again.
  sparsity_masks_.clear();
  sparsity_weight_on_device_ = at::Tensor();
  step_graph_                = DeviceGraph();
  graph_shape_ = warmed_shape_ = {};
  graph_inputs_                = {};
  graph_record_                = at::Tensor();
  uncapturable_.clear();
}

Graph Fitter::rendered_graph() const { return curves_live_ ? graph_ : without_automation(graph_); }

Parameters Fitter::live(const Parameters& parameters) const {
  if (curves_live_) return parameters;
  Parameters without = parameters;
  for (auto& [type, values] : without) values.curves.clear();
  return without;
}

void Fitter::start_curves() {
  c10::NoGradGuard no_grad;
  for (auto& [type, values] : parameters_)
    for (auto& [parameter, curve] : values.curves)
      curve.copy_(values.at(parameter).unsqueeze(1).expand_as(curve));
  curves_live_ = true;
}

at::Tensor Fitter::curve_roughness(const Parameters& parameters) const {
  std::vector<at::Tensor> bends;  // |second differences| of the automated nodes' curves
  for (const auto& [type, values] : parameters)
    for (const auto& [parameter, curve] : values.curves) {
      if (curve.size(1) < 3) continue;
      std::vector<int64_t> rows;
      const std::vector<NodeId> ids = graph_.nodes_of_type(type);
      for (size_t row = 0; row < ids.size(); ++row)
        if (node_has(graph_.node(ids[row]), curve_name(parameter))) rows.push_back(int64_t(row));
      at::Tensor c    = curve.index_select(0, device_index(rows, curve.device()));
      const int64_t n = c.size(1);
      bends.push_back((c.narrow(1, 2, n - 2) - 2 * c.narrow(1, 1, n - 2) + c.narrow(1, 0, n - 2))
                          .abs()
                          .flatten());
    }
  return bends.empty() ? at::zeros({}, tracks_.options()) : at::cat(bends).mean();
}

namespace {

/// The crops of `n` samples of tracks (K×C×L) at `starts`, silent before the song: a K×C×n view
/// for one crop within the song, else K×C×n or B×K×C×n for several, in one allocation (which
/// fails at once where the batch cannot be held).
at::Tensor crops_of(const at::Tensor& tracks, const std::vector<int64_t>& starts, int64_t n) {
  if (starts.size() == 1 && starts[0] >= 0) return tracks.narrow(2, starts[0], n);
  at::Tensor crops =
      at::empty({int64_t(starts.size()), tracks.size(0), tracks.size(1), n}, tracks.options());
  for (size_t b = 0; b < starts.size(); ++b) {
    const int64_t before = std::max<int64_t>(0, -starts[b]);
    at::Tensor crop      = crops.select(0, int64_t(b));
    crop.narrow(2, 0, before).zero_();
    crop.narrow(2, before, n - before).copy_(tracks.narrow(2, starts[b] + before, n - before));
  }
  return starts.size() == 1 ? crops.select(0, 0) : crops;
}

}  // namespace

int64_t Fitter::crop_start(int64_t step, int64_t crop) const {
  // Crop 0 as before crops per step existed, so that one crop per step fits as it did.
  const uint64_t key  = splitmix64(uint64_t(step)) ^ (crop ? splitmix64(~uint64_t(crop)) : 0);
  const uint64_t draw = splitmix64(options_.seed ^ key);
  // The compared part (after the warm-up) lies within the song; its centre is drawn uniformly
  // over the song and the part moved inside, so that every second is compared as often on
  // average, the song's ends too. (Uniform starts compared the first and last compared lengths
  // less, ramping down to never, and the first warm-up's length never.) A crop at the start
  // warms up on the silence before the song, as a whole-song render starts from silence.
  const int64_t length = tracks_.size(2), skip = loss_.options().skip_samples,
                compared = crop_samples_ - skip, last = length - compared;
  const int64_t centre = int64_t(draw % uint64_t(length));
  int64_t first        = std::min(std::max<int64_t>(centre - compared / 2, 0), last);
  // Down onto the grid of the song's frames (MixLoss::frame_alignment), but for the part that
  // ends with the song: its last samples are compared nowhere else.
  if (first < last) first -= first % loss_.frame_alignment();
  return first - skip;
}

double LearningRateSchedule::factor(int64_t step, double done) const {
  const double f = std::min(1.0, std::max(0.0, done));
  double factor  = final_ratio + (1 - final_ratio) * (1 + std::cos(M_PI * f)) / 2;
  if (step < warmup_steps) factor *= 0.1 + 0.9 * double(step) / double(warmup_steps);
  return factor;
}

Fitter::StepInputs Fitter::step_inputs(int64_t step) {
  if (next_inputs_ && next_inputs_->first == step) {
    StepInputs inputs = std::move(next_inputs_->second);
    next_inputs_.reset();
    return inputs;
  }
  return make_step_inputs(step);
}

Fitter::StepInputs Fitter::make_step_inputs(int64_t step) {
  StepInputs inputs;
  for (int64_t b = 0; b < options_.crops_per_step; ++b)
    inputs.starts.push_back(crop_start(step, b));
  if (!song_frames_) song_frames_ = loss_.song_frames(mix_);
  inputs.sources = crops_of(tracks_, inputs.starts, crop_samples_);
  inputs.target_frames =
      loss_.crop_target_frames(mix_, *song_frames_, inputs.starts, crop_samples_);
  if (tracks_.device().is_cuda()) {
    // Pinned, so that the copy is queued without waiting for the step the device runs now.
    const at::Tensor starts = at::tensor(inputs.starts, at::kLong).pin_memory();
    inputs.first_samples    = starts.to(tracks_.device(), /*non_blocking=*/true);
  }
  return inputs;
}

at::Tensor Fitter::crop_loss(const Parameters& all, const StepInputs& inputs, MixLossTerms& terms,
                             at::Tensor& regularization) {
  const Parameters parameters = live(all);
  RenderOptions options       = render_options_;
  options.time.sample_rate    = sample_rate_;  // the crops' place on the curves
  // The tracks were checked once, and the optimizer applies no update that is not finite: no
  // check per step (each would wait for the device).
  options.check_finite = false;
  const bool one       = inputs.starts.size() == 1;
  if (one)
    options.time.first_sample = inputs.starts[0];
  else
    options.time.item_first_samples = inputs.starts;
  options.time.first_samples = inputs.first_samples;  // on a GPU: read there, and captured
  const RenderResult rendered =
      render(live_plan(), processors_, parameters, inputs.sources, options);
  terms = loss_.terms_against(
      one ? rendered.outputs[0].unsqueeze(0) : rendered.outputs.select(1, 0), inputs.target_frames);
  TensorDict aux;  // every type's aux losses, by name, averaged over the crops
  for (const auto& [type, named] : rendered.aux_losses)
    for (const auto& [name, batched] : named) {
      at::Tensor values = batched.dim() == 2 ? batched.mean(0) : batched;
      aux[name]         = aux.count(name) ? at::cat({aux[name], values}) : values;
    }
  regularization = regularization_loss(aux, options_.regularizer_weights);
  if (sparsity_weight_ > 0)  // the weight from the device: a pruning ramp moves it every step
    regularization = regularization + sparsity_weight_on_device_ * sparsity(parameters);
  if (curves_live_ && options_.automation.smoothness > 0)
    regularization = regularization + options_.automation.smoothness * curve_roughness(parameters);
  return terms.total + regularization;
}

at::Tensor Fitter::device_step(const StepInputs& inputs, double done) {
  MixLossTerms terms;
  at::Tensor regularization, total;
  Parameters curvature;
  if (options_.hessian_preconditioning) {
    // Hutchinson: E[v ⊙ Hv] = diag H for v of random signs; the gradient comes with it.
    const Parameters signs = map_parameters(
        parameters_, [](const std::string&, const std::string&, const at::Tensor& p) {
          return at::randint(0, 2, p.sizes(), p.options()).mul_(2).sub_(1);
        });
    CurvatureResult c =
        hvp([&](const Parameters& all) { return crop_loss(all, inputs, terms, regularization); },
            parameters_, signs);
    total = c.loss;
    for (auto& [type, values] : parameters_)
      for (auto& [name, p] : values.named()) {
        const at::Tensor& g = c.gradient.at(type).at(name);
        p.mutable_grad()    = g;
        // |diag H| where it exceeds |g| (a Newton step there, lr·g/H, shorter than Adam's);
        // |g| elsewhere: near-zero curvature would otherwise make a step of any size.
        curvature[type][name] = at::maximum(
            (signs.at(type).at(name) * c.hessian_vector.at(type).at(name)).abs(), g.abs());
      }
  } else {
    total = crop_loss(parameters_, inputs, terms, regularization);
    total.backward();  // a loss that is not finite gives gradients that are not: no update
  }
  freeze_outside_stage(done);
  const AdamW::Update update = optimizer_.update(options_.max_gradient_norm, total, curvature);
  c10::NoGradGuard no_grad;
  return at::stack({total.to(at::kDouble), terms.total.to(at::kDouble),
                    regularization.to(at::kDouble), update.gradient_norm,
                    update.applied.to(at::kDouble)});
}

std::string Fitter::step_shape(double done) const {
  const auto stage = std::find_if(options_.stages.begin(), options_.stages.end(),
                                  [&](const FitStage& s) { return done < s.until; });
  return "plan " + std::to_string(plan_version_) + (curves_live_ ? ", curves" : "") + ", stage " +
         std::to_string(stage - options_.stages.begin()) +
         (sparsity_weight_ > 0 ? ", sparsity" : "");
}

void Fitter::tell(const std::string& note) {
  if (!told_.insert(note).second) return;
  note_ += (note_.empty() ? "" : "; ") + note;
}

at::Tensor Fitter::captured_step(const StepInputs& inputs, double done) {
  const at::Device device = options_.device;
  if (!options_.capture_steps || !DeviceGraph::available(device)) return {};
  const std::string shape = step_shape(done);
  if (uncapturable_.count(shape)) return {};
  if (shape == graph_shape_) {  // the step's inputs into the graph's, then one launch
    graph_inputs_.sources.copy_(inputs.sources);
    graph_inputs_.first_samples.copy_(inputs.first_samples);
    for (size_t r = 0; r < inputs.target_frames.size(); ++r)
      graph_inputs_.target_frames[r].copy_(inputs.target_frames[r]);
    step_graph_.replay();
    return graph_record_;
  }
  at::Tensor record;
  if (shape != warmed_shape_) {  // a new shape: once as before, on the stream captures use
    warmed_shape_ = shape;
    step_graph_.run_on_capture_stream(device, [&] { record = device_step(inputs, done); });
    return record;
  }
  graph_inputs_ = {inputs.starts, inputs.sources.clone(), {}, inputs.first_samples.clone()};
  for (const at::Tensor& frames : inputs.target_frames)
    graph_inputs_.target_frames.push_back(frames.clone());
  try {
    step_graph_.capture(device, [&] { graph_record_ = device_step(graph_inputs_, done); });
  } catch (const DeviceGraphError& e) {
    uncapturable_.insert(shape);
    optimizer_.zero_grad();
    graph_shape_.clear();
    tell(std::string("steps run uncaptured: ") + e.what());
    return {};
  }
  graph_shape_ = shape;
  tell("steps replay a CUDA graph");
  step_graph_.replay();  // capturing ran nothing: this is the step
  return graph_record_;
}

Fitter::OneAtATime::OneAtATime(std::atomic<bool>& busy) : busy_(busy) {
  if (busy_.exchange(true))
    throw FitError("grafx.fit.busy",
                   "this fit is already taking a step (in another thread, or from its own "
                   "progress callback): a Fitter takes one step at a time");
}

FitRecord Fitter::step(double done) {
  const OneAtATime one(*busy_);
  return take_step(done);
}

FitRecord Fitter::take_step(double done) {
  const int64_t s = steps_done();
  if (done < 0) done = options_.n_steps > 0 ? double(s) / double(options_.n_steps) : 0;
  optimizer_.set_lr(options_.optimizer.lr * options_.lr_schedule.factor(s, done));
  if (options_.reset_optimizer_every > 0 && s > 0 && s % options_.reset_optimizer_every == 0)
    optimizer_.reset();
  if (!curves_live_ && done >= options_.automation.start) start_curves();
  optimizer_.prepare();
  if (sparsity_weight_ > 0) {
    if (!sparsity_weight_on_device_.defined() ||
        sparsity_weight_on_device_.device() != tracks_.device())
      sparsity_weight_on_device_ = at::empty({}, tracks_.options());
    sparsity_weight_on_device_.fill_(sparsity_weight_);
  }
  const StepInputs inputs = step_inputs(s);
  at::Tensor numbers      = captured_step(inputs, done);
  if (!numbers.defined()) numbers = device_step(inputs, done);
  // On a GPU the step is queued, not done: make the next step's inputs meanwhile.
  if (!tracks_.device().is_cpu() && (options_.n_steps <= 0 || s + 1 < options_.n_steps))
    next_inputs_.emplace(s + 1, make_step_inputs(s + 1));
  const at::Tensor read = numbers.to(at::kCPU);  // the step's one wait for the device
  const double* n       = read.data_ptr<double>();
  FitRecord record{s + 1, n[0], n[1], n[2]};
  if (std::isfinite(record.loss)) record.gradient_norm = n[3];
  if (n[4] != 0) {
    optimizer_.count_step();
    non_finite_in_a_row_ = 0;
  } else {
    record.skipped = true;
    record.loss    = std::numeric_limits<double>::quiet_NaN();
    if (++non_finite_in_a_row_ >= options_.max_non_finite_steps) {
      history_.push_back(record);
      throw FitError("grafx.fit.diverged", "the loss or its gradients were not finite for " +
                                               std::to_string(non_finite_in_a_row_) +
                                               " steps in a row (up to step " +
                                               std::to_string(record.step) +
                                               "); try a lower learning rate or gradient clipping");
    }
  }
  history_.push_back(record);
  return record;
}

void Fitter::run(const std::function<void(const FitProgress&)>& progress) {
  const OneAtATime one(*busy_);
  using clock                   = std::chrono::steady_clock;
  const clock::time_point start = clock::now();
  std::deque<clock::time_point> recent{start};  // the last steps' end times
  const double budget = options_.time_budget_seconds;
  auto elapsed        = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  int64_t skipped     = 0;
  for (const auto& r : history_) skipped += r.skipped;
  // The thread count the caller set comes back however run ends.
  struct RestoreThreads {
    int threads = at::get_num_threads();
    ~RestoreThreads() { at::set_num_threads(threads); }
  } restore;
  ThreadTuner tuner(restore.threads);
  while (steps_done() < options_.n_steps && (budget <= 0 || elapsed() < budget)) {
    double done = double(steps_done()) / double(options_.n_steps);
    if (budget > 0) done = std::max(done, elapsed() / budget);
    const int threads = options_.adapt_threads ? tuner.threads_for(steps_done()) : restore.threads;
    if (threads != at::get_num_threads()) at::set_num_threads(threads);
    const clock::time_point step_start = clock::now();
    FitRecord record                   = take_step(done);
    recent.push_back(clock::now());
    tuner.record(threads, std::chrono::duration<double>(recent.back() - step_start).count());
    skipped += record.skipped;
    if (recent.size() > 11) recent.pop_front();
    if (!progress) continue;
    FitProgress p;
    p.step          = steps_done();
    p.n_steps       = options_.n_steps;
    p.record        = record;
    p.skipped_steps = skipped;
    p.learning_rate = optimizer_.options().lr;
    p.threads       = threads;
    p.note          = std::move(note_);
    note_.clear();
    double seconds     = std::chrono::duration<double>(recent.back() - recent.front()).count();
    p.steps_per_second = seconds > 0 ? double(recent.size() - 1) / seconds : 0;
    p.eta_seconds =
        p.steps_per_second > 0 ? double(options_.n_steps - p.step) / p.steps_per_second : 0;
    if (budget > 0) p.eta_seconds = std::min(p.eta_seconds, std::max(0.0, budget - elapsed()));
    progress(p);
  }
}

void Fitter::freeze_outside_stage(double done) {
  auto stage = std::find_if(options_.stages.begin(), options_.stages.end(),
                            [&](const FitStage& s) { return done < s.until; });
  if (stage == options_.stages.end()) return;
  for (auto& [type, values] : parameters_)
    for (auto& [name, p] : values.named()) {
      const std::vector<std::string> keys = group_keys(type, name);
      if (std::none_of(keys.begin(), keys.end(), [&](auto& k) { return stage->groups.count(k); }))
        p.mutable_grad() = at::Tensor();  // AdamW leaves it, and its moments, as they are
    }
}

at::Tensor Fitter::sparsity(const Parameters& parameters) {
  at::Tensor total = at::zeros({}, tracks_.options());
  for (const auto& [type, values] : parameters) {
    if (!values.wet.defined()) continue;
    at::Tensor& mask = sparsity_masks_[type];  // made once per plan: no copy to the device per step
    if (!mask.defined()) {
      std::vector<double> counted;  // rows in graph order: dry/wet nodes not bypassed
      for (NodeId id : graph_.nodes_of_type(type)) {
        const Node& node = graph_.node(id);
        counted.push_back(node.dry_wet && !node.bypassed ? 1.0 : 0.0);
      }
      mask = at::tensor(counted, at::kDouble).to(tracks_.options()).view({-1, 1});
    }
    total = total + (values.wet.sigmoid() * mask).sum();
  }
  return total;
}

void Fitter::set_bypassed(const std::vector<NodeId>& nodes, bool bypassed) {
  for (NodeId id : nodes) graph_.set_bypassed(id, bypassed);
  plan_        = make_render_plan(to_tensor(graph_), options_.schedule);
  static_plan_ = make_render_plan(to_tensor(without_automation(graph_)), options_.schedule);
  sparsity_masks_.clear();
  ++plan_version_;  // the step captured for the old plans renders them: capture again
}

Parameters Fitter::detached_parameters() const {
  return map_parameters(parameters_, [](const std::string&, const std::string&,
                                        const at::Tensor& p) { return p.detach(); });
}

at::Tensor Fitter::render_mix() const {
  return render_in_chunks(live_plan(), processors_, live(detached_parameters()), tracks_,
                          ChunkOptions::whole_song(sample_rate_))[0];
}

namespace {

/// The loss of a whole song: the fit's, without the warm-up skip.
MixLoss whole_song_loss(MixLossOptions loss) {
  loss.skip_samples = 0;
  return MixLoss(loss);
}

/// `terms` on the CPU: a few numbers, for reports on any device.
MixLossTerms on_cpu(MixLossTerms terms) {
  for (at::Tensor* t : {&terms.total, &terms.per_item, &terms.lr, &terms.mid, &terms.side,
                        &terms.spectral_convergence, &terms.log_magnitude})
    if (t->defined()) *t = t->to(at::kCPU);
  return terms;
}

}  // namespace

MixLossTerms whole_song_terms(const RenderPlan& plan, const Processors& processors,
                              const Parameters& parameters, const at::Tensor& sources,
                              const at::Tensor& target, SampleRate sample_rate,
                              const MixLossOptions& loss) {
  c10::NoGradGuard no_grad;
  MixLossStream stream = whole_song_loss(loss).stream(target.size(-1));
  render_chunks(
      plan, processors, parameters, sources,
      [&](int64_t start, const at::Tensor& outputs) {
        stream.add(outputs[0], target.narrow(-1, start, outputs.size(-1)));
      },
      ChunkOptions::whole_song(sample_rate));
  return stream.finish();
}

MixLossTerms Fitter::evaluate(const at::Tensor& fitted) const {
  // In chunks, rendered or cut from `fitted`: the spectrograms of a whole song would not fit
  // in memory (MixLossStream).
  if (fitted.defined())
    return on_cpu(whole_song_loss(options_.loss).streamed_terms(fitted.to(mix_.device()), mix_));
  return on_cpu(whole_song_terms(live_plan(), processors_, live(detached_parameters()), tracks_,
                                 mix_, sample_rate_, options_.loss));
}

MixLossBreakdown Fitter::evaluate_parts(const at::Tensor& fitted) const {
  MixLossBreakdown b = whole_song_loss(options_.loss).breakdown(fitted.to(mix_.device()), mix_);
  b.terms            = on_cpu(b.terms);
  for (MixLossParts* parts : {&b.bands, &b.seconds}) {
    parts->loss     = parts->loss.to(at::kCPU);
    parts->channels = parts->channels.to(at::kCPU);
  }
  return b;
}

std::map<std::string, std::string> Fitter::identity() const {
  // On the CPU: the same sums on every device, so that a checkpoint resumes on another.
  at::Tensor t = tracks_.to(at::kCPU, at::kDouble), m = mix_.to(at::kCPU, at::kDouble);
  // What the settings table does not hold: the graph, the data, and the settings as resolved
  // for them (crops and warm-ups in samples), each compared on resume.
  std::map<std::string, std::string> identity = {
      {"graph", graph_to_json(graph_)},
      {"sample_rate", std::to_string(sample_rate_)},
      {"crop_samples", std::to_string(crop_samples_)},
      {"skip_samples", std::to_string(options_.loss.skip_samples)},
      {"data", std::to_string(tracks_.size(0)) + "x" + std::to_string(tracks_.size(1)) + "x" +
                   std::to_string(tracks_.size(2)) + ", tracks " +
                   number(t.abs().sum().item<double>()) + ", mix " +
                   number(m.abs().sum().item<double>())}};
  for (const auto& [node, hook] : options_.node_gradient_hooks)
    identity["gradient_hook." + std::to_string(node)] = hook.description;
  for (const auto& [group, lr] : options_.learning_rates) identity["lr." + group] = number(lr);
  for (const auto& stage : options_.stages) {
    std::string groups;
    for (const auto& group : stage.groups) groups += (groups.empty() ? "" : ",") + group;
    identity["stage." + number(stage.until)] = groups;
  }
  return identity;
}

void Fitter::save_checkpoint(const std::string& path) const {
  Checkpoint checkpoint;
  for (const auto& [type, values] : parameters_)
    for (const auto& [name, p] : values.named())
      checkpoint.parameters[type + "." + name] = p.detach();
  checkpoint.optimizer = optimizer_.state();
  checkpoint.history.assign(history_.begin(), history_.end());
  if (!options_.automation.parameters.empty()) checkpoint.curves_live = curves_live_;
  checkpoint.identity = identity();
  checkpoint.settings = fit_settings_json(options_);
  write_checkpoint(path, checkpoint);
}

void Fitter::load_checkpoint(const std::string& path) {
  Checkpoint checkpoint = read_checkpoint(path);
  auto fail             = [&](const std::string& what) {
    throw FitError("grafx.fit.checkpoint", path + ": " + what);
  };
  const auto mine = identity();
  auto compare    = [&](const std::string& key) {
    auto recorded_value = checkpoint.identity.find(key);
    auto now            = mine.find(key);
    const std::string before =
        recorded_value == checkpoint.identity.end() ? "none" : recorded_value->second;
    const std::string value = now == mine.end() ? "none" : now->second;
    if (before == value) return;
    if (key == "graph") fail("made for another graph");
    if (key == "data") fail("made for other data (" + before + "; now " + value + ")");
    fail("made with " + key + " " + before + ", but this fit uses " + value +
            " (resume with the settings the fit was started with)");
  };
  // The first difference named, in this order: a sample rate that differs would show as crop
  // sizes that differ too; then the settings; then the rest either side records (crops and
  // warm-ups in samples, learning-rate groups, stages, gradient hooks): one set only on one side
  // is a change too.
  for (const char* key : {"graph", "data", "sample_rate"}) compare(key);
  const std::string changed = resume_difference(checkpoint.settings, options_);
  if (!changed.empty()) fail(changed);
  std::set<std::string> rest;
  for (const auto& entry : mine) rest.insert(entry.first);
  for (const auto& entry : checkpoint.identity) rest.insert(entry.first);
  for (const std::string& key : rest) compare(key);
  c10::NoGradGuard no_grad;
  for (auto& [type, values] : parameters_)
    for (auto& [name, p] : values.named()) {
      auto it = checkpoint.parameters.find(type + "." + name);
      if (it == checkpoint.parameters.end() || it->second.sizes() != p.sizes())
        fail("lacks parameter " + type + "." + name);
      p.copy_(it->second);
    }
  if (checkpoint.curves_live) curves_live_ = *checkpoint.curves_live;
  try {
    optimizer_.load_state(checkpoint.optimizer);
  } catch (const FitError& e) {
    fail(e.message());
  }
  const int64_t held = int64_t(checkpoint.history.size());
  if (held > options_.n_steps)
    fail("holds " + std::to_string(held) + " steps, more than the " +
         std::to_string(options_.n_steps) + " asked for; ask for at least " + std::to_string(held) +
         " steps to continue it");
  history_.assign(checkpoint.history.begin(), checkpoint.history.end());
  non_finite_in_a_row_ = 0;
  for (const FitRecord& record : history_)
    non_finite_in_a_row_ = record.skipped ? non_finite_in_a_row_ + 1 : 0;
}

}  // namespace grafx
