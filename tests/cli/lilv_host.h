#pragma once
// A host of an exported plugin as DAWs built on lilv are (Ardour, Carla, Qtractor): it reads the
// bundle's Turtle through lilv and connects each port by what plugin.ttl declares it to be, not
// by what the plugin's own program says: the audio inputs and outputs in their order (the
// outputs on the first inputs' buffers where the host processes in place), every control input
// at its default, the output that reports the latency, the input designated lv2:enabled and the
// atom input that takes time:Position, to which it sends one position at the start of each call
// (the frame of the plugin's output there, as hosts that compensate latency do).

#include <lilv/lilv.h>
#include <lv2/atom/atom.h>
#include <lv2/atom/forge.h>
#include <lv2/core/lv2.h>
#include <lv2/port-groups/port-groups.h>
#include <lv2/time/time.h>
#include <lv2/urid/urid.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace grafx::testing {

class LilvHost {
 public:
  /// The plugin `uri` of the bundle folder `bundle` (ending in '/'), at `host_rate`.
  LilvHost(const std::string& bundle, const std::string& uri, double host_rate)
      : world_(lilv_world_new()) {
    map_.handle = &uris_;
    map_.map    = [](LV2_URID_Map_Handle handle, const char* uri) {
      auto& known = *static_cast<std::vector<std::string>*>(handle);
      auto at     = std::find(known.begin(), known.end(), uri);
      if (at == known.end()) at = known.insert(known.end(), uri);
      return LV2_URID(at - known.begin() + 1);
    };
    LilvNode* bundle_uri = lilv_new_file_uri(world_, nullptr, bundle.c_str());
    lilv_world_load_bundle(world_, bundle_uri);
    lilv_node_free(bundle_uri);
    LilvNode* plugin_uri = lilv_new_uri(world_, uri.c_str());
    plugin_              = lilv_plugins_get_by_uri(lilv_world_get_all_plugins(world_), plugin_uri);
    lilv_node_free(plugin_uri);
    if (!plugin_) throw std::runtime_error("lilv found no plugin " + uri + " in " + bundle);
    const auto node = [&](const char* u) { return lilv_new_uri(world_, u); };
    LilvNode *audio = node(LV2_CORE__AudioPort), *control = node(LV2_CORE__ControlPort),
             *atom = node(LV2_ATOM__AtomPort), *input = node(LV2_CORE__InputPort),
             *enabled = node(LV2_CORE__enabled), *reports = node(LV2_CORE__reportsLatency),
             *position = node(LV2_TIME__Position), *supports = node(LV2_ATOM__supports),
             *designated = node(LV2_CORE__designation);
    const uint32_t n     = lilv_plugin_get_num_ports(plugin_);
    std::vector<float> minimum(n), maximum(n), defaults(n);
    lilv_plugin_get_port_ranges_float(plugin_, minimum.data(), maximum.data(), defaults.data());
    controls_.assign(n, 0.0f);
    for (uint32_t i = 0; i < n; ++i) {
      const LilvPort* port = lilv_plugin_get_port_by_index(plugin_, i);
      const bool is_input  = lilv_port_is_a(plugin_, port, input);
      if (lilv_port_is_a(plugin_, port, audio)) {
        (is_input ? audio_in_ : audio_out_).push_back(i);
      } else if (lilv_port_is_a(plugin_, port, control)) {
        control_ports_.push_back(i);
        if (!is_input && lilv_port_has_property(plugin_, port, reports)) latency_port_ = int(i);
        LilvNodes* designation = lilv_port_get_value(plugin_, port, designated);
        if (is_input && designation && lilv_nodes_contains(designation, enabled))
          enabled_port_ = int(i);
        lilv_nodes_free(designation);
        controls_[i] = defaults[i];
      } else if (lilv_port_is_a(plugin_, port, atom) && is_input) {
        LilvNodes* supported = lilv_port_get_value(plugin_, port, supports);
        if (supported && lilv_nodes_contains(supported, position)) transport_port_ = int(i);
        lilv_nodes_free(supported);
      }
    }
    for (LilvNode* made :
         {audio, control, atom, input, enabled, reports, position, supports, designated})
      lilv_node_free(made);
    map_feature_           = {LV2_URID__map, &map_};
    const LV2_Feature* f[] = {&map_feature_, nullptr};
    instance_              = lilv_plugin_instantiate(plugin_, host_rate, f);
    if (!instance_) return;  // refused: the test says so
    for (uint32_t i : control_ports_) lilv_instance_connect_port(instance_, i, &controls_[i]);
    if (transport_port_ >= 0)
      lilv_instance_connect_port(instance_, uint32_t(transport_port_), sequence_);
    lv2_atom_forge_init(&forge_, &map_);
  }
  ~LilvHost() {
    if (instance_) lilv_instance_free(instance_);
    lilv_world_free(world_);
  }
  LilvHost(const LilvHost&)            = delete;
  LilvHost& operator=(const LilvHost&) = delete;

