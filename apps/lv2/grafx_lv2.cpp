// The LV2 plugin of an exported graph (grafx export-lv2): one shared library for every bundle,
// which reads its bundle's stream program (stream.program, Stream::save) and plugin URI
// (plugin.uri) and runs the stream at the host's rate (stream/host_stream.h: converted where
// the host runs at another rate than the fit's). Plain C++ and the LV2 headers: no LibTorch.
//
// Ports, in the order the bundle's plugin.ttl declares them: each source's channels (audio
// in), each output's channels (audio out), one control per stream parameter (physical units),
// the latency (control out, lv2:reportsLatency), the host's transport (atom in: its
// time:Position events move the song's clock, which automation curves follow; their frame is the
// output's, the input running ahead of it by the latency), then whether it is enabled
// (lv2:enabled: off, it plays the tracks' sum delayed by its latency). stream/plugin_ports.h
// defines the layout; plugin.ttl's first line holds its signature, which the program must match.

#include <grafx/stream/host_stream.h>
#include <grafx/stream/plugin_ports.h>

#include <lv2/atom/atom.h>
#include <lv2/atom/util.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/core/lv2.h>
#include <lv2/options/options.h>
#include <lv2/time/time.h>
#include <lv2/urid/urid.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::string bundle_file(const std::string& bundle, const char* name) {
  return bundle + (bundle.empty() || bundle.back() == '/' ? "" : "/") + name;
}

/// The first `most` bytes of a bundle's file, or all of it where `whole` (then a longer file is
/// refused). Only a regular file is read: a link to a device (/dev/zero), a FIFO or a folder is
/// refused before a byte is, so that a host is never held or filled by what a bundle holds.
std::string read_file(const std::string& path, uint64_t most, bool whole) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
    throw std::runtime_error(path + " is not a regular file");
  if (whole && uint64_t(info.st_size) > most)
    throw std::runtime_error(path + " is larger than " + std::to_string(most >> 20) + " MiB");
  std::string bytes(size_t(std::min<uint64_t>(uint64_t(info.st_size), most)), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, &bytes[done], bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += size_t(n);
  }
  if (done < bytes.size()) throw std::runtime_error("cannot read " + path + ": it shrank");
  return bytes;
}

/// The largest program a bundle may hold: far above any console's (a 20,000-node chain's is
/// tens of MB).
constexpr uint64_t kMostProgramBytes = uint64_t(1) << 30;

/// Refuses a program whose ports are not those the bundle's plugin.ttl declares (its first
/// line, written by export-lv2, holds their signature): a host connects the ports plugin.ttl
/// declares, and a program of more would have audio written into single floats.
void check_ports(const std::string& bundle, const grafx::PluginPorts& ports) {
  const std::string head = read_file(bundle_file(bundle, "plugin.ttl"), 4096, false);
  const std::string line = head.substr(0, head.find('\n'));
  if (line != ports.signature_line())
    throw std::runtime_error(
        "its stream.program is not the one its plugin.ttl was written for (ports of the program: " +
        ports.signature() + "; plugin.ttl: " +
        (line.rfind(grafx::PluginPorts::kSignaturePrefix, 0) == 0
             ? line.substr(std::strlen(grafx::PluginPorts::kSignaturePrefix))
             : std::string("none")) +
        "): export the bundle again");
}

/// A bundle's plugin, as hosts discover it: its URI.
struct Bundle {
  std::string uri;
  LV2_Descriptor descriptor{};
};

/// What lv2_lib_descriptor returns: the library of one bundle.
struct Library {
  LV2_Lib_Descriptor descriptor{};
  std::unique_ptr<Bundle> bundle;
};

struct Plugin {
  grafx::HostStream host;
  grafx::PluginPorts ports;
  std::vector<const float*> inputs;  // ports, as the host connected them
  std::vector<float*> outputs;
  std::vector<const float*> inputs_from;  // the same from a sample of the call on
  std::vector<float*> outputs_from;
  std::vector<const float*> controls;
  float* latency                     = nullptr;
  const LV2_Atom_Sequence* transport = nullptr;
  const float* enabled               = nullptr;
  std::vector<float> control_values;  // as last applied
  /// URIDs of the transport's events, where the host maps them (0: it does not).
  struct {
    LV2_URID object = 0, blank = 0, position = 0, frame = 0, speed = 0, long_integer = 0,
             single = 0;
  } uri;
  /// Where the transport stands still (its last position had speed 0): the song's clock is held
  /// there, moved back at the start of every call (hosts need not repeat the position).
  int64_t stopped_at = -1;
};

