#pragma once
/// Fitting a graph (typically a mixing console) to a target mix by gradient descent, as in the
/// pruning paper: AdamW, random crops with a warm-up that the loss skips, the mix-matching loss
/// plus the processors' regularisers (their own, e.g. the delay's radii, and gain staging for
/// the types whose descriptor asks for it). Any graph can be fitted: its dry/wet nodes fit
/// their wet amounts with the rest.
///
///   Fitter fitter(console, tracks, mix, 30000, options);    // tracks K×2×L, mix 2×L
///   fitter.run([](const FitProgress& p) { print(p); });
///   at::Tensor fitted = fitter.render_mix();                 // the whole song
///   save_parameters("fit.safetensors", console, fitter.parameters());

#include <grafx/device_graph.h>
#include <grafx/fit/adamw.h>
#include <grafx/fit/initialise.h>
#include <grafx/fit/thread_tuner.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/loss/regularizers.h>
#include <grafx/render/chunked.h>
#include <grafx/render/render.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace grafx {

/// How the learning rate moves over a fit: f is the share of the fit done (steps done over
/// n_steps, or time spent over the time budget, whichever is further).
struct LearningRateSchedule {
  /// Steps of linear warm-up from lr/10 to lr (0: none).
  int64_t warmup_steps = 0;
  /// lr·(r + (1 − r)·(1 + cos πf)/2) after the warm-up, with r = final_ratio; 1 keeps lr constant
  /// (the paper's).
  double final_ratio = 1.0;

  /// The factor on lr at step `step` (0-based) when a share `done` of the fit is done.
  double factor(int64_t step, double done) const;
};

/// A first part of a fit in which only some parameter groups train (staged fitting, e.g. levels
/// and EQs before the rest); the others keep their values and moments.
struct FitStage {
  double until = 0;  ///< the share of the fit (steps, or time with a budget) it lasts, in (0, 1]
  /// Groups keyed as FitOptions::learning_rates ("TYPE", "TYPE.PARAMETER", "PARAMETER").
  std::set<std::string> groups;
};

/// Automation fitted after a static fit: the fit starts with every parameter constant, and from
/// a share `start` of the fit on, the parameters named here follow curves (graph.h, Automation)
/// that start from the values the static part reached, with a smoothness prior.
struct FitAutomation {
  /// Per type, the raw names of the parameters its nodes automate; an empty set: every
  /// parameter its processor can automate, and the wet amount of its nodes that carry one.
  /// Empty: no automation.
  std::map<std::string, std::set<std::string>> parameters;
  double rate_hz = 10.0;  ///< points per second of song
  double start   = 0.5;   ///< share of the fit (steps, or time with a budget) fitted statically
  /// Weight of the smoothness prior, mean |second difference| of the automated nodes' curve
  /// points (raw units, e.g. natural-log gain: 0.115 per dB): straight ramps and holds cost
  /// nothing, each bend costs its change of slope. 0.3 recovered hidden fades and rides best
  /// among 0–10 (docs/fitting.md, "Automation").
  double smoothness = 0.3;
};

