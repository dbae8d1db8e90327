#include <grafx/hash.h>
#include <grafx/stream/plugin_ports.h>

#include <cstdio>

namespace grafx {

PluginPorts::PluginPorts(const Stream& stream)
    : audio_in_(stream.n_sources() * stream.source_channels()),
      audio_out_(stream.n_outputs() * stream.output_channels()),
      controls_(int64_t(stream.parameters().size())) {
  uint64_t hash = kFnv1aStart;
  auto add      = [&hash](const std::string& text) {
    hash = fnv1a(text.data(), text.size() + 1, hash);  // with its terminating zero: unambiguous
  };
  for (const StreamParameter& p : stream.parameters()) {
    add(std::to_string(p.node)), add(p.type), add(p.control.name), add(p.control.unit);
    char range[64];
    std::snprintf(range, sizeof range, "%.9g %.9g", p.control.minimum, p.control.maximum);
    add(range);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  signature_ = "1; " + std::to_string(audio_in_) + " audio in, " + std::to_string(audio_out_) +
               " audio out, " + std::to_string(controls_) + " controls (" + hex +
               "), latency, transport, enabled";
}

PluginPorts::Port PluginPorts::operator[](int64_t port) const {
  if (port < 0) return {};
  if (port < audio_in_) return {Kind::kAudioIn, port};
  port -= audio_in_;
  if (port < audio_out_) return {Kind::kAudioOut, port};
  port -= audio_out_;
  if (port < controls_) return {Kind::kControl, port};
  port -= controls_;
  switch (port) {
    case 0:
      return {Kind::kLatency, 0};
    case 1:
      return {Kind::kTransport, 0};
    case 2:
      return {Kind::kEnabled, 0};
    default:
      return {};
  }
}

}  // namespace grafx
