// grafx export-lv2, run as a user would: the bundle loads in Debian's LV2 hosts (lv2info,
// lv2apply), plays what grafx render writes, and a host that calls the plugin directly (dlopen)
// gets what LV2 promises; one clear error for what cannot be exported.

#include <grafx/fit/fit_record.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_json.h>
#include <grafx/io/audio.h>
#include <grafx/io/parameter_file.h>
#include <grafx/render/parameters.h>
#include <grafx/stream/host_stream.h>

#include "cli/fit_folder.h"
#ifdef GRAFX_HAVE_LILV
#include "cli/lilv_host.h"
#endif
#include "support/test_support.h"

#include <ATen/ATen.h>
#include <lv2/atom/atom.h>
#include <lv2/atom/forge.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/core/lv2.h>
#include <lv2/options/options.h>
#include <lv2/time/time.h>
#include <lv2/urid/urid.h>

#include <dlfcn.h>
#include <sys/stat.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

namespace grafx {
namespace {

using testing::contains;
using testing::run_grafx;

constexpr SampleRate kRate    = testing::FitFolder::kRate;
constexpr int64_t kLatency    = 2046;  // the track's EQ and the group's, in series
constexpr int64_t kTracks     = 3;
constexpr const char* kPlugin = "urn:grafx:mix";

/// A fit folder as grafx fit leaves it (3 stereo tracks, EQs, dynamics, a delay, a reverb,
/// dry/wet amounts), and the bundle exported from it.
struct Exported : testing::FitFolder {
  std::string bundles = dir.file("bundles"), bundle = bundles + "/mix.lv2";
  testing::CommandResult exported;
  explicit Exported(bool automated = false) : FitFolder(automated) {
    std::filesystem::create_directory(bundles);
    exported = run_grafx({"export-lv2", folder, "-o", bundle});
  }

  /// A host program run on the bundles: its exit code, stdout and stderr.
  testing::CommandResult host(const std::string& command) const {
    testing::CommandResult r;
    const std::string out = dir.file("host.out"), err = dir.file("host.err");
    const int status =
        std::system(("LV2_PATH=" + bundles + " " + command + " >" + out + " 2>" + err).c_str());
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = testing::read_file(out), r.err = testing::read_file(err);
    return r;
  }

  /// What the plugin plays in a host at `host_rate` that does not say its block length (the
  /// plugin then plans for 64): a HostStream of the bundle's program.
  HostStream host_stream(int64_t host_rate) const {
    const std::string program = testing::read_file(bundle + "/stream.program");
    return HostStream(
        Stream::load(program,
                     HostStream::stream_block(64, Stream::program_sample_rate(program), host_rate)),
        host_rate);
  }

  /// The tracks after `lead` samples and followed by `latency` samples of silence, one file per
  /// track and all their channels in one (a host's input), and grafx render of the padded
  /// tracks: what the plugin plays, ahead by its latency.
  at::Tensor padded_render(const std::string& all_tracks, int64_t lead = 0) const {
    std::vector<at::Tensor> channels;
    std::vector<std::string> render = {
        "render", folder + "/console.json", "--params", folder + "/parameters.safetensors",
        "-o",     dir.file("rendered.wav"), "--force",  "--sources"};
    for (size_t k = 0; k < tracks.size(); ++k) {
      at::Tensor x = at::constant_pad_nd(read_audio(tracks[k]).samples, {lead, kLatency});
      render.push_back(dir.file("padded" + std::to_string(k) + ".wav"));
      write_audio(render.back(), x, kRate, /*overwrite=*/true);
      channels.push_back(x);
    }
    write_audio(all_tracks, at::cat(channels), kRate, /*overwrite=*/true);
    const auto r = run_grafx(render);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_audio(dir.file("rendered.wav")).samples;
  }
};

/// The stereo mix a HostStream plays of the tracks' channels [2·kTracks, L], in one call.
at::Tensor played_by(HostStream& host, const at::Tensor& tracks) {
  const int64_t length = tracks.size(1);
  at::Tensor mix       = at::zeros({2, length});
  std::vector<const float*> in;
  for (int64_t c = 0; c < tracks.size(0); ++c) in.push_back(tracks[c].data_ptr<float>());
  std::vector<float*> out = {mix[0].data_ptr<float>(), mix[1].data_ptr<float>()};
  host.process(in.data(), out.data(), length);
  return mix;
}

/// max |played, shifted back by the latency − rendered| / peak.
double difference(const at::Tensor& played, const at::Tensor& rendered) {
  const int64_t length = played.size(1) - kLatency;
  EXPECT_EQ(played.size(1), rendered.size(1));
  return (played.narrow(1, kLatency, length) - rendered.narrow(1, 0, length))
             .abs()
             .max()
             .item<double>() /
         rendered.abs().max().item<double>();
}

TEST(CliExportLv2, TheBundleLoadsAndPlaysTheFittedMixInDebiansHosts) {
  Exported e;
  ASSERT_EQ(e.exported.exit_code, 0) << e.exported.err;
  EXPECT_TRUE(contains(e.exported.out, "as urn:grafx:mix (16000 Hz, 3 tracks of 2 ch,"))
      << e.exported.out;
  for (const char* file : {"manifest.ttl", "plugin.ttl", "stream.program", "grafx_lv2.so"})
    EXPECT_TRUE(testing::file_exists(e.bundle + "/" + file)) << file;
  // The library needs nothing of LibTorch.
  const auto libraries = e.host("ldd " + e.bundle + "/grafx_lv2.so");
  EXPECT_EQ(libraries.exit_code, 0);
  // (Library names: ldd's load addresses may hold "c10" in hex.)
  EXPECT_FALSE(contains(libraries.out, "libtorch")) << libraries.out;
  EXPECT_FALSE(contains(libraries.out, "libc10")) << libraries.out;

  // lv2info lists it without a warning: 6 audio inputs, a stereo output, controls, latency.
  const auto info = e.host(std::string("lv2info ") + kPlugin);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.err, "");
  EXPECT_TRUE(contains(info.out, "Has latency:       yes")) << info.out;
  for (const char* port : {"in_1_left", "in_3_right", "out_left", "out_right", "latency",
                           "compressor_threshold", "gain_pan_gain_left", "wet"})
    EXPECT_TRUE(contains(info.out, port)) << port;