struct FitOptions {
  int64_t n_steps = 1000;
  /// Stop once this many seconds of fitting have passed in a run (0: no limit); the steps done
  /// then are fewer than n_steps.
  double time_budget_seconds = 0;
  /// lr 0.05, weight decay 0; the paper's lr is 0.01, but 0.05 decayed to 0.005 reaches its
  /// 1500-step loss in 500 steps (docs/fitting.md, "Evaluation").
  AdamWOptions optimizer{/*lr=*/0.05};
  /// Parameter groups with their own learning rate (the schedule scales it as it scales lr),
  /// keyed by "TYPE.PARAMETER", "TYPE" or "PARAMETER" (e.g. "dry_wet": every type's wet
  /// amounts); the most specific key wins; 0 freezes a group. FitError [grafx.fit.options] for
  /// a key that names nothing in the graph.
  std::map<std::string, double> learning_rates;
  /// Stages, in order of `until`; after the last one every parameter trains. FitError
  /// [grafx.fit.options] for a group that names nothing or an `until` outside (0, 1].
  std::vector<FitStage> stages;
  LearningRateSchedule lr_schedule = {0, 0.1};  ///< cosine decay to lr/10 (Evaluation)
  double crop_seconds              = 3.8;       ///< random crop per step (whole song if shorter)
  /// Crops per step, rendered as one source batch; the loss and regularisers are their means.
  int64_t crops_per_step        = 1;
  double skip_seconds           = 1.0;  ///< start of each crop left out of the loss (warm-up)
  uint64_t seed                 = 0;    ///< initial parameters and crops
  int64_t reset_optimizer_every = 0;  ///< re-create the optimizer's state every n steps (0: never)
  double max_gradient_norm      = 0.0;  ///< clip the global gradient norm (0: no clipping)
  int64_t max_non_finite_steps  = 20;   ///< stop after this many skipped steps in a row
  /// Weights of the processors' auxiliary losses (gain staging 1e-3, radii 0.5).
  std::map<std::string, double> regularizer_weights = default_regularizer_weights();
  /// Starting values from the data (grafx/fit/initialise.h: typical starts, least-squares
  /// track gains, EQ from spectral ratios), when the fitter makes the initial parameters.
  InitialisationOptions initialisation;
  /// Time the steps and move between LibTorch's thread count at the start of `run` and fewer
  /// threads, whichever steps faster (grafx/fit/thread_tuner.h): on a shared machine a step on
  /// every core can be several times slower. The count is restored when `run` returns.
  bool adapt_threads = true;
  /// Curvature in AdamW's second moment (as AdaHessian, Yao et al. 2021): per parameter, the
  /// larger of |g| and |v ⊙ Hv|, Hutchinson's estimate of the loss's Hessian diagonal (v random
  /// ±1), from one Hessian-vector product per step, forward over reverse
  /// (render/derivatives.h). Where curvature dominates, the step is a Newton step lr·g/H;
  /// elsewhere Adam's. Measured against AdamW in docs/fitting.md ("Curvature").
  bool hessian_preconditioning = false;
  /// Signal hooks on the cotangents of nodes' outputs (RenderOptions::node_gradient_hooks),
  /// e.g. to stop or damp what one track's fit does to the others'.
  std::map<NodeId, SignalHook> node_gradient_hooks;
  MixLossOptions loss;  ///< sample rate and skip are set by the fitter
  /// Curves fitted after a static fit (none by default). A graph that automates parameters
  /// already keeps its own automation, and curves given with the initial parameters train from
  /// the start. FitError [grafx.fit.options] for a type or parameter the graph cannot automate,
  /// or a rate, start or weight out of range.
  FitAutomation automation;
  ScheduleOptions schedule = ScheduleMethod::kOptimal;
  /// Where the steps run: the tracks, the mix, the parameters and the optimizer's moments move
  /// there once the initialisation from the data (on the CPU) is done; renders of the whole song
  /// and evaluations run there too. The CPU or a CUDA device (docs/benchmarks.md).
  at::Device device = at::kCPU;
  /// On a CUDA device, record a step's kernels once as a CUDA graph and replay it for the next
  /// steps (grafx/device_graph.h): one launch instead of thousands. Captured again when what a
  /// step does changes (bypassed nodes, a stage, the sparsity weight, curves starting); steps
  /// that cannot be captured run as before, and FitProgress::note says why, once.
  bool capture_steps = true;
};

/// The mix-matching loss of a whole song (`loss` without its warm-up skip) of the mix `plan`
/// renders from `sources` (K×C×L) at `sample_rate`, against `target` (C×L): rendered and scored
/// in chunks (MixLossStream), without gradients. What Fitter::evaluate and track_losses measure.
MixLossTerms whole_song_terms(const RenderPlan& plan, const Processors& processors,
                              const Parameters& parameters, const at::Tensor& sources,
                              const at::Tensor& target, SampleRate sample_rate,
                              const MixLossOptions& loss);

/// Scales every gradient so that their global norm is at most `max_norm` (as PyTorch's
/// clip_grad_norm_); returns the norm before clipping (infinite or NaN if a gradient is).
double clip_gradient_norm(Parameters& parameters, double max_norm);

/// One step's record.
struct FitRecord {
  int64_t step          = 0;
  double loss           = 0;  ///< total (match + regularisation); NaN for a skipped step
  double match_loss     = 0;  ///< the mix-matching loss alone
  double regularization = 0;
  bool skipped          = false;  ///< non-finite loss or gradients: no update
  double gradient_norm  = 0;      ///< global gradient norm before clipping
};

struct FitProgress {
  int64_t step    = 0;  ///< steps done
  int64_t n_steps = 0;
  FitRecord record;  ///< the step just done
  double steps_per_second = 0;
  double eta_seconds      = 0;  ///< to n_steps, or to the end of the time budget if sooner
  double learning_rate    = 0;  ///< of the step just done
  int threads             = 0;  ///< CPU threads the step ran on
  int64_t skipped_steps   = 0;  ///< in total
  /// How the steps run, when that changes (e.g. "steps replay a CUDA graph", or why they
  /// cannot); empty otherwise. Each message comes once per fit.
  std::string note;
};

class Fitter {
 public:
  /// `tracks` K×C×L (one per `in` node, in id order) and `mix` C×L at `sample_rate`; initial
  /// parameters are created from the seed unless given. Throws FitError [grafx.fit.data] for
  /// data that does not fit the graph or is too short for the crop and the loss.
  Fitter(Graph graph, at::Tensor tracks, at::Tensor mix, SampleRate sample_rate, FitOptions options,
         Parameters initial = {});

