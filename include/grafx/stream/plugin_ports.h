#pragma once
/// The ports of a plugin that runs a stream (stream/host_stream.h), in the order its plugin.ttl
/// declares them and the plugin connects them: each source's channels (audio in), each
/// output's channels (audio out), a control per stream parameter, then the latency (control
/// out), the host's transport (atom in) and whether it is enabled (control in). The one
/// definition the exporter (grafx export-lv2, which writes plugin.ttl) and the plugin
/// (apps/lv2, which connects the ports) share.
///
///   const PluginPorts ports(stream);
///   PluginPorts::Port p = ports[index];        // {kAudioIn, 3}: the fourth source channel
///
/// A bundle holds plugin.ttl and the stream's program side by side, and a host connects the
/// ports plugin.ttl declares: where the two disagree (a program copied from another export) the
/// plugin would write audio into a single float. plugin.ttl carries the signature of its
/// layout (`signature_line`), which the plugin compares with its program's before it makes an
/// instance.
///
/// Plain C++ (no LibTorch).

#include <grafx/stream/stream.h>

#include <cstdint>
#include <string>

namespace grafx {

class PluginPorts {
 public:
  enum class Kind { kAudioIn, kAudioOut, kControl, kLatency, kTransport, kEnabled, kNone };
  /// A port: its kind and its place among the ports of that kind.
  struct Port {
    Kind kind     = Kind::kNone;
    int64_t index = 0;
  };

  explicit PluginPorts(const Stream& stream);

  int64_t audio_inputs() const { return audio_in_; }
  int64_t audio_outputs() const { return audio_out_; }
  int64_t controls() const { return controls_; }
  int64_t size() const { return audio_in_ + audio_out_ + controls_ + 3; }
  /// What port `port` is ({kNone, 0} past the last).
  Port operator[](int64_t port) const;

  /// The layout in words with a hash of every control's node, name, unit and range: two
  /// streams of one signature have ports a host connects alike and that mean the same.
  const std::string& signature() const { return signature_; }
  /// The line plugin.ttl begins with (a Turtle comment) and the plugin looks for: "# grafx
  /// plugin ports: " and the signature.
  std::string signature_line() const { return std::string(kSignaturePrefix) + signature_; }
  static constexpr const char* kSignaturePrefix = "# grafx plugin ports: ";

 private:
  int64_t audio_in_ = 0, audio_out_ = 0, controls_ = 0;
  std::string signature_;
};

}  // namespace grafx