  // What a mixing engineer reads in a host's generic controls: the controls named in words
  // (left and right, not elements' indices), tooltips that say what a control does, groups
  // whose channels say which is left, a maker; and the signature of the ports first.
  const std::string written = testing::read_file(e.bundle + "/plugin.ttl");
  EXPECT_EQ(written.rfind("# grafx plugin ports: 1; 6 audio in, 2 audio out, ", 0), 0u)
      << written.substr(0, 200);
  for (const char* part :
       {"lv2:name \"track0 gain pan: gain left\"", "lv2:name \"track0 gain pan: gain right\"",
        "pg:element [", "lv2:designation pg:right", "lv2:project <urn:grafx:mix#project>",
        "doap:maintainer", "foaf:name", "compressor turns the signal down"})
    EXPECT_TRUE(contains(written, part)) << part;
  for (const char* part : {"raw", "[0]", "_\" ;", "log energy"})
    EXPECT_FALSE(contains(written, part)) << part;
  EXPECT_TRUE(contains(info.out, "track0 gain pan: gain left")) << info.out;
  // A fit's report is the plugin's page.
  testing::write_file(e.folder + "/report.html", "<html></html>");
  ASSERT_EQ(run_grafx({"export-lv2", e.folder, "-o", e.dir.file("paged.lv2")}).exit_code, 0);
  EXPECT_TRUE(
      contains(testing::read_file(e.dir.file("paged.lv2/plugin.ttl")), "doap:homepage <file://"));

  // Its Turtle files hold to the LV2 specification (sord_validate against the installed one).
  const auto validated =
      e.host("lv2_validate " + e.bundle + "/manifest.ttl " + e.bundle + "/plugin.ttl");
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
  EXPECT_TRUE(contains(validated.out + validated.err, "Found 0 errors"))
      << validated.out << validated.err;
  EXPECT_TRUE(contains(info.out, "Group:       urn:grafx:mix#in_1")) << info.out;

  // lv2apply renders the tracks through it as grafx render does, shifted by the latency.
  const at::Tensor rendered = e.padded_render(e.dir.file("tracks.wav"));
  auto applied              = e.host("lv2apply -i " + e.dir.file("tracks.wav") + " -o " +
                                     e.dir.file("applied.wav") + " " + kPlugin);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_LE(difference(read_audio(e.dir.file("applied.wav")).samples, rendered), 1e-5);
  // A control set by the host changes the mix: a track's gain, by its port symbol.
  const std::string ttl = testing::read_file(e.bundle + "/plugin.ttl");
  const size_t gain     = ttl.find("gain_pan_gain_left\"");
  ASSERT_NE(gain, std::string::npos);
  const size_t start     = ttl.rfind('"', gain) + 1;
  const std::string port = ttl.substr(start, ttl.find('"', start) - start);
  applied = e.host("lv2apply -c " + port + " -40 -i " + e.dir.file("tracks.wav") + " -o " +
                   e.dir.file("changed.wav") + " " + kPlugin);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_GT(difference(read_audio(e.dir.file("changed.wav")).samples, rendered), 1e-2);