  /// Runs until `options.n_steps` steps are done or the time budget is spent, calling `progress`
  /// after each. Throws
  /// FitError [grafx.fit.diverged] after max_non_finite_steps skipped steps in a row. A fitter
  /// takes one step at a time: `run` or `step` while another runs (from another thread, or from
  /// the progress callback) throws FitError [grafx.fit.busy].
  void run(const std::function<void(const FitProgress&)>& progress = {});
  /// One step (crop, render, loss, backward, update) with the learning rate the schedule gives
  /// when a share `done` of the fit is done (default: steps done over n_steps); returns its
  /// record.
  FitRecord step(double done = -1);

  int64_t steps_done() const { return static_cast<int64_t>(history_.size()); }
  const std::vector<FitRecord>& history() const { return history_; }
  const Parameters& parameters() const { return parameters_; }
  /// The current parameters without gradients.
  Parameters detached_parameters() const;
  const Graph& graph() const { return graph_; }
  const Processors& processors() const { return processors_; }
  const FitOptions& options() const { return options_; }
  const AdamW& optimizer() const { return optimizer_; }
  /// Where crop `crop` of step `step` starts: a function of the seed, the step and the crop
  /// alone, so that a resumed fit sees the same crops as an uninterrupted one. Every second of
  /// the song is compared equally often on average (a crop at the start warms up on the silence
  /// before the song, so the start may be negative, down to −skip_samples). Its loss starts on
  /// the grid of the loss's frames (MixLoss::frame_alignment), so that the target's frames come
  /// from the song's, made once; but for a crop that ends with the song.
  int64_t crop_start(int64_t step, int64_t crop) const;
  /// What the initialisation from the data did (empty when the parameters were given).
  const DataInitialisation& initialisation() const { return initialisation_; }
  /// Whether the automation curves train and render (always, unless FitOptions::automation
  /// asked for a static part first and the fit has not reached its end).
  bool curves_live() const { return curves_live_; }
  /// The graph and parameters (without gradients) as the fit renders them now: without the
  /// curves while they do not train. What a fit folder saves.
  Graph rendered_graph() const;
  Parameters rendered_parameters() const { return live(detached_parameters()); }
  /// The parameters the first step started from, without gradients.
  const Parameters& initial_parameters() const { return initial_parameters_; }
  SampleRate sample_rate() const { return sample_rate_; }
  /// The tracks (K×C×L).
  const at::Tensor& tracks() const { return tracks_; }
  /// The target mix (C×L).
  const at::Tensor& target() const { return mix_; }

  /// Moves the tracks, the mix, the parameters and the optimizer's moments to `device`; later
  /// steps, renders and evaluations run there (FitOptions::device). A fit moved and continued
  /// takes the steps it would have taken where it was.
  void move_to(at::Device device);

  /// The whole song rendered with the current parameters (C×L), without gradients, in chunks
  /// (render/chunked.h): memory beyond the mix itself stays flat with the song's length.
  at::Tensor render_mix() const;
  /// The mix-matching loss of the whole song (no warm-up skip), with its terms; of `fitted`
  /// when given (a render_mix() the caller has already made), else of a fresh render; the terms
  /// on the CPU whatever the fit's device. Both
  /// in chunks (MixLossStream): a 10-minute song evaluates in under 0.7 GB beyond its data
  /// (docs/benchmarks.md).
  MixLossTerms evaluate(const at::Tensor& fitted = {}) const;
  /// evaluate(fitted) with the loss's parts by band and by second (MixLoss::breakdown), all on
  /// the CPU: what the fit report shows of the fitted mix.
  MixLossBreakdown evaluate_parts(const at::Tensor& fitted) const;

  // ---- for pruning (grafx/prune/prune.h) ----------------------------------------------------

  /// Marks processor nodes bypassed (rendered as pass-throughs, parameters kept) or not, and
  /// plans the render again.
  void set_bypassed(const std::vector<NodeId>& nodes, bool bypassed);
  /// The weight λ of the sparsity term λ·Σ w added to each step's loss: the wet amounts
  /// w = σ(dry_wet) of the dry/wet nodes not bypassed (the pruning paper's ‖w‖₁). 0 (none) by
  /// default.
  void set_sparsity_weight(double weight) { sparsity_weight_ = weight; }
  /// Forgets the optimizer's moments (the pruning paper re-creates it every 500 steps).
  void reset_optimizer() { optimizer_.reset(); }