  bool instantiated() const { return instance_ != nullptr; }
  const std::vector<uint32_t>& audio_inputs() const { return audio_in_; }
  const std::vector<uint32_t>& audio_outputs() const { return audio_out_; }
  bool has_latency_port() const { return latency_port_ >= 0; }
  bool has_enabled_port() const { return enabled_port_ >= 0; }
  bool has_transport_port() const { return transport_port_ >= 0; }
  float latency() const { return latency_port_ >= 0 ? controls_[size_t(latency_port_)] : -1; }
  void set_enabled(bool on) { controls_[size_t(enabled_port_)] = on ? 1.0f : 0.0f; }

  /// Connects the audio ports: `inputs` in plugin.ttl's order, `outputs` likewise.
  void connect(const std::vector<float*>& inputs, const std::vector<float*>& outputs) {
    for (size_t k = 0; k < audio_in_.size(); ++k)
      lilv_instance_connect_port(instance_, audio_in_[k], inputs[k]);
    for (size_t k = 0; k < audio_out_.size(); ++k)
      lilv_instance_connect_port(instance_, audio_out_[k], outputs[k]);
  }
  void activate() { lilv_instance_activate(instance_); }
  /// One call of n samples, the transport rolling at `frame` (the plugin's output's frame) at
  /// its first sample.
  void run(uint32_t n, int64_t frame) {
    lv2_atom_forge_set_buffer(&forge_, sequence_, sizeof(sequence_));
    LV2_Atom_Forge_Frame sequence_frame, object_frame;
    lv2_atom_forge_sequence_head(&forge_, &sequence_frame, 0);
    lv2_atom_forge_frame_time(&forge_, 0);
    lv2_atom_forge_object(&forge_, &object_frame, 0, map_.map(map_.handle, LV2_TIME__Position));
    lv2_atom_forge_key(&forge_, map_.map(map_.handle, LV2_TIME__speed));
    lv2_atom_forge_float(&forge_, 1.0f);
    lv2_atom_forge_key(&forge_, map_.map(map_.handle, LV2_TIME__frame));
    lv2_atom_forge_long(&forge_, frame);
    lv2_atom_forge_pop(&forge_, &object_frame);
    lv2_atom_forge_pop(&forge_, &sequence_frame);
    lilv_instance_run(instance_, n);
  }

 private:
  LilvWorld* world_         = nullptr;
  const LilvPlugin* plugin_ = nullptr;
  LilvInstance* instance_   = nullptr;
  std::vector<std::string> uris_;
  LV2_URID_Map map_{};
  LV2_Feature map_feature_{};
  std::vector<uint32_t> audio_in_, audio_out_, control_ports_;
  int latency_port_ = -1, enabled_port_ = -1, transport_port_ = -1;
  std::vector<float> controls_;  // by port index: the controls' values, the latency
  alignas(8) uint8_t sequence_[256]{};
  LV2_Atom_Forge forge_{};
};

}  // namespace grafx::testing