  // In a session at another rate lv2apply (one sample a call, no block length said: the plugin
  // plans for 64) plays to the bit what a HostStream of the bundle's program plays at that rate
  // (called once: its output does not depend on how the host cuts its calls).
  const at::Tensor at_48k = at::randn({2 * kTracks, 24000}) * 0.3;
  write_audio(e.dir.file("tracks48k.wav"), at_48k, 48000);
  applied = e.host("lv2apply -i " + e.dir.file("tracks48k.wav") + " -o " +
                   e.dir.file("applied48k.wav") + " " + kPlugin);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  const Audio converted = read_audio(e.dir.file("applied48k.wav"));
  EXPECT_EQ(converted.sample_rate, 48000);
  HostStream host           = e.host_stream(48000);
  const at::Tensor expected = played_by(host, at_48k);
  EXPECT_TRUE(at::equal(converted.samples, expected));
  EXPECT_GT(expected.abs().max().item<double>(), 1e-2);
}

/// The plugin as a host sees it through the LV2 C interface.
struct LoadedPlugin {
  void* library                 = nullptr;
  const LV2_Lib_Descriptor* lib = nullptr;
  const LV2_Descriptor* plugin  = nullptr;
  explicit LoadedPlugin(const std::string& bundle) {
    library = dlopen((bundle + "/grafx_lv2.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(library, nullptr) << dlerror();
    auto entry =
        reinterpret_cast<LV2_Lib_Descriptor_Function>(dlsym(library, "lv2_lib_descriptor"));
    lib    = entry((bundle + "/").c_str(), nullptr);
    plugin = lib->get_plugin(lib->handle, 0);
  }
  ~LoadedPlugin() {
    lib->cleanup(lib->handle);
    dlclose(library);
  }
};

/// A host's URID map: URIs numbered from 1 in the order they are first mapped.
struct HostMap {
  std::vector<std::string> uris;
  LV2_URID_Map map{&uris, [](LV2_URID_Map_Handle handle, const char* uri) {
                     auto& known = *static_cast<std::vector<std::string>*>(handle);
                     auto at     = std::find(known.begin(), known.end(), uri);
                     if (at == known.end()) at = known.insert(known.end(), uri);
                     return LV2_URID(at - known.begin() + 1);
                   }};
};

TEST(CliExportLv2, AHostCallingThePluginGetsWhatLv2Promises) {
  Exported e;
  ASSERT_EQ(e.exported.exit_code, 0) << e.exported.err;
  const at::Tensor rendered = e.padded_render(e.dir.file("tracks.wav"));
  const at::Tensor tracks   = read_audio(e.dir.file("tracks.wav")).samples.contiguous();
  LoadedPlugin loaded(e.bundle);
  ASSERT_NE(loaded.plugin, nullptr);
  EXPECT_STREQ(loaded.plugin->URI, kPlugin);
  EXPECT_EQ(loaded.lib->get_plugin(loaded.lib->handle, 1), nullptr);
  // The same through lv2_descriptor, for hosts without the library interface.
  auto simple = reinterpret_cast<LV2_Descriptor_Function>(dlsym(loaded.library, "lv2_descriptor"));
  ASSERT_NE(simple(0), nullptr);
  EXPECT_STREQ(simple(0)->URI, kPlugin);
  // A rate of a fraction of a hertz is refused (no instance), as is a bundle without its program.
  EXPECT_EQ(loaded.plugin->instantiate(loaded.plugin, 44100.5, (e.bundle + "/").c_str(), nullptr),
            nullptr);
  EXPECT_EQ(loaded.plugin->instantiate(loaded.plugin, kRate, e.dir.path().c_str(), nullptr),
            nullptr);

  LV2_Handle instance =
      loaded.plugin->instantiate(loaded.plugin, kRate, (e.bundle + "/").c_str(), nullptr);
  ASSERT_NE(instance, nullptr);
  const int64_t length = tracks.size(1);
  at::Tensor played    = at::full({2, length}, 7.0f);
  uint32_t port        = 0;
  for (int64_t c = 0; c < 2 * kTracks; ++c)
    loaded.plugin->connect_port(instance, port++, tracks[c].data_ptr<float>());
  for (int64_t c = 0; c < 2; ++c)
    loaded.plugin->connect_port(instance, port++, played[c].data_ptr<float>());
  const std::string ttl = testing::read_file(e.bundle + "/plugin.ttl");
  int64_t n_ports       = 0;
  for (size_t at = ttl.find("\n    lv2:symbol"); at != std::string::npos;  // ports', not groups'
       at        = ttl.find("\n    lv2:symbol", at + 1))
    ++n_ports;
  // Not the latency, the transport, the bypass (left unconnected: enabled).
  const int64_t n_controls = n_ports - 2 * kTracks - 2 - 3;
  // The controls at their defaults (as hosts read them from plugin.ttl), then the latency.
  std::vector<float> controls;
  std::istringstream lines(ttl);
  for (std::string line; std::getline(lines, line);)
    if (contains(line, "lv2:default "))
      controls.push_back(std::stof(line.substr(line.find("default ") + 8)));
  ASSERT_FALSE(controls.empty());
  EXPECT_EQ(controls.back(), 1.0f);  // the bypass port's, last
  controls.pop_back();
  ASSERT_EQ(int64_t(controls.size()), n_controls);
  for (float& value : controls) loaded.plugin->connect_port(instance, port++, &value);
  float latency = -1;
  loaded.plugin->connect_port(instance, port++, &latency);
  loaded.plugin->activate(instance);
  // A call of no samples does nothing; calls longer than the stream's blocks (64, for a host that
  // does not say its block length) are split.
  loaded.plugin->run(instance, 0);
  EXPECT_EQ(played[0][0].item<float>(), 7.0f);
  EXPECT_EQ(latency, float(kLatency));
  // The tracks through `instance` into `played`, in calls of `block` samples.
  const auto play = [&](int64_t block) {
    for (int64_t start = 0; start < length; start += block) {
      for (int64_t c = 0; c < 2 * kTracks; ++c)
        loaded.plugin->connect_port(instance, uint32_t(c), tracks[c].data_ptr<float>() + start);
      for (int64_t c = 0; c < 2; ++c)
        loaded.plugin->connect_port(instance, uint32_t(2 * kTracks + c),
                                    played[c].data_ptr<float>() + start);
      loaded.plugin->run(instance, uint32_t(std::min<int64_t>(block, length - start)));
    }
  };
  play(5000);
  EXPECT_LE(difference(played, rendered), 1e-5);
  loaded.plugin->deactivate(instance);
  loaded.plugin->cleanup(instance);

  // A host that says its block length (buf-size options, URIDs of its map) gets a stream made
  // for it, and plays the same in calls of that length.
  HostMap host_map;
  LV2_URID_Map& map                  = host_map.map;
  const int32_t nominal              = 512;
  const LV2_Options_Option options[] = {
      {LV2_OPTIONS_INSTANCE, 0, map.map(map.handle, LV2_BUF_SIZE__nominalBlockLength),
       sizeof(int32_t), map.map(map.handle, LV2_ATOM__Int), &nominal},
      {LV2_OPTIONS_INSTANCE, 0, 0, 0, 0, nullptr}};
  const LV2_Feature map_feature{LV2_URID__map, &map},
      options_feature{LV2_OPTIONS__options, (void*)options};
  const LV2_Feature* features[] = {&map_feature, &options_feature, nullptr};
  instance = loaded.plugin->instantiate(loaded.plugin, kRate, (e.bundle + "/").c_str(), features);
  ASSERT_NE(instance, nullptr);
  played.fill_(7.0f);
  port = 2 * kTracks + 2;
  for (float& value : controls) loaded.plugin->connect_port(instance, port++, &value);
  loaded.plugin->connect_port(instance, port++, &latency);
  loaded.plugin->activate(instance);
  play(nominal);
  EXPECT_LE(difference(played, rendered), 1e-5);
  EXPECT_EQ(latency, float(kLatency));
  loaded.plugin->cleanup(instance);

  // At another rate it converts, and plays what a HostStream of its program plays (whose
  // conversions render_test checks against the offline render), with its latency: a host that
  // does not say its block length gets blocks of 64 samples.
  instance = loaded.plugin->instantiate(loaded.plugin, 48000, (e.bundle + "/").c_str(), nullptr);
  ASSERT_NE(instance, nullptr);
  HostStream host       = e.host_stream(48000);
  const at::Tensor fast = at::randn({2 * kTracks, 48000}) * 0.3;  // a second at 48 kHz
  at::Tensor converted  = at::zeros({2, 48000});
  port                  = 0;
  for (int64_t c = 0; c < 2 * kTracks; ++c)
    loaded.plugin->connect_port(instance, port++, fast[c].data_ptr<float>());
  for (int64_t c = 0; c < 2; ++c)
    loaded.plugin->connect_port(instance, port++, converted[c].data_ptr<float>());
  for (float& value : controls) loaded.plugin->connect_port(instance, port++, &value);
  loaded.plugin->connect_port(instance, port++, &latency);
  loaded.plugin->activate(instance);
#if defined(__SSE__)
  const unsigned mode = _mm_getcsr();  // run flushes subnormals, and gives the host its mode back
  loaded.plugin->run(instance, 48000);
  EXPECT_EQ(_mm_getcsr(), mode);
#else
  loaded.plugin->run(instance, 48000);
#endif
  const at::Tensor expected = played_by(host, fast);
  EXPECT_TRUE(at::equal(converted, expected));
  EXPECT_GT(converted.abs().max().item<double>(), 1e-2);
  EXPECT_EQ(latency, float(host.latency_samples()));
  EXPECT_GT(host.latency_samples(), kLatency * 3);  // the EQs' at 48 kHz, and the conversions'
  loaded.plugin->cleanup(instance);
}

// A host's transport moves the song's clock that automation curves follow: a time:Position event
// in the middle of a call plays as a HostStream told there (which render_test checks against the
// offline render), at the host's rate; events of other kinds are passed over; a stopped
// transport holds the clock. Its bypass (lv2:enabled) plays the tracks' sum, delayed by the
// latency.
TEST(CliExportLv2, ThePluginFollowsTheHostsTransport) {
  Exported e(true);
  ASSERT_EQ(e.exported.exit_code, 0) << e.exported.err;
  EXPECT_TRUE(
      contains(testing::read_file(e.bundle + "/plugin.ttl"), "atom:supports time:Position"));
  LoadedPlugin loaded(e.bundle);
  ASSERT_NE(loaded.plugin, nullptr);
  HostMap host_map;
  LV2_URID_Map& map = host_map.map;
  const LV2_Feature map_feature{LV2_URID__map, &map};
  const LV2_Feature* features[] = {&map_feature, nullptr};
  constexpr int64_t kHostRate = 48000, kCall = 4096, kMoved = 1000;  // an event at sample 1000
  LV2_Handle instance =
      loaded.plugin->instantiate(loaded.plugin, kHostRate, (e.bundle + "/").c_str(), features);
  ASSERT_NE(instance, nullptr);
  HostStream told = e.host_stream(kHostRate), untold = e.host_stream(kHostRate);
  const int64_t length = 3 * kCall;
  at::manual_seed(13);
  const at::Tensor tracks = at::randn({2 * kTracks, length}) * 0.3;
  at::Tensor played = at::zeros({2, length}), expected = at::zeros({2, length}),
             unmoved = at::zeros({2, length});
  // Controls at their defaults, from the stream's parameters (as plugin.ttl gives them).
  std::vector<float> controls;
  for (const StreamParameter& p : told.stream().parameters())
    controls.push_back(float(p.control.value));
  float latency = -1;
  uint32_t port = uint32_t(2 * kTracks + 2);
  for (float& value : controls) loaded.plugin->connect_port(instance, port++, &value);
  loaded.plugin->connect_port(instance, port++, &latency);
  alignas(8) uint8_t sequence[512];
  loaded.plugin->connect_port(instance, port++, sequence);
  float enabled = 1;
  loaded.plugin->connect_port(instance, port++, &enabled);
  loaded.plugin->activate(instance);
  // Song frame 72,000 (1.5 s) at sample 1000 of the first call; in the second, when the curves are
  // heard (after the EQs' latency), an object of another kind that also holds a frame.
  const int64_t frame = 72000;
  LV2_Atom_Forge forge;
  lv2_atom_forge_init(&forge, &map);
  // The transport port's sequence for the next call: empty (type null), or one object of `type`
  // at sample `time` with a time:speed and a time:frame whose value `value` writes.
  const auto send = [&](const char* type, int64_t time, float speed,
                        const std::function<void()>& value) {
    lv2_atom_forge_set_buffer(&forge, sequence, sizeof(sequence));
    LV2_Atom_Forge_Frame sequence_frame, object_frame;
    lv2_atom_forge_sequence_head(&forge, &sequence_frame, 0);
    if (type) {
      lv2_atom_forge_frame_time(&forge, time);
      lv2_atom_forge_object(&forge, &object_frame, 0, map.map(map.handle, type));
      lv2_atom_forge_key(&forge, map.map(map.handle, LV2_TIME__speed));
      lv2_atom_forge_float(&forge, speed);
      lv2_atom_forge_key(&forge, map.map(map.handle, LV2_TIME__frame));
      value();
      lv2_atom_forge_pop(&forge, &object_frame);
    }
    lv2_atom_forge_pop(&forge, &sequence_frame);
  };
  const auto long_frame = [&](int64_t f) {
    return [&forge, f] { lv2_atom_forge_long(&forge, f); };
  };
  for (int64_t start = 0; start < length; start += kCall) {
    std::vector<const float*> in;
    for (int64_t c = 0; c < 2 * kTracks; ++c) {
      in.push_back(tracks[c].data_ptr<float>() + start);
      loaded.plugin->connect_port(instance, uint32_t(c), tracks[c].data_ptr<float>() + start);
    }
    std::vector<float*> out, other;
    for (int64_t c = 0; c < 2; ++c) {
      loaded.plugin->connect_port(instance, uint32_t(2 * kTracks + c),
                                  played[c].data_ptr<float>() + start);
      out.push_back(expected[c].data_ptr<float>() + start);
      other.push_back(unmoved[c].data_ptr<float>() + start);
    }
    if (start == 0)  // the first call's event, then the second's
      send(LV2_TIME__Position, kMoved, 1.0f, long_frame(frame));
    else
      send(start == kCall ? LV2_TIME__Time : nullptr, 10, 1.0f, long_frame(5));
    enabled = start < 2 * kCall;  // the last call bypassed
    told.set_bypassed(!enabled);
    loaded.plugin->run(instance, uint32_t(kCall));
    untold.process(in.data(), other.data(), kCall);
    if (start == 0) {
      told.process(in.data(), out.data(), kMoved);
      for (auto& p : in) p += kMoved;
      for (auto& p : out) p += kMoved;
      told.locate(frame + told.latency_samples());  // the host's frame is the output's
      told.process(in.data(), out.data(), kCall - kMoved);
    } else {
      told.process(in.data(), out.data(), kCall);
    }
  }
  EXPECT_TRUE(at::equal(played, expected));
  const double peak = expected.abs().max().item<double>();
  EXPECT_GT(peak, 1e-2);
  EXPECT_GT((played - unmoved).abs().max().item<double>(), 1e-3 * peak);  // the curves moved it
  // Bypassed, after its glide: the tracks' sum (left channels, right channels) by the latency.
  const int64_t glided = 2 * kCall + glide_samples(kHostRate), delay = told.latency_samples();
  const at::Tensor sum = tracks.view({kTracks, 2, length}).sum(0);
  EXPECT_LE(
      (played.narrow(1, glided, length - glided) - sum.narrow(1, glided - delay, length - glided))
          .abs()
          .max()
          .item<double>(),
      1e-6);
  // A stopped transport (speed 0) holds the clock where it stands, call after call, though the
  // host says so once; a clock left to run plays otherwise.
  enabled = 1;
  loaded.plugin->run(instance, 0);  // takes the port's value (no samples: nothing else)
  loaded.plugin->activate(instance);
  HostStream held = e.host_stream(kHostRate), rolled = e.host_stream(kHostRate);
  held.set_bypassed(false), rolled.set_bypassed(false);
  const int64_t stop = 24000;  // 0.5 s, where the curves move
  at::Tensor stopped = at::zeros({2, length}), expected_held = at::zeros({2, length}),
             expected_rolled = at::zeros({2, length});
  for (int64_t start = 0; start < length; start += kCall) {
    std::vector<const float*> in;
    std::vector<float*> out_held, out_rolled;
    for (int64_t c = 0; c < 2 * kTracks; ++c) {
      in.push_back(tracks[c].data_ptr<float>() + start);
      loaded.plugin->connect_port(instance, uint32_t(c), tracks[c].data_ptr<float>() + start);
    }
    for (int64_t c = 0; c < 2; ++c) {
      loaded.plugin->connect_port(instance, uint32_t(2 * kTracks + c),
                                  stopped[c].data_ptr<float>() + start);
      out_held.push_back(expected_held[c].data_ptr<float>() + start);
      out_rolled.push_back(expected_rolled[c].data_ptr<float>() + start);
    }
    send(start == 0 ? LV2_TIME__Position : nullptr, 0, 0.0f, long_frame(stop));
    if (start == 0) rolled.locate(stop + rolled.latency_samples());
    loaded.plugin->run(instance, uint32_t(kCall));
    held.locate(stop + held.latency_samples());
    held.process(in.data(), out_held.data(), kCall);
    rolled.process(in.data(), out_rolled.data(), kCall);
  }
  EXPECT_TRUE(at::equal(stopped, expected_held));
  EXPECT_GT((stopped - expected_rolled).abs().max().item<double>(), 1e-3 * peak);
  // Hostile frames: the latest a clock holds, the earliest (the song's start), a frame of the
  // wrong type (passed over): the plugin plays on, finite.
  for (int64_t hostile : {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()})
    for (bool as_long : {true, false}) {
      stopped.fill_(NAN);  // the buffers the plugin plays into now
      send(
          LV2_TIME__Position, 0, 1.0f,
          as_long ? std::function<void()>(long_frame(hostile))
                  : [&forge] { lv2_atom_forge_int(&forge, 7); });
      loaded.plugin->run(instance, uint32_t(kCall));
      EXPECT_TRUE(at::isfinite(stopped.narrow(1, 2 * kCall, kCall)).all().item<bool>());
    }
  loaded.plugin->cleanup(instance);
}

// A DAW as mixing engineers use one, built on lilv (LilvHost): it connects the ports plugin.ttl
// declares, processes in place (the outputs on the first track's input buffers), compensates the
// plugin's latency (its transport's frame is the plugin's output's, and it feeds the input
// `latency` frames ahead, rolling up to the session's first frame from frame −latency on) and
// bypasses through lv2:enabled. A song that starts at the session's first frame, or later, plays
// the render of the session from its first sample, with its automation on the session's clock;
// bypassed, the tracks' plain sum. At the fit's rate against grafx render; at another against a
// HostStream of the program fed the session from its start (which render_test checks against
// the offline render of the converted tracks).
TEST(CliExportLv2, ADawSessionPlaysTheRenderInPlaceFromAnyStartAndBypassed) {
#ifndef GRAFX_HAVE_LILV
  GTEST_SKIP() << "built without lilv's headers (scripts/setup.sh --tests installs liblilv-dev)";
#else
  Exported e(true);
  ASSERT_EQ(e.exported.exit_code, 0) << e.exported.err;
  constexpr int64_t kCall = 512;
  for (int64_t host_rate : {int64_t(kRate), int64_t(48000)})
    for (int64_t lead : {int64_t(0), host_rate / 4}) {
      const std::string where =
          std::to_string(host_rate) + " Hz, song from " + std::to_string(lead);
      testing::LilvHost host(e.bundle + "/", kPlugin, double(host_rate));
      ASSERT_TRUE(host.instantiated()) << where;
      ASSERT_EQ(host.audio_inputs().size(), size_t(2 * kTracks));
      ASSERT_EQ(host.audio_outputs().size(), 2u);
      ASSERT_TRUE(host.has_latency_port() && host.has_enabled_port() && host.has_transport_port());
      // The session's inputs [2·kTracks, lead + song + latency]: the fit's tracks at its rate,
      // a second of noise at another; and what it should play from its first frame.
      at::Tensor session, expected;
      HostStream reference = e.host_stream(host_rate);
      const int64_t ahead  = reference.latency_samples();
      if (host_rate == kRate) {
        expected = e.padded_render(e.dir.file("session.wav"), lead);
        session  = read_audio(e.dir.file("session.wav")).samples.contiguous();
      } else {
        at::manual_seed(21);
        session = at::constant_pad_nd(at::randn({2 * kTracks, host_rate}) * 0.3, {lead, ahead});
        const at::Tensor fed = at::constant_pad_nd(session, {0, ahead}).contiguous();
        expected             = played_by(reference, fed).narrow(1, ahead, session.size(1));
      }
      const int64_t length = session.size(1) - ahead;  // what the session plays and compares
      at::Tensor buffers   = at::zeros({2 * kTracks, kCall});
      std::vector<float*> in;
      for (int64_t c = 0; c < 2 * kTracks; ++c) in.push_back(buffers[c].data_ptr<float>());
      host.connect(in, {in[0], in[1]});  // in place
      const auto play = [&] {
        host.run(0, -ahead);  // the ports' values: the latency, whether enabled
        host.activate();
        at::Tensor played = at::zeros({2, length});
        for (int64_t frame = -ahead; frame < length; frame += kCall) {
          const int64_t n = std::min(kCall, length - frame);
          buffers.narrow(1, 0, n).copy_(session.narrow(1, frame + ahead, n));
          host.run(uint32_t(n), frame);
          for (int64_t i = std::max<int64_t>(0, -frame); i < n; ++i)
            for (int64_t c = 0; c < 2; ++c) played[c][frame + i] = buffers[c][i];
        }
        return played;
      };
      const at::Tensor mix = play();
      EXPECT_EQ(host.latency(), float(ahead)) << where;
      const at::Tensor heard = expected.narrow(1, 0, length);
      const double peak      = heard.abs().max().item<double>();
      EXPECT_GT(peak, 1e-2) << where;
      EXPECT_LE((mix - heard).abs().max().item<double>(), 1e-5 * peak) << where;
      host.set_enabled(false);  // bypassed from the start: the tracks' sum, channel by channel
      const at::Tensor dry    = play();
      const at::Tensor summed = session.narrow(1, 0, length).view({kTracks, 2, length}).sum(0);
      EXPECT_LE((dry - summed).abs().max().item<double>(), 1e-6) << where;
    }
#endif
}

// A bundle's files are never trusted: a program copied from another export (other ports than its
// plugin.ttl declares), a program that is a link to an endless device or a FIFO, plugin.ttl
// without its signature: the plugin makes no instance, says why, and holds nothing.
TEST(CliExportLv2, APluginOfMismatchedOrHostileFilesMakesNoInstance) {
  Exported e;
  ASSERT_EQ(e.exported.exit_code, 0) << e.exported.err;
  const std::string mono = e.bundles + "/mono.lv2";
  ASSERT_EQ(run_grafx({"export-lv2", e.folder, "--channels", "1", "-o", mono}).exit_code, 0);
  const std::string program = e.bundle + "/stream.program", kept = e.dir.file("kept.program");
  std::filesystem::copy_file(program, kept);
  LoadedPlugin loaded(e.bundle);
  ASSERT_NE(loaded.plugin, nullptr);
  const auto instance = [&] {
    return loaded.plugin->instantiate(loaded.plugin, kRate, (e.bundle + "/").c_str(), nullptr);
  };
  LV2_Handle good = instance();
  ASSERT_NE(good, nullptr);
  loaded.plugin->cleanup(good);
  // Another export's program: 3 audio inputs where plugin.ttl declares 6.
  std::filesystem::copy_file(mono + "/stream.program", program,
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(instance(), nullptr);
  // A link to /dev/zero and a FIFO: refused at once, not read.
  std::filesystem::remove(program);
  std::filesystem::create_symlink("/dev/zero", program);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(instance(), nullptr);
  std::filesystem::remove(program);
  ASSERT_EQ(::mkfifo(program.c_str(), 0600), 0);
  EXPECT_EQ(instance(), nullptr);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  // plugin.ttl without the signature of its ports (an older export, or one edited by hand).
  std::filesystem::remove(program);
  std::filesystem::copy_file(kept, program);
  const std::string ttl = testing::read_file(e.bundle + "/plugin.ttl");
  testing::write_file(e.bundle + "/plugin.ttl", ttl.substr(ttl.find('\n') + 1));
  EXPECT_EQ(instance(), nullptr);
  testing::write_file(e.bundle + "/plugin.ttl", ttl);
  good = instance();
  EXPECT_NE(good, nullptr);
  if (good) loaded.plugin->cleanup(good);
}

// Replacing a bundle never deletes what the export reads: a parameter file, a graph file or a
// whole fit folder inside the bundle is refused, even with --force, and kept.
TEST(CliExportLv2, ReplacingABundleNeverDeletesItsInputs) {
  Exported e;
  ASSERT_EQ(e.exported.exit_code, 0) << e.exported.err;
  namespace fs = std::filesystem;
  fs::copy_file(e.folder + "/parameters.safetensors", e.bundle + "/p.safetensors");
  fs::copy_file(e.folder + "/console.json", e.bundle + "/console.json");
  fs::copy(e.folder, e.bundle + "/fit", fs::copy_options::recursive);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {e.folder, "--params", e.bundle + "/p.safetensors"},
           {e.bundle + "/console.json", "--params", e.folder + "/parameters.safetensors"},
           {e.bundle + "/fit"}}) {
    std::vector<std::string> command = {"export-lv2"};
    command.insert(command.end(), args.begin(), args.end());
    for (const char* more : {"-o", "", "--force"}) command.push_back(more);
    command[command.size() - 2] = e.bundle;
    const auto r                = run_grafx(command);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "[grafx.io.overwrites_input]")) << r.err;
  }
  EXPECT_TRUE(testing::file_exists(e.bundle + "/p.safetensors"));
  EXPECT_TRUE(testing::file_exists(e.bundle + "/console.json"));
  EXPECT_TRUE(testing::file_exists(e.bundle + "/fit/parameters.safetensors"));
}

