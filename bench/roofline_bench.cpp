// Roofline benchmark: each step of a fit on the paper's console (8 tracks, 3 subgroups, the chain
// e-c-n-s-g-d-r with dry/wet, stereo crops of 3.8 s at 30 kHz) timed forward and backward on its
// own, against its own lower bound: the FFTs it does (recorded by dsp::FftLedger, each timed alone
// at its size and row count on this machine's threads) plus the bytes it must read and write at
// this machine's measured bandwidth. The sum of the bounds is the floor; the table reports
// measured / floor for the forward, the backward, forward+backward and a whole fit step.
//
//   build/bin/roofline_bench [repeats=5]

#include <grafx/dsp/parallel_fft.h>
#include <grafx/fit/fit.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/program.h>
#include <grafx/render/parameters.h>
#include <grafx/render/render.h>

#include "bench_support.h"
#include "render/steps.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <tuple>

using namespace grafx;

namespace {

using clock_type = std::chrono::steady_clock;

double elapsed_ms(clock_type::time_point since) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - since).count();
}

/// The fastest of `repeats` runs after a warm-up: a floor is compared with what the work can do
/// at its best, and bursts of other work on a shared machine only ever add time.
double best_ms(const std::function<void()>& work, int repeats) {
  work();
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = clock_type::now();
    work();
    best = std::min(best, elapsed_ms(t0));
  }
  return best;
}

/// The fastest recorded forward pass (as a fit step runs it, with gradients) and the fastest
/// backward pass of `objective`, each timed on its own, after a warm-up; `clear` runs after
/// each backward (untimed).
struct Passes {
  double forward_ms = 1e300, backward_ms = 1e300;
};
Passes time_passes(const std::function<at::Tensor()>& objective, const std::function<void()>& clear,
                   int repeats) {
  Passes best;
  for (int i = 0; i <= repeats; ++i) {
    auto t0                 = clock_type::now();
    at::Tensor value        = objective();
    const double forward_ms = elapsed_ms(t0);
    auto t1                 = clock_type::now();
    value.backward();
    const double backward_ms = elapsed_ms(t1);
    clear();
    if (i == 0) continue;  // warm-up
    best.forward_ms  = std::min(best.forward_ms, forward_ms);
    best.backward_ms = std::min(best.backward_ms, backward_ms);
  }
  return best;
}

/// Bytes per second of a large copy on every thread (it reads and writes each byte once).
double measured_bandwidth(int repeats) {
  const int64_t n   = int64_t(64) << 20;  // 256 MiB of float32: far beyond any cache
  at::Tensor source = at::rand({n}), target = at::empty({n});
  double ms = best_ms([&] { target.copy_(source); }, repeats);
  return 2.0 * 4.0 * double(n) / (ms * 1e-3);
}

/// Times the transforms of a ledger's records alone: the rows of each size and direction
/// together, in one call split across threads as dsp::rfft_rows does (the bound does not depend
/// on how the work batched them: in one call, or in groups of rows on several threads).
class FftTimes {
 public:
  explicit FftTimes(int repeats) : repeats_(repeats) {}
  double of(const std::vector<dsp::FftRecord>& records) {
    std::map<std::pair<int64_t, bool>, int64_t> rows;  // (size, inverse) -> rows
    for (const auto& r : records) rows[{r.size, r.inverse}] += r.rows;
    double total = 0;
    for (const auto& [key, n] : rows) total += of({key.first, n, key.second});
    return total;
  }

 private:
  double of(const dsp::FftRecord& r) {
    auto key = std::make_tuple(r.size, r.rows, r.inverse);
    auto it  = cache_.find(key);
    if (it != cache_.end()) return it->second;
    c10::NoGradGuard no_grad;
    double ms;
    if (r.inverse) {
      at::Tensor spectra = at::randn({r.rows, r.size / 2 + 1}, at::kComplexFloat);
      ms                 = best_ms([&] { dsp::irfft_rows(spectra, r.size); }, repeats_);
    } else {
      at::Tensor rows = at::randn({r.rows, r.size});
      ms              = best_ms([&] { dsp::rfft_rows(rows, r.size); }, repeats_);
    }
    return cache_[key] = ms;
  }
  int repeats_;
  std::map<std::tuple<int64_t, int64_t, bool>, double> cache_;
};