  /// Writes the parameters, the optimizer's state and the history (safetensors, atomically).
  void save_checkpoint(const std::string& path) const;
  /// Continues from a checkpoint of the same graph, data and settings (FitError
  /// [grafx.fit.checkpoint] naming what differs otherwise).
  void load_checkpoint(const std::string& path);

 private:
  /// Holds `busy` while it lives; throws [grafx.fit.busy] where it is held already.
  class OneAtATime {
   public:
    explicit OneAtATime(std::atomic<bool>& busy);
    ~OneAtATime() { busy_ = false; }

   private:
    std::atomic<bool>& busy_;
  };
  FitRecord take_step(double done);
  /// What a step reads of the song: its crops of the tracks (K×C×T, or B×K×C×T for several)
  /// and the target's frames for the loss (MixLoss::crop_target_frames).
  struct StepInputs {
    std::vector<int64_t> starts;
    at::Tensor sources;
    std::vector<at::Tensor> target_frames;
    at::Tensor first_samples;  ///< `starts` on the device, where it is not the CPU
  };
  /// The inputs of step `step`: those made ahead while the previous step ran, if they were.
  StepInputs step_inputs(int64_t step);
  StepInputs make_step_inputs(int64_t step);
  /// The loss of `all` on `inputs`: the match with the target plus the regularisers, whose
  /// parts land in `terms` and `regularization`.
  at::Tensor crop_loss(const Parameters& all, const StepInputs& inputs, MixLossTerms& terms,
                       at::Tensor& regularization);
  /// A step's device work on `inputs`, with nothing read back: the loss, its gradients and the
  /// optimizer's update (prepared). Returns total, match, regularisation, gradient norm and
  /// whether the update was applied, as one float64 device tensor.
  at::Tensor device_step(const StepInputs& inputs, double done);
  /// device_step through the step graph where it can be captured: returns the record tensor,
  /// or an undefined tensor where the step must run as before.
  at::Tensor captured_step(const StepInputs& inputs, double done);
  /// What the device work of a step depends on beyond its inputs: a change captures again.
  std::string step_shape(double done) const;
  void tell(const std::string& note);
  /// Clears the gradients of the parameters the stage at share `done` does not train.
  void freeze_outside_stage(double done);
  /// Σ w over the dry/wet nodes not bypassed, of `parameters`.
  at::Tensor sparsity(const Parameters& parameters);
  /// What a checkpoint must agree on: graph, data, settings.
  std::map<std::string, std::string> identity() const;
  /// The plan and parameters renders use: without the curves while they do not train.
  const RenderPlan& live_plan() const { return curves_live_ ? plan_ : static_plan_; }
  Parameters live(const Parameters& parameters) const;
  /// Sets each curve to its parameter's value, and from now on trains and renders the curves.
  void start_curves();
  /// The smoothness prior of the curves of `parameters`.
  at::Tensor curve_roughness(const Parameters& parameters) const;

  Graph graph_;
  at::Tensor tracks_, mix_;
  SampleRate sample_rate_;
  FitOptions options_;  // with the loss's sample rate and skip filled in
  int64_t crop_samples_;
  Processors processors_;
  RenderPlan plan_;
  RenderPlan static_plan_;  // the graph without automation, for the static part of a fit
  bool curves_live_ = true;
  RenderOptions render_options_;  // gain staging
  Parameters parameters_;
  MixLoss loss_;
  std::optional<MixLossTargetFrames> song_frames_;  // the mix's frames, made at the first step
  /// The next step's inputs, made while the device runs a step (their kernels queue behind
  /// it), so that on a GPU the host's share of the next step overlaps the device's work.
  std::optional<std::pair<int64_t, StepInputs>> next_inputs_;
  AdamW optimizer_;
  DataInitialisation initialisation_;
  Parameters initial_parameters_;
  std::vector<FitRecord> history_;
  int64_t non_finite_in_a_row_ = 0;
  double sparsity_weight_      = 0;
  int64_t plan_version_        = 0;  // counts changes of the plans (bypassed nodes)
  std::map<std::string, at::Tensor> sparsity_masks_;  // per type: dry/wet nodes not bypassed
  at::Tensor sparsity_weight_on_device_;              // sparsity_weight_, written each step
  // The captured step: its graph, static inputs and record, and the shape it was captured for;
  // steps of a new shape first run once on the graph's stream (warm-up), then capture.
  DeviceGraph step_graph_;
  StepInputs graph_inputs_;
  at::Tensor graph_record_;
  std::string graph_shape_, warmed_shape_;
  std::set<std::string> uncapturable_;  // shapes whose capture failed
  std::set<std::string> told_;          // notes given
  std::string note_;                    // for the next FitProgress
  std::unique_ptr<std::atomic<bool>> busy_ = std::make_unique<std::atomic<bool>>(false);
};

}  // namespace grafx
