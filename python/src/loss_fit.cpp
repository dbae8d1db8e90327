// Bindings of the loss and fit layers: the mix loss, the multi-resolution STFT loss, the fitter
// with a Python progress callback, and the embedded demo song.

#include "bindings.h"

#include <grafx/error.h>
#include <grafx/fit/demo.h>
#include <grafx/fit/fit.h>
#include <grafx/fit/fit_settings.h>
#include <grafx/loss/mix_loss.h>
#include <grafx/loss/mrstft_loss.h>
#include <grafx/program.h>

#include <cmath>

namespace grafx::python {

namespace {

/// A setting's value for Python: bool, int, float or str.
py::object from_json(const nlohmann::json& value) {
  if (value.is_boolean()) return py::bool_(value.get<bool>());
  if (value.is_number_unsigned()) return py::int_(value.get<uint64_t>());
  if (value.is_number_integer()) return py::int_(value.get<int64_t>());
  if (value.is_number()) return py::float_(value.get<double>());
  return py::str(value.get<std::string>());
}

/// A Python value as a setting's JSON value (bool before int: bool is an int in Python).
nlohmann::json to_json(const py::object& value, const std::string& name) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    if (value.cast<py::int_>() >= py::int_(0)) return value.cast<uint64_t>();
    return value.cast<int64_t>();
  }
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  throw FitError("grafx.fit.options", name + ": expected a bool, int, float or str, but got " +
                                          std::string(py::str(value.get_type().attr("__name__"))));
}

const char* kind_name(FitSettingKind kind) {
  switch (kind) {
    case FitSettingKind::kInteger:
      return "integer";
    case FitSettingKind::kNumber:
      return "number";
    case FitSettingKind::kFlag:
      return "flag";
    default:
      return "choice";
  }
}

py::dict terms_to_python(const MixLossTerms& t) {
  py::dict result;
  result["total"]                = t.total;
  result["per_item"]             = t.per_item;
  result["lr"]                   = t.lr;
  result["mid"]                  = t.mid;
  result["side"]                 = t.side;
  result["spectral_convergence"] = t.spectral_convergence;
  result["log_magnitude"]        = t.log_magnitude;
  return result;
}

py::dict record_to_python(const FitRecord& r) {
  py::dict result;
  result["step"]           = r.step;
  result["loss"]           = r.loss;
  result["match_loss"]     = r.match_loss;
  result["regularization"] = r.regularization;
  result["skipped"]        = r.skipped;
  result["gradient_norm"]  = r.gradient_norm;
  return result;
}

py::dict progress_to_python(const FitProgress& p) {
  py::dict result;
  result["step"]             = p.step;
  result["num_steps"]        = p.n_steps;
  result["record"]           = record_to_python(p.record);
  result["steps_per_second"] = p.steps_per_second;
  result["eta_seconds"]      = p.eta_seconds;
  result["learning_rate"]    = p.learning_rate;
  result["skipped_steps"]    = p.skipped_steps;
  result["threads"]          = p.threads;
  result["note"]             = p.note;
  return result;
}

/// Thrown through Fitter::run when a progress callback returns False.
struct StopRequested {};

}  // namespace