int64_t numel(const std::vector<at::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

struct Part {
  std::string name;
  double forward_ms = 0, backward_ms = 0, forward_bound_ms = 0, backward_bound_ms = 0;
  int64_t forward_ffts = 0, backward_ffts = 0;
  std::string transforms;  // "rfft 180000×16, ..." of both passes
};

/// "rfft 180000×32, irfft 4096×212": the records grouped by direction and size, rows summed.
std::string describe(const std::vector<dsp::FftRecord>& records) {
  std::map<std::pair<bool, int64_t>, int64_t> rows;
  for (const auto& r : records) rows[{r.inverse, r.size}] += r.rows;
  std::string text;
  for (const auto& [key, n] : rows)
    text += (text.empty() ? "" : ", ") + std::string(key.first ? "irfft " : "rfft ") +
            std::to_string(key.second) + "×" + std::to_string(n);
  return text;
}

int64_t count(const std::vector<dsp::FftRecord>& records) {
  int64_t n = 0;
  for (const auto& r : records) n += r.rows;
  return n;
}

/// The records of `all` beyond the first `skip`.
std::vector<dsp::FftRecord> after(const std::vector<dsp::FftRecord>& all, size_t skip) {
  return {all.begin() + int64_t(std::min(skip, all.size())), all.end()};
}

/// Times `objective` (time_passes), records the transforms of one forward and backward pass,
/// and bounds both passes: their transforms timed alone plus the floats `moved` says each must
/// read and write ({forward, backward}, asked after the passes ran) at `ms_per_float`.
Part measure(std::string name, const std::function<at::Tensor()>& objective,
             const std::function<void()>& clear,
             const std::function<std::pair<double, double>()>& moved, int repeats,
             FftTimes& fft_times, double ms_per_float) {
  Part part{std::move(name)};
  const Passes passes = time_passes(objective, clear, repeats);
  part.forward_ms     = passes.forward_ms;
  part.backward_ms    = passes.backward_ms;
  std::vector<dsp::FftRecord> forward_records, backward_records;
  {
    dsp::FftLedger ledger;
    at::Tensor value = objective();
    forward_records  = ledger.records();
    value.backward();
    backward_records = after(ledger.records(), forward_records.size());
    clear();
  }
  const auto [forward_floats, backward_floats] = moved();
  part.forward_bound_ms  = fft_times.of(forward_records) + forward_floats * ms_per_float;
  part.backward_bound_ms = fft_times.of(backward_records) + backward_floats * ms_per_float;
  part.forward_ffts      = count(forward_records);
  part.backward_ffts     = count(backward_records);
  part.transforms        = describe(forward_records) + "; " + describe(backward_records);
  return part;
}

int run(int argc, char** argv) {
  const int repeats = int(bench::parse_arguments(argc, argv, {{"repeats", 5, 1, 1000}})[0]);
  bench::setup_threads();
  const int64_t sample_rate = 30000, crop = 114000;
  std::cout << "# Roofline of a fit step\n\n" << bench::machine_description() << "\n\n";

  ConsoleOptions console_options;
  console_options.n_tracks     = 8;
  console_options.track_groups = ConsoleOptions::even_groups(8, 3);
  console_options.chain        = default_console_chain();
  console_options.dry_wet      = true;
  Graph console                = build_console(console_options, registry_node_types()).graph;
  at::manual_seed(0);
  const int64_t length = 10 * sample_rate;
  at::Tensor tracks    = (at::randn({8, 1, length}) * 0.1).expand({8, 2, length}).contiguous();
  at::Tensor mix       = tracks.sum(0) * 0.5;
  FitOptions fit_options;
  fit_options.n_steps = 1000000;
  Fitter fitter(console, tracks, mix, sample_rate, fit_options);
  const Processors& processors = fitter.processors();
  RenderPlan plan              = make_render_plan(to_tensor(console), fit_options.schedule);
  Parameters parameters;
  for (const auto& [type, named] : fitter.parameters())
    for (const auto& [name, p] : named.named())
      parameters[type][name] = p.detach().clone().requires_grad_(true);
  at::Tensor sources = tracks.narrow(2, 0, crop).contiguous();
  at::Tensor target  = mix.narrow(1, 0, crop).unsqueeze(0).contiguous();

  const double bandwidth    = measured_bandwidth(repeats);
  const double ms_per_float = 4.0 / bandwidth * 1e3;
  FftTimes fft_times(repeats);

  // Each step's inputs, and whether the render differentiates them (not the sources).
  std::vector<std::vector<at::Tensor>> step_inputs(plan.steps.size());
  std::vector<bool> inputs_need_grad(plan.steps.size());
  RenderOptions capture;
  capture.observer = [&](const StepView& view) {
    for (const auto& x : view.inputs) step_inputs[size_t(view.index)].push_back(x.detach().clone());
    inputs_need_grad[size_t(view.index)] = !view.inputs.empty() && view.inputs[0].requires_grad();
  };
  render(plan, processors, parameters, sources, capture);

  std::vector<Part> parts;
  std::map<std::string, bool> shared_rows;  // one set of parameters for the whole batch
  for (const auto& [type, named] : parameters) shared_rows[type] = false;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& step = plan.steps[k];
    if (step.type == NodeTypes::kIn || step.type == NodeTypes::kOut || step.type == NodeTypes::kMix)
      continue;
    const int64_t m = int64_t(step.nodes.size());
    std::vector<at::Tensor> inputs;
    for (const auto& x : step_inputs[k]) inputs.push_back(x.unsqueeze(0));  // [1, m, C, L]
    auto rows = [&] {  // prepared anew each time: a backward frees what the last one recorded
      auto prepared =
          grafx::detail::prepare_parameters(plan, parameters, shared_rows, {}, sources.device());
      return grafx::detail::flatten_rows(grafx::detail::step_rows(prepared[step.type], step), false,
                                         1, m);
    };
    std::vector<at::Tensor> outputs, cotangents, grad_inputs;
    for (const auto& x : inputs)
      grad_inputs.push_back(x.detach().requires_grad_(inputs_need_grad[k]));
    auto objective = [&] {
      outputs = grafx::detail::run_processor_step(plan, k, processors, rows(), grad_inputs, 1, {})
                    .outputs;
      if (cotangents.empty())
        for (const auto& y : outputs) cotangents.push_back(at::randn_like(y));
      at::Tensor value = at::zeros({}, outputs[0].options());
      for (size_t o = 0; o < outputs.size(); ++o)
        value = value + (outputs[o] * cotangents[o]).sum();
      return value;
    };
    auto clear = [&] {
      for (auto& [name, p] : parameters[plan.types.name(step.type)].named())
        p.mutable_grad() = at::Tensor();
      for (auto& x : grad_inputs) x.mutable_grad() = at::Tensor();
    };
    // Forward: read the inputs, write the outputs. Backward: read the cotangents and the saved
    // inputs, write the inputs' gradients where they are needed.
    auto moved = [&] {
      const double in = double(numel(inputs)), out = double(numel(outputs));
      return std::make_pair(in + out, out + in + (inputs_need_grad[k] ? in : 0));
    };
    parts.push_back(measure(plan.types.name(step.type) + " ×" + std::to_string(m), objective, clear,
                            moved, repeats, fft_times, ms_per_float));
  }

  // The whole render: what the steps alone do not account for is reads, sums and cuts.
  at::Tensor render_cotangent;
  const Passes render_passes = time_passes(
      [&] {
        RenderResult r = render(plan, processors, parameters, sources);
        if (!render_cotangent.defined()) render_cotangent = at::randn_like(r.outputs);
        return (r.outputs * render_cotangent).sum();
      },
      [&] {
        for (auto& [type, named] : parameters)
          for (auto& [name, p] : named.named()) p.mutable_grad() = at::Tensor();
      },
      repeats);
  {
    Part plumbing{"reads, sums and cuts (render − steps)"};
    double steps_forward = 0, steps_backward = 0;
    for (const auto& p : parts) {
      steps_forward += p.forward_ms;
      steps_backward += p.backward_ms;
    }
    plumbing.forward_ms  = std::max(0.0, render_passes.forward_ms - steps_forward);
    plumbing.backward_ms = std::max(0.0, render_passes.backward_ms - steps_backward);
    // What the reads must move: an aggregated read reads its rows and writes its sums, a read of
    // scattered rows copies them (a run of consecutive rows is a view: nothing). The backward
    // pass moves the same rows the other way.
    const double signal = double(target.numel());  // one stereo signal's samples
    double signals      = 0;
    for (const auto& step : plan.steps)
      for (const auto& read : step.reads) {
        const double rows = double(read.rows.size()), m = double(step.nodes.size());
        if (read.aggregation != Aggregation::kNone)
          signals += rows + m;
        else if (read.rows.kind == RowAccess::Kind::kIndex)
          signals += 2 * rows;
      }
    plumbing.forward_bound_ms  = signals * signal * ms_per_float;
    plumbing.backward_bound_ms = signals * signal * ms_per_float;
    parts.push_back(plumbing);
  }

  // The loss on the render's output, as a fit step computes it: a crop on the grid of the
  // loss's frames, whose target frames are the song's but for a few at its ends.
  MixLoss loss(fitter.options().loss);
  {
    const MixLossTargetFrames song = loss.song_frames(mix);
    const int64_t grid = loss.frame_alignment(), skip = loss.options().skip_samples;
    const std::vector<int64_t> start = {(grid - skip % grid) % grid};
    at::Tensor estimate              = at::randn({1, 2, crop}) * 0.1;
    at::Tensor leaf                  = estimate.clone().requires_grad_(true);
    auto moved                       = [&] {  // the estimate read, forward and back
      return std::make_pair(double(target.numel()), double(target.numel()));
    };
    parts.push_back(measure(
        "mix loss", [&] { return loss.crop_terms(leaf, mix, song, start).total; },
        [&] { leaf.mutable_grad() = at::Tensor(); }, moved, repeats, fft_times, ms_per_float));
  }

  // A whole fit step (crop, render, loss, backward, update), and the update's floor: AdamW reads
  // parameter, gradient and two moments and writes three of them.
  const double step_ms = best_ms([&] { fitter.step(); }, repeats);
  int64_t n_parameters = 0;
  for (const auto& [type, named] : parameters)
    for (const auto& [name, p] : named.named()) n_parameters += p.numel();
  const double update_bound_ms = 7.0 * double(n_parameters) * ms_per_float;

  bench::Table table({"step", "forward (ms)", "bound", "× bound", "backward (ms)", "bound",
                      "× bound", "FFT rows (fwd / bwd)"});
  double f = 0, fb = 0, b = 0, bb = 0;
  for (const auto& p : parts) {
    f += p.forward_ms;
    fb += p.forward_bound_ms;
    b += p.backward_ms;
    bb += p.backward_bound_ms;
    auto ratio = [](double ms, double bound) {
      return bound > 0 ? bench::fixed(ms / bound, 1) + "×" : "–";
    };
    table.add_row({p.name, bench::fixed(p.forward_ms, 1), bench::fixed(p.forward_bound_ms, 1),
                   ratio(p.forward_ms, p.forward_bound_ms), bench::fixed(p.backward_ms, 1),
                   bench::fixed(p.backward_bound_ms, 1), ratio(p.backward_ms, p.backward_bound_ms),
                   std::to_string(p.forward_ffts) + " / " + std::to_string(p.backward_ffts)});
  }
  table.add_row({"**sum**", bench::fixed(f, 1), bench::fixed(fb, 1), bench::fixed(f / fb, 1) + "×",
                 bench::fixed(b, 1), bench::fixed(bb, 1), bench::fixed(b / bb, 1) + "×", ""});
  std::cout << "Console of " << console.n_nodes() << " nodes in " << plan.n_calls()
            << " processor calls; stereo crops of 3.8 s at 30 kHz; fastest of " << repeats
            << " runs after a warm-up. Memory bandwidth (a 256 MiB copy): "
            << bench::fixed(bandwidth / 1e9, 1) << " GB/s.\n\n";
  table.print(std::cout);
  const double floor_render_loss = fb + bb;
  const double floor_step        = floor_render_loss + update_bound_ms;
  std::cout << "\n| | measured (ms) | floor (ms) | measured / floor |\n|---|---:|---:|---:|\n";
  auto line = [](const std::string& what, double ms, double floor) {
    std::cout << "| " << what << " | " << bench::fixed(ms, 1) << " | " << bench::fixed(floor, 1)
              << " | " << bench::fixed(ms / floor, 2) << "× |\n";
  };
  const Part& loss_part = parts.back();
  line("render forward", render_passes.forward_ms, fb - loss_part.forward_bound_ms);
  line("render backward", render_passes.backward_ms, bb - loss_part.backward_bound_ms);
  line("render forward+backward", render_passes.forward_ms + render_passes.backward_ms,
       fb + bb - loss_part.forward_bound_ms - loss_part.backward_bound_ms);
  line("fit step (render, loss, backward, update)", step_ms, floor_step);
  std::cout << "\nThe transforms of each step (forward; backward):\n\n";
  for (const auto& p : parts)
    if (!p.transforms.empty()) std::cout << "- " << p.name << ": " << p.transforms << "\n";
  return 0;
}

}  // namespace

// Errors end the program as they end the grafx CLI: one line with a code, status 1.
int main(int argc, char** argv) {
  return grafx::run_program("roofline_bench", [&] { return run(argc, argv); });
}