/// The map among a host's features, or null.
const LV2_URID_Map* urid_map(const LV2_Feature* const* features) {
  for (const LV2_Feature* const* f = features; f && *f; ++f)
    if (std::strcmp((*f)->URI, LV2_URID__map) == 0)
      return static_cast<const LV2_URID_Map*>((*f)->data);
  return nullptr;
}

/// The blocks a host that does not say its block length runs: its calls of any size are split
/// into blocks of up to 64 samples, for which the convolutions take a head in direct form,
/// which costs no more in calls of one sample (stream/convolution.h).
constexpr int64_t kUnknownHostBlock = 64;

/// The block length the host calls run() with, from its options (buf-size: the nominal one,
/// else the maximum), or kUnknownHostBlock.
int64_t host_block(const LV2_Feature* const* features) {
  const LV2_URID_Map* map           = urid_map(features);
  const LV2_Options_Option* options = nullptr;
  for (const LV2_Feature* const* f = features; f && *f; ++f)
    if (std::strcmp((*f)->URI, LV2_OPTIONS__options) == 0)
      options = static_cast<const LV2_Options_Option*>((*f)->data);
  if (!map || !options) return kUnknownHostBlock;
  const LV2_URID nominal = map->map(map->handle, LV2_BUF_SIZE__nominalBlockLength);
  const LV2_URID most    = map->map(map->handle, LV2_BUF_SIZE__maxBlockLength);
  const LV2_URID integer = map->map(map->handle, LV2_ATOM__Int);
  int64_t nominal_length = 0, max_length = 0;
  for (const LV2_Options_Option* o = options; o->key != 0; ++o)
    if (o->type == integer && o->size == sizeof(int32_t) && o->value) {
      const int32_t length = *static_cast<const int32_t*>(o->value);
      if (o->key == nominal) nominal_length = length;
      if (o->key == most) max_length = length;
    }
  const int64_t length = nominal_length > 0 ? nominal_length : max_length;
  return length > 0 && length <= (int64_t(1) << 20) ? length : kUnknownHostBlock;
}

LV2_Handle instantiate(const LV2_Descriptor* descriptor, double sample_rate,
                       const char* bundle_path, const LV2_Feature* const* features) {
  const std::string bundle = bundle_path ? bundle_path : "";
  try {
    if (sample_rate != std::floor(sample_rate))
      throw std::runtime_error("a host rate of a fraction of a hertz");
    // The stream made for the host's blocks (its convolutions are planned for calls of them).
    const std::string program =
        read_file(bundle_file(bundle, "stream.program"), kMostProgramBytes, true);
    grafx::Stream stream = grafx::Stream::load(
        program, grafx::HostStream::stream_block(host_block(features),
                                                 grafx::Stream::program_sample_rate(program),
                                                 int64_t(sample_rate)));
    grafx::PluginPorts ports(stream);
    check_ports(bundle, ports);
    auto plugin = std::make_unique<Plugin>(
        Plugin{grafx::HostStream(std::move(stream), int64_t(sample_rate)), ports});
    Plugin& p                  = *plugin;
    const grafx::Stream& graph = p.host.stream();
    p.inputs.assign(size_t(ports.audio_inputs()), nullptr);
    p.outputs.assign(size_t(ports.audio_outputs()), nullptr);
    p.inputs_from = p.inputs, p.outputs_from = p.outputs;
    p.controls.assign(size_t(ports.controls()), nullptr);
    for (const grafx::StreamParameter& parameter : graph.parameters())  // the ports' defaults
      p.control_values.push_back(float(parameter.control.value));
    if (const LV2_URID_Map* map = urid_map(features)) {
      const auto id      = [map](const char* uri) { return map->map(map->handle, uri); };
      p.uri.object       = id(LV2_ATOM__Object);
      p.uri.blank        = id(LV2_ATOM__Blank);
      p.uri.position     = id(LV2_TIME__Position);
      p.uri.frame        = id(LV2_TIME__frame);
      p.uri.speed        = id(LV2_TIME__speed);
      p.uri.long_integer = id(LV2_ATOM__Long);
      p.uri.single       = id(LV2_ATOM__Float);
    }
    return plugin.release();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grafx: %s: %s\n", descriptor->URI, e.what());
    return nullptr;
  }
}

