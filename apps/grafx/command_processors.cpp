// grafx processors [NAME] [--response FILE]: the registered processors, their ports and
// parameters, and pictures of what they do.

#include "commands.h"
#include "output_folder.h"
#include "parameter_values.h"

#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/io/draw.h>
#include <grafx/io/plot.h>
#include <grafx/io/processor_response.h>
#include <grafx/processors/registry.h>

#include <ATen/ATen.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace grafx::cli {
void add_processors_command(CLI::App& app) {
  struct Args {
    std::string name, response;
    std::vector<std::string> parameters, options;
    SampleRate sample_rate = ProcessorConfig().sample_rate;
    bool force             = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("processors", "List the processors, or show one and picture what it does");
  CLI::Option* name = cmd->add_option("name", args->name, "A processor (node type) name");
  CLI::Option* response =
      cmd->add_option("--response", args->response,
                      "Write a picture (.svg, .png or .pdf) of the processor's response: EQ "
                      "magnitude response, "
                      "compressor/gate static curve, reverb energy decay, delay impulse response, "
                      "gain/imager stereo field")
          ->needs(name);
  cmd->add_option(
         "--param", args->parameters,
         "Parameter for the picture: NAME=VALUE in physical units or by raw name, or "
         "NAME=V1,V2,... (interpolated along the last dimension), or one such list per row "
         "separated by ';'; default: the initial values")
      ->needs(response);
  cmd->add_option("--option", args->options,
                  "NAME=VALUE: a processor option for the picture (see grafx processors NAME)")
      ->needs(response);
  cmd->add_option("--sample-rate", args->sample_rate, "Sample rate in Hz")
      ->capture_default_str()
      ->check(CLI::Range(SampleRate(1), SampleRate(1) << 24));
  add_force_flag(*cmd, args->force);
  cmd->callback([args] {
    if (args->name.empty()) {
      for (const auto& d : processor_registry())
        std::cout << describe_processor(d, args->sample_rate, false);
      std::cout << "\nGRAFX classes that are not types here:\n";
      for (const auto& [name, where] : grafx_classes_without_a_type())
        std::cout << "  " << name << ": " << where << "\n";
      return;
    }
    const ProcessorDescriptor& descriptor = processor_descriptor(args->name);  // or an error
    ProcessorConfig config;
    config.sample_rate = args->sample_rate;
    config.options     = parse_options(descriptor, args->options, "--option");
    auto processor     = make_configured(descriptor, config, "--option");
    if (args->response.empty()) {
      std::cout << describe_processor(descriptor, args->sample_rate, true);
      return;
    }
    std::string format = std::filesystem::path(args->response).extension().string();
    for (char& c : format) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (format != ".svg" && format != ".png" && format != ".pdf")
      throw IoError("grafx.io.plot", "--response: expected an .svg, .png or .pdf file, but got \"" +
                                         args->response + "\"");
    check_writable(args->response, args->force);
    TensorDict parameters =
        parameters_from_assignments(*processor, args->parameters, nullptr, "--param");
    Plot plot = processor_response(*processor, parameters, args->sample_rate);
    write_svg_picture(args->response, plot_svg(plot.series, plot.options), args->force);
    std::cout << "picture: " << args->response << " (" << plot.options.title << ")\n";
  });
}

}  // namespace grafx::cli