// The folder of a pruned console holds no record of the fit's tracks: it exports all the same,
// its inputs named after the graph's `in` nodes, and streams with --tracks.
TEST(CliExportLv2, APrunedConsolesFolderExports) {
  Exported e;
  ASSERT_EQ(e.exported.exit_code, 0) << e.exported.err;
  std::filesystem::remove(e.folder + "/fit.json");
  auto r = run_grafx({"export-lv2", e.folder, "-o", e.bundles + "/pruned.lv2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string ttl = testing::read_file(e.bundles + "/pruned.lv2/plugin.ttl");
  EXPECT_TRUE(contains(ttl, "lv2:name \"track0 left\"")) << ttl.substr(0, 2000);
  r = run_grafx({"stream", e.folder, "-o", e.dir.file("s.wav")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "records no tracks")) << r.err;
}

// Ctrl-C while a large console's stream is made: nothing is written, the bundle there is kept,
// and no half-written folder is left beside it (those of killed exports are removed).
TEST(CliExportLv2, AnInterruptedExportWritesNothing) {
  testing::TempDir dir;
  ASSERT_EQ(
      run_grafx({"console", "--tracks", "16", "--groups", "4", "-o", dir.file("g.json")}).exit_code,
      0);
  std::filesystem::create_directory(dir.file("kept.lv2"));
  testing::write_file(dir.file("kept.lv2/manifest.ttl"), "kept");  // an earlier bundle
  // And what an export killed while writing left (pid 999999 is no process's here).
  std::filesystem::create_directory(dir.file(".kept.lv2.partial999999"));
  auto r = run_grafx(
      {"export-lv2", dir.file("g.json"), "--sample-rate", "192000", "-o", dir.file("kept.lv2"),
       "--force"},
      {}, testing::signal_once_handled(SIGINT));  // as it begins: seconds of work before it writes
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "[grafx.lv2.interrupted]")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(testing::read_file(dir.file("kept.lv2/manifest.ttl")), "kept");
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_FALSE(contains(entry.path().filename().string(), ".partial")) << entry.path();
}

TEST(CliExportLv2, WhatCannotBeExportedIsRefusedInOneLine) {
  Exported e;
  ASSERT_EQ(e.exported.exit_code, 0) << e.exported.err;
  auto expect_error = [](const testing::CommandResult& r, const std::string& code,
                         const std::string& part) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "[" + code + "]")) << r.err;
    EXPECT_TRUE(contains(r.err, part)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  // An existing bundle is kept without --force, and replaced whole with it.
  const std::string program = testing::read_file(e.bundle + "/stream.program");
  expect_error(run_grafx({"export-lv2", e.folder, "-o", e.bundle}), "grafx.io.exists", "--force");
  EXPECT_EQ(testing::read_file(e.bundle + "/stream.program"), program);
  auto r = run_grafx({"export-lv2", e.folder, "-o", e.bundle, "--force", "--name", "Mix two"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(testing::read_file(e.bundle + "/plugin.ttl"), "\"Mix two\""));
  // A folder that is not a bundle is never replaced; names that are not bundles' are refused.
  std::filesystem::create_directory(e.dir.file("mine.lv2"));
  testing::write_file(e.dir.file("mine.lv2/notes.txt"), "mine");
  expect_error(run_grafx({"export-lv2", e.folder, "-o", e.dir.file("mine.lv2"), "--force"}),
               "grafx.lv2.bundle", "not an LV2 bundle");
  EXPECT_EQ(testing::read_file(e.dir.file("mine.lv2/notes.txt")), "mine");
  expect_error(run_grafx({"export-lv2", e.folder, "-o", e.dir.file("mix")}), "grafx.lv2.bundle",
               "NAME.lv2");
  expect_error(run_grafx({"export-lv2", e.folder, "-o", e.dir.file("no/such/x.lv2")}),
               "grafx.io.unwritable", "does not exist");
  // Parameters made for one rate cannot run at another; a URI must be one.
  expect_error(
      run_grafx({"export-lv2", e.folder, "-o", e.dir.file("a.lv2"), "--sample-rate", "48000"}),
      "grafx.lv2.sample_rate", "16000 Hz");
  expect_error(run_grafx({"export-lv2", e.folder, "-o", e.dir.file("a.lv2"), "--uri", "a b"}),
               "grafx.lv2.uri", "absolute URI");
  // Turtle's IRIs hold no control characters: a bundle no lilv host could load is not written.
  expect_error(
      run_grafx({"export-lv2", e.folder, "-o", e.dir.file("a.lv2"), "--uri", "urn:grafx:a\tb"}),
      "grafx.lv2.uri", "urn:grafx:a\\x09b");
  expect_error(run_grafx({"export-lv2", e.folder, "-o", e.dir.file("a\tb.lv2")}),
               "grafx.lv2.bundle", "no control characters");
  EXPECT_FALSE(testing::file_exists(e.dir.file("a.lv2")));
  // A graph with a cycle or an unknown type, and a fit folder with a corrupt parameter file.
  testing::write_file(e.dir.file("cycle.json"),
                      R"({"format": "grafx.graph", "version": 2,
  "nodes": [{"id": 0, "type": "in"}, {"id": 1, "type": "gain_pan"}, {"id": 2, "type": "gain_pan"},
            {"id": 3, "type": "out"}],
  "edges": [{"source": 0, "dest": 1}, {"source": 1, "dest": 2}, {"source": 2, "dest": 1},
            {"source": 2, "dest": 3}], "next_id": 4})");
  r = run_grafx({"export-lv2", e.dir.file("cycle.json"), "-o", e.dir.file("a.lv2"), "--sample-rate",
                 "48000"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "grafx.graph.cycle")) << r.err;
  testing::write_file(e.dir.file("unknown.json"),
                      R"({"format": "grafx.graph", "version": 2,
  "nodes": [{"id": 0, "type": "in"}, {"id": 1, "type": "flanger"}, {"id": 2, "type": "out"}],
  "edges": [{"source": 0, "dest": 1}, {"source": 1, "dest": 2}], "next_id": 3})");
  r = run_grafx({"export-lv2", e.dir.file("unknown.json"), "-o", e.dir.file("a.lv2"),
                 "--sample-rate", "48000"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "flanger")) << r.err;
  // Parameters whose streaming form would hold a number that is not finite (a knee of e^100 in
  // log energy), which the plugin would refuse to load: refused here, nothing written.
  const Graph graph     = load_graph(e.folder + "/console.json");
  Parameters parameters = load_parameters(e.folder + "/parameters.safetensors", graph);
  ASSERT_TRUE(parameters.count("compressor") && parameters["compressor"].own.count("log_knee"));
  parameters["compressor"]["log_knee"].fill_(100);
  save_parameters(e.dir.file("huge.safetensors"), graph, parameters, false, kRate);
  expect_error(run_grafx({"export-lv2", e.folder, "--params", e.dir.file("huge.safetensors"), "-o",
                          e.dir.file("a.lv2")}),
               "grafx.lv2.program", "not finite");
  EXPECT_FALSE(testing::file_exists(e.dir.file("a.lv2")));
  // Gains in series that overflow a float for loud tracks (e^60 on a track and on its group):
  // the plugin would play silence; refused.
  parameters = load_parameters(e.folder + "/parameters.safetensors", graph);
  parameters["gain_pan"]["log_gain"].fill_(60);
  save_parameters(e.dir.file("loud.safetensors"), graph, parameters, false, kRate);
  expect_error(run_grafx({"export-lv2", e.folder, "--params", e.dir.file("loud.safetensors"), "-o",
                          e.dir.file("a.lv2")}),
               "grafx.lv2.program", "play as silence");
  EXPECT_FALSE(testing::file_exists(e.dir.file("a.lv2")));
  testing::write_file(e.folder + "/parameters.safetensors", "not a safetensors file");
  r = run_grafx({"export-lv2", e.folder, "-o", e.dir.file("a.lv2")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "parameters.safetensors")) << r.err;
  EXPECT_FALSE(testing::file_exists(e.dir.file("a.lv2")));
  for (const auto& entry : std::filesystem::directory_iterator(e.dir.path()))  // no leftovers
    EXPECT_FALSE(contains(entry.path().filename().string(), ".partial")) << entry.path();
}

}  // namespace
}  // namespace grafx