void connect_port(LV2_Handle handle, uint32_t port, void* data) {
  Plugin& p                           = *static_cast<Plugin*>(handle);
  const grafx::PluginPorts::Port what = p.ports[port];
  const size_t k                      = size_t(what.index);
  switch (what.kind) {
    case grafx::PluginPorts::Kind::kAudioIn:
      p.inputs[k] = static_cast<const float*>(data);
      break;
    case grafx::PluginPorts::Kind::kAudioOut:
      p.outputs[k] = static_cast<float*>(data);
      break;
    case grafx::PluginPorts::Kind::kControl:
      p.controls[k] = static_cast<const float*>(data);
      break;
    case grafx::PluginPorts::Kind::kLatency:
      p.latency = static_cast<float*>(data);
      break;
    case grafx::PluginPorts::Kind::kTransport:
      p.transport = static_cast<const LV2_Atom_Sequence*>(data);
      break;
    case grafx::PluginPorts::Kind::kEnabled:
      p.enabled = static_cast<const float*>(data);
      break;
    case grafx::PluginPorts::Kind::kNone:  // a port plugin.ttl does not declare: ignored
      break;
  }
}

/// What a transport event says: the frame at its time, where it says one, and whether the
/// transport rolls there.
struct Position {
  bool found    = false;
  int64_t frame = 0;
  bool rolling  = true;
};

/// The Position of a time:Position object with a time:frame (atom:Long) and, where it has one, a
/// time:speed (atom:Float; 0: stopped). Hosts send one where the transport starts, stops or moves,
/// some every call.
Position position_of(const Plugin& p, const LV2_Atom_Event& event) {
  if (p.uri.position == 0 || (event.body.type != p.uri.object && event.body.type != p.uri.blank))
    return {};
  const auto* object = reinterpret_cast<const LV2_Atom_Object*>(&event.body);
  if (object->body.otype != p.uri.position) return {};
  const LV2_Atom *frame = nullptr, *speed = nullptr;
  lv2_atom_object_get(object, p.uri.frame, &frame, p.uri.speed, &speed, 0);
  if (!frame || frame->type != p.uri.long_integer || frame->size < sizeof(int64_t)) return {};
  Position position{true, reinterpret_cast<const LV2_Atom_Long*>(frame)->body};
  if (speed && speed->type == p.uri.single && speed->size >= sizeof(float))
    position.rolling = reinterpret_cast<const LV2_Atom_Float*>(speed)->body != 0.0f;
  return position;
}

/// The song frame of the input sample at a transport event's time. A host that compensates the
/// plugin's latency reports the frame of the plugin's output there (where Ardour, Reaper and
/// Carla put it), and feeds it the input of `latency` frames later: a song that starts at the
/// host's first frame reaches the plugin while the host rolls up to it (frames −latency on). A
/// frame before the song's start counts as its start: the song's clock then plays on, where a
/// clock before it would silence every signal (as the offline render of a song does before it
/// begins).
int64_t song_frame(int64_t output_frame, int64_t latency) {
  const int64_t most = grafx::Stream::kLatestSongSample;  // and no overflow on the way
  return std::max<int64_t>(0, std::clamp<int64_t>(output_frame, -most, most - latency) + latency);
}

void activate(LV2_Handle handle) {
  Plugin& p = *static_cast<Plugin*>(handle);
  p.host.reset(), p.stopped_at = -1;
}

/// Flushes subnormal numbers to zero while it lives, as audio plugins do: a smoother's state
/// decaying through them in silence would otherwise cost a hundred times as much per sample.
class FlushSubnormals {
 public:
#if defined(__SSE__)
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }  // FTZ and DAZ
  ~FlushSubnormals() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
#endif
};