void bind_loss_and_fit(py::module_& m) {
  // The losses pickle as their options: they hold nothing else that is not made from them.
  py::class_<MixLoss>(m, "MixLoss")
      .def(py::pickle(
          [](const MixLoss& loss) {
            const MixLossOptions& o = loss.options();
            return py::make_tuple(kPickleVersion, o.fft_sizes, o.sample_rate, o.n_mels,
                                  o.a_weighting, o.eps, o.skip_samples, o.lr_weight, o.mid_weight,
                                  o.side_weight);
          },
          [](const py::tuple& state) {
            check_pickled_state(state, 9, "MixLoss");
            MixLossOptions o;
            o.fft_sizes    = state[1].cast<std::vector<int64_t>>();
            o.sample_rate  = state[2].cast<SampleRate>();
            o.n_mels       = state[3].cast<int64_t>();
            o.a_weighting  = state[4].cast<bool>();
            o.eps          = state[5].cast<double>();
            o.skip_samples = state[6].cast<int64_t>();
            o.lr_weight    = state[7].cast<double>();
            o.mid_weight   = state[8].cast<double>();
            o.side_weight  = state[9].cast<double>();
            return MixLoss(o);
          }))
      .def(py::init([](std::vector<int64_t> fft_sizes, SampleRate sample_rate, int64_t n_mels,
                       bool a_weighting, double eps, int64_t skip_samples, double lr_weight,
                       double mid_weight, double side_weight) {
             return MixLoss({fft_sizes, sample_rate, n_mels, a_weighting, eps, skip_samples,
                             lr_weight, mid_weight, side_weight});
           }),
           py::arg("fft_sizes"), py::arg("sample_rate"), py::arg("n_mels"), py::arg("a_weighting"),
           py::arg("eps"), py::arg("skip_samples"), py::arg("lr_weight"), py::arg("mid_weight"),
           py::arg("side_weight"))
      .def("__call__",
           [](const MixLoss& loss, const at::Tensor& estimate, const at::Tensor& target) {
             py::gil_scoped_release released;
             return loss(estimate, target);
           })
      .def("terms",
           [](const MixLoss& loss, const at::Tensor& estimate, const at::Tensor& target) {
             MixLossTerms terms;
             {
               py::gil_scoped_release released;
               terms = loss.terms(estimate, target);
             }
             return terms_to_python(terms);
           })
      .def("streamed_terms",
           [](const MixLoss& loss, const at::Tensor& estimate, const at::Tensor& target) {
             MixLossTerms terms;
             {
               py::gil_scoped_release released;
               terms = loss.streamed_terms(estimate, target);
             }
             return terms_to_python(terms);
           });

  py::class_<MultiResolutionStftLoss>(m, "MultiResolutionStftLoss")
      .def(py::pickle(
          [](const MultiResolutionStftLoss& loss) {
            const MultiResolutionStftLossOptions& o = loss.options();
            return py::make_tuple(kPickleVersion, o.fft_sizes, o.hop_sizes, o.window_sizes, o.eps);
          },
          [](const py::tuple& state) {
            check_pickled_state(state, 4, "MultiResolutionStftLoss");
            return MultiResolutionStftLoss(
                {state[1].cast<std::vector<int64_t>>(), state[2].cast<std::vector<int64_t>>(),
                 state[3].cast<std::vector<int64_t>>(), state[4].cast<double>()});
          }))
      .def(py::init([](std::vector<int64_t> fft_sizes, std::vector<int64_t> hop_sizes,
                       std::vector<int64_t> window_sizes, double eps) {
             return MultiResolutionStftLoss({fft_sizes, hop_sizes, window_sizes, eps});
           }),
           py::arg("fft_sizes"), py::arg("hop_sizes"), py::arg("window_sizes"), py::arg("eps"))
      .def("__call__", [](const MultiResolutionStftLoss& loss, const at::Tensor& estimate,
                          const at::Tensor& target) {
        py::gil_scoped_release released;
        return loss(estimate, target);
      });

  py::class_<FitOptions> options(
      m, "FitOptions",
      "Options of a mix fit (grafx fit's defaults); set fields by name: `o = "
      "grafx.FitOptions(); o.num_steps = 500`. grafx.fit_settings() lists the settings.");
  options.def(py::init<>());
  // One property per setting of the library's table (grafx/fit/fit_settings.h), checked when
  // set: FitError (grafx.fit.options) for a value out of range or of another kind.
  for (const FitSetting& setting : fit_settings()) {
    const std::string& name = setting.name;
    options.def_property(
        name.c_str(), [name](const FitOptions& o) { return from_json(fit_setting(name).get(o)); },
        [name](FitOptions& o, const py::object& value) {
          set_fit_setting(o, name, to_json(value, name));
        },
        setting.help.c_str());
  }
  options
      .def_property(
          "device", [](const FitOptions& o) { return o.device.str(); },
          [](FitOptions& o, const py::object& device) {
            const std::string name = py::str(device).cast<std::string>();
            o.device               = usable_device(name, "device " + name, "grafx.fit.options");
          },
          "Where the steps run (\"cpu\", \"cuda\", a torch.device): the tracks, mix, "
          "parameters and the optimizer's moments move there once the initialisation from the "
          "data is done.")
      .def_readwrite("capture_steps", &FitOptions::capture_steps,
                     "On a CUDA device, capture a step as a CUDA graph once and replay it (the "
                     "progress's note says when, or why not).")
      .def_readwrite("hessian_preconditioning", &FitOptions::hessian_preconditioning,
                     "Curvature in AdamW's second moment (as AdaHessian), from one Hessian-vector "
                     "product per step; the same as optimizer = \"adahessian\".")
      // The mix loss the fit minimises (grafx fit's, by default); its sample rate and warm-up
      // skip are the fit's own (sample_rate, skip_seconds), set when the fit starts.
      .def_property(
          "loss", [](const FitOptions& o) { return MixLoss(o.loss); },
          [](FitOptions& o, const MixLoss& loss) { o.loss = loss.options(); },
          "The MixLoss the fit minimises (its sample rate and warm-up skip are the fit's own).")
      .def_readwrite("regularizer_weights", &FitOptions::regularizer_weights,
                     "Weights of the processors' auxiliary losses, {name: weight} (gain staging "
                     "1e-3, radii 0.5).")
      .def_readwrite("learning_rates", &FitOptions::learning_rates,
                     "Learning rates of parameter groups, {key: lr} keyed by \"TYPE.PARAMETER\", "
                     "\"TYPE\" or \"PARAMETER\" (the most specific wins; 0 freezes); the schedule "
                     "scales them as it scales lr.")
      .def_property(
          "stages",
          [](const FitOptions& o) {
            std::vector<std::pair<double, std::set<std::string>>> stages;
            for (const auto& stage : o.stages) stages.emplace_back(stage.until, stage.groups);
            return stages;
          },
          [](FitOptions& o, const std::vector<std::pair<double, std::set<std::string>>>& stages) {
            o.stages.clear();
            for (const auto& [until, groups] : stages) o.stages.push_back({until, groups});
          },
          "Training stages, a list of (until, groups): until the share `until` (in (0, 1]) of the "
          "fit, only the parameter groups named (keyed as learning_rates) train; after the last "
          "stage every parameter trains.")
      .def_property(
          "automate", [](const FitOptions& o) { return o.automation.parameters; },
          [](FitOptions& o, const std::map<std::string, std::vector<std::string>>& parameters) {
            o.automation.parameters.clear();
            for (const auto& [type, names] : parameters)
              o.automation.parameters[type] = {names.begin(), names.end()};
          },
          "Automation fitted after a static part, {type: raw parameter names}; no names: every "
          "parameter the type can automate (its wet amounts too). Empty: none.");

  m.def(
      "fit_settings",
      [] {
        py::list settings;
        const FitOptions defaults;
        for (const FitSetting& s : fit_settings()) {
          py::dict d;
          d["name"]    = s.name;
          d["kind"]    = kind_name(s.kind);
          d["group"]   = s.group;
          d["help"]    = s.help;
          d["default"] = from_json(s.get(defaults));
          d["unit"]    = s.unit;
          d["minimum"] = std::isfinite(s.minimum) ? py::object(py::float_(s.minimum)) : py::none();
          d["maximum"] = std::isfinite(s.maximum) ? py::object(py::float_(s.maximum)) : py::none();
          d["minimum_open"]   = s.minimum_open;
          d["maximum_open"]   = s.maximum_open;
          d["choices"]        = s.choices;
          d["command_line"]   = command_line_name(s);
          d["aliases"]        = s.aliases;
          d["same_on_resume"] = s.same_on_resume;
          settings.append(d);
        }
        return settings;
      },
      "The fit's settings, one dict each: name (the keyword of fit, Fitter and FitOptions, and "
      "the key of fit.json), kind (\"integer\", \"number\", \"flag\" or \"choice\"), group, help, "
      "default, unit, minimum and maximum (None: unbounded) with minimum_open and maximum_open, "
      "choices, command_line (grafx fit's option), aliases (its older options) and same_on_resume "
      "(a resumed fit must keep the value its checkpoint records).");

  py::class_<Fitter>(m, "Fitter")
      .def(py::init([](const Graph& graph, const at::Tensor& tracks, const at::Tensor& mix,
                       SampleRate sample_rate, const FitOptions& options,
                       const py::object& parameters) {
             Parameters initial;
             if (!parameters.is_none()) initial = parameters_from_python(parameters);
             py::gil_scoped_release released;
             return std::make_unique<Fitter>(graph, tracks, mix, sample_rate, options, initial);
           }),
           py::arg("graph"), py::arg("tracks"), py::arg("mix"), py::arg("sample_rate"),
           py::arg("options"), py::arg("parameters"))
      .def(
          "run",
          [](Fitter& fitter, const py::object& callback) {
            try {
              py::gil_scoped_release released;
              fitter.run([&callback](const FitProgress& progress) {
                py::gil_scoped_acquire acquired;
                if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C
                if (callback.is_none()) return;
                py::object answer = callback(progress_to_python(progress));
                if (!answer.is_none() && !answer.cast<bool>()) throw StopRequested();
              });
            } catch (const StopRequested&) {
              // The callback asked to stop after a completed step: the fitter is consistent.
            }
          },
          py::arg("callback") = py::none())
      .def("step",
           [](Fitter& fitter) {
             FitRecord record;
             {
               py::gil_scoped_release released;
               record = fitter.step();
             }
             return record_to_python(record);
           })
      .def_property_readonly("steps_done", &Fitter::steps_done)
      .def_property_readonly("history",
                             [](const Fitter& f) {
                               py::list result;
                               for (const FitRecord& r : f.history())
                                 result.append(record_to_python(r));
                               return result;
                             })
      .def_property_readonly("parameters",
                             [](const Fitter& f) { return parameters_to_python(f.parameters()); })
      .def("detached_parameters",
           [](const Fitter& f) { return parameters_to_python(f.detached_parameters()); })
      .def_property_readonly(
          "initial_parameters",
          [](const Fitter& f) { return parameters_to_python(f.initial_parameters()); })
      .def_property_readonly(
          "graph", [](const Fitter& f) { return f.graph(); },
          "A copy of the graph the fit fits (editing it changes nothing the fit does).")
      .def_property_readonly("curves_live", &Fitter::curves_live,
                             "Whether the automation curves train and render now.")
      .def("rendered_graph", &Fitter::rendered_graph,
           "The graph as the fit renders it now (without automation while the curves wait).")
      .def(
          "rendered_parameters",
          [](const Fitter& f) { return parameters_to_python(f.rendered_parameters()); },
          "The parameters as the fit renders them now, detached.")
      .def_property_readonly("sample_rate", &Fitter::sample_rate)
      .def("render_mix",
           [](const Fitter& f) {
             py::gil_scoped_release released;
             return f.render_mix();
           })
      .def("evaluate",
           [](const Fitter& f) {
             MixLossTerms terms;
             {
               py::gil_scoped_release released;
               terms = f.evaluate();
             }
             return terms_to_python(terms);
           })
      .def("save_checkpoint", &Fitter::save_checkpoint, py::arg("path"))
      .def("load_checkpoint", &Fitter::load_checkpoint, py::arg("path"));

  m.def(
      "demo_song",
      [](SampleRate sample_rate, double seconds, uint64_t seed) {
        DemoSong song;
        {
          py::gil_scoped_release released;
          song = make_demo_song({sample_rate, seconds, seed});
        }
        py::dict result;
        result["track_names"] = song.track_names;
        result["tracks"]      = song.tracks;
        result["mix"]         = song.mix;
        result["sample_rate"] = song.sample_rate;
        result["console"]     = song.console;
        result["hidden"]      = parameters_to_python(song.hidden);
        return result;
      },
      py::arg("sample_rate"), py::arg("seconds"), py::arg("seed"));
}

}  // namespace grafx::python
