#include <grafx/error.h>
#include <grafx/fit/demo.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>
#include <grafx/render/parameters.h>

#include <ATen/ATen.h>

namespace grafx {

Parameters musical_parameters(const Graph& console, const Processors& processors,
                              SampleRate sample_rate, uint64_t seed) {
  Parameters parameters = create_parameters(console, processors, {seed, at::kFloat, false});
  Random random(seed);
  const std::string wet = dry_wet_spec().physical_name;  // the key priors give wet amounts by
  for (const auto& [type, named] : parameters) {         // (set_physical writes rows in place)
    const ProcessorDescriptor* descriptor = find_processor(type);
    const Processor& processor            = *processors.at(type);
    for (NodeId id : console.nodes_of_type(type)) {
      TensorDict settings;
      if (descriptor && descriptor->musical_prior)
        settings = descriptor->musical_prior(
            {processor, sample_rate, console.node(id).name.rfind("group", 0) == 0, random});
      // Dry/wet nodes of a hidden console are mostly wet unless the prior says otherwise.
      if (!settings.count(wet)) settings[wet] = at::full({1}, 0.98, at::kDouble);
      set_physical(console, processor, parameters, id, settings);
    }
  }
  return parameters;
}

DemoSong make_demo_song(const DemoOptions& options) {
  Multitrack multitrack = synthesize_multitrack(options.sample_rate, options.seconds, options.seed);
  DemoSong song;
  song.track_names = multitrack.names;
  song.sample_rate = options.sample_rate;
  song.tracks = multitrack.tracks.expand({multitrack.tracks.size(0), 2, multitrack.tracks.size(2)})
                    .contiguous();
  ConsoleOptions console;
  console.n_tracks      = int64_t(song.track_names.size());
  console.track_groups  = {0, 0, 1, 1};  // drums and bass; chords and lead
  console.track_names   = song.track_names;
  console.chain         = default_console_chain();
  console.dry_wet       = true;
  song.console          = build_console(console, registry_node_types()).graph;
  Processors processors = make_processors(song.console.types(), {options.sample_rate});
  song.hidden =
      musical_parameters(song.console, processors, options.sample_rate, options.seed + 1000);
  RenderPlan plan = make_render_plan(to_tensor(song.console), ScheduleMethod::kOptimal);
  song.mix        = render(plan, processors, song.hidden, song.tracks).outputs[0];
  return song;
}

}  // namespace grafx