void run(LV2_Handle handle, uint32_t n_samples) {
  const FlushSubnormals flush;
  Plugin& p = *static_cast<Plugin*>(handle);
  if (p.latency) *p.latency = float(p.host.latency_samples());
  for (size_t k = 0; k < p.controls.size(); ++k)  // a changed control glides to its value
    if (p.controls[k] && *p.controls[k] != p.control_values[k]) {
      p.control_values[k] = *p.controls[k];
      p.host.stream().set_parameter(k, double(p.control_values[k]));
    }
  if (p.enabled) p.host.set_bypassed(*p.enabled < 0.5f);  // it glides
  for (const float* port : p.inputs)
    if (!port) return;  // the host has not connected every port: nothing to do
  for (float* port : p.outputs)
    if (!port) return;
  // The samples up to each transport event, then the clock moved to its frame.
  if (p.stopped_at >= 0) p.host.locate(p.stopped_at);
  int64_t done       = 0;
  const auto play_to = [&](int64_t end) {
    if (end <= done) return;
    for (size_t k = 0; k < p.inputs.size(); ++k) p.inputs_from[k] = p.inputs[k] + done;
    for (size_t k = 0; k < p.outputs.size(); ++k) p.outputs_from[k] = p.outputs[k] + done;
    p.host.process(p.inputs_from.data(), p.outputs_from.data(), end - done);
    done = end;
  };
  if (p.transport && p.transport->atom.size >= sizeof(LV2_Atom_Sequence_Body))
    LV2_ATOM_SEQUENCE_FOREACH(p.transport, event) {
      const Position position = position_of(p, *event);
      if (!position.found) continue;
      play_to(std::clamp<int64_t>(event->time.frames, done, n_samples));
      const int64_t song = song_frame(position.frame, p.host.latency_samples());
      p.host.locate(song);
      p.stopped_at = position.rolling ? -1 : song;
    }
  play_to(n_samples);
}

void deactivate(LV2_Handle) {}
void cleanup(LV2_Handle handle) { delete static_cast<Plugin*>(handle); }
const void* extension_data(const char*) { return nullptr; }

/// The bundle at `path`, or null (and why, on stderr) where it cannot be read.
Bundle* open_bundle(const std::string& path) {
  try {
    auto bundle = std::make_unique<Bundle>();
    bundle->uri = read_file(bundle_file(path, "plugin.uri"), 4096, true);
    while (!bundle->uri.empty() && std::isspace(static_cast<unsigned char>(bundle->uri.back())))
      bundle->uri.pop_back();
    bundle->descriptor = {bundle->uri.c_str(), instantiate, connect_port,  activate, run,
                          deactivate,          cleanup,     extension_data};
    return bundle.release();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grafx: %s\n", e.what());
    return nullptr;
  }
}

const LV2_Descriptor* get_plugin(LV2_Lib_Handle handle, uint32_t index) {
  return index == 0 ? &static_cast<Library*>(handle)->bundle->descriptor : nullptr;
}

void cleanup_library(LV2_Lib_Handle handle) { delete static_cast<Library*>(handle); }

}  // namespace

/// The bundle's plugin, for hosts that pass the bundle (lilv and most).
LV2_SYMBOL_EXPORT const LV2_Lib_Descriptor* lv2_lib_descriptor(const char* bundle_path,
                                                               const LV2_Feature* const*) {
  Bundle* bundle = open_bundle(bundle_path ? bundle_path : "");
  if (!bundle) return nullptr;
  auto* library = new Library;
  library->bundle.reset(bundle);
  library->descriptor = {library, sizeof(LV2_Lib_Descriptor), cleanup_library, get_plugin};
  return &library->descriptor;
}

/// The same plugin for hosts that only know lv2_descriptor: the bundle is the folder this
/// library was loaded from (one bundle per copy of the library, as export-lv2 writes them).
LV2_SYMBOL_EXPORT const LV2_Descriptor* lv2_descriptor(uint32_t index) {
  static Bundle* bundle = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void*>(&lv2_descriptor), &info) || !info.dli_fname)
      return static_cast<Bundle*>(nullptr);
    std::string path = info.dli_fname;
    return open_bundle(path.substr(0, path.find_last_of('/') + 1));
  }();
  return index == 0 && bundle ? &bundle->descriptor : nullptr;
}
