// grafx process TYPE -i in.wav -o out.wav --set NAME=VALUE ...: one processor applied to a file,
// with parameters in physical units.

#include "arguments.h"
#include "commands.h"
#include "output_folder.h"
#include "parameter_values.h"

#include <grafx/dsp/signal.h>
#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/io/audio.h>
#include <grafx/text.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace grafx::cli {
namespace {

/// "out.wav" for one outlet; "out.low.wav", "out.high.wav", ... for several.
std::vector<std::string> outlet_paths(const std::string& path,
                                      const std::vector<std::string>& outlets) {
  if (outlets.size() == 1) return {path};
  std::filesystem::path p(path);
  std::vector<std::string> paths;
  for (const auto& outlet : outlets)
    paths.push_back(
        (p.parent_path() / (p.stem().string() + "." + outlet + p.extension().string())).string());
  return paths;
}

}  // namespace

void add_process_command(CLI::App& app) {
  struct Args {
    std::string type, input, output;
    std::vector<std::string> settings, options;
    bool stereo = false, force = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "process", "Apply one processor to an audio file, with parameters in physical units");
  cmd->add_option("type", args->type, "Processor (node type) name; see grafx processors")
      ->required();
  cmd->add_option("-i,--input", args->input, "Input audio file (every inlet reads it)")->required();
  cmd->add_option("-o,--output", args->output,
                  "Output audio file (several outlets: NAME.OUTLET.wav each)")
      ->required();
  cmd->add_option("--set", args->settings,
                  "NAME=VALUE in physical units (vectors comma-separated, e.g. gain_db=-6,-6; "
                  "several values along a longer axis are interpolated; rows separated by ';'), "
                  "a raw parameter by its raw name, or wet=0..1; unset parameters keep their "
                  "initial values. NAME=V@T,V@T,... automates it: values at times in seconds "
                  "(ascending; ':' between a vector's elements), linear between them (in the "
                  "raw value: in dB for gains) and held before the first and after the last");
  cmd->add_option("--option", args->options,
                  "NAME=VALUE: a processor option (see grafx processors TYPE), e.g. knee=hard, "
                  "use_bias=true, members=eq,compressor");
  cmd->add_flag("--stereo", args->stereo, "Spread a mono input to two channels");
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    const ProcessorDescriptor& descriptor = processor_descriptor(args->type);
    ProcessorConfig config;
    config.options     = parse_options(descriptor, args->options, "--option");
    Audio audio        = read_audio(args->input);
    config.sample_rate = audio.sample_rate;
    auto processor     = make_configured(descriptor, config, "--option");
    auto outputs       = outlet_paths(args->output, processor->outlets());
    for (const auto& path : outputs) {
      check_not_an_input(path, {args->input});
      check_writable(path, args->force);
    }
    at::Tensor wet = at::full({1, 1}, INFINITY, at::kDouble);  // raw: fully wet
    std::map<std::string, Breakpoints> curves;
    TensorDict raw =
        parameters_from_assignments(*processor, args->settings, &wet, "--set", &curves);
    at::Tensor x = audio.samples;
    if (args->stereo && x.size(0) == 1) x = x.expand({2, x.size(1)});
    x = x.contiguous().unsqueeze(0);  // 1×C×L
    std::vector<at::Tensor> inputs(processor->inlets().size(), x);
    for (const auto& [name, points] : curves) {  // values per sample, linear between points
      std::vector<double> positions;
      for (double s : points.seconds) positions.push_back(s * double(audio.sample_rate));
      at::Tensor values = dsp::piecewise_linear(points.raw.transpose(0, 1), positions, x.size(2));
      (is_wet_amount(name) ? wet : raw[name]) = values;
    }
    TensorDict parameters;
    for (const auto& [name, value] : raw) parameters[name] = value.to(at::kFloat);
    c10::NoGradGuard no_grad;
    ProcessorOutput out = processor->forward(inputs, parameters);
    const at::Tensor w  = wet.sigmoid().view({1, 1, -1}).to(at::kFloat);  // [1, 1, 1 or L]
    NodeTypes types;
    const TypeId type = types.add(processor->node_type());
    std::vector<at::Tensor> ys;
    for (size_t o = 0; o < outputs.size(); ++o) {
      int64_t passed = types.passed_inlet(type, int64_t(o));  // the dry signal, as in graphs
      at::Tensor dry = passed >= 0 ? x : at::zeros_like(x);
      // Fully wet unless --set wet=…: the outlet's own channels (a mid/side split's are mono).
      at::Tensor y = w.lt(1).any().item<bool>() ? at::lerp(dry, out.outputs[o], w) : out.outputs[o];
      ys.push_back(y.squeeze(0));
      if (!all_finite(ys.back()))
        throw ProcessorError("grafx.processor.non_finite",
                             args->type + ": outlet \"" + processor->outlets()[o] +
                                 "\" holds non-finite samples; nothing was written");
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      write_audio(outputs[o], ys[o], audio.sample_rate, args->force);
      note_written(outputs[o]);
    }
    std::cout << "processed " << args->input << " (" << x.size(1) << " ch, " << audio.sample_rate
              << " Hz, " << std::fixed << std::setprecision(2)
              << double(x.size(2)) / double(audio.sample_rate) << " s) with " << args->type
              << " -> " << join(outputs) << "\n";
  });
}

}  // namespace grafx::cli
