// The streaming form of the containers (processors/containers.h): their members' forms in
// series, in parallel or on a crossover's bands. No LibTorch here: the LV2 plugin runs this.

#include <grafx/stream/container_form.h>

#include <algorithm>
#include <limits>

namespace grafx {
namespace {

/// These forms' kinds in programs, saved first (their numbers since programs of version 2).
constexpr int32_t kKind = 4, kBandsKind = 5;

}  // namespace
namespace {

/// A container node's members' streams, in series or summed with their weights. A series
/// silences each member's output outside the song (as the offline render's members end at the
/// song's ends); parallel members are aligned to the slowest before they are summed.
class ContainerStream : public NodeStream {
 public:
  ContainerStream(std::vector<std::unique_ptr<NodeStream>> members, std::vector<float> weights,
                  int64_t channels, int64_t max_block)
      : members_(std::move(members)), weights_(std::move(weights)), input_channels_(channels) {
    int64_t latency = 0;
    for (const auto& member : members_) {
      const int64_t out = member->outlet_channels().front();
      latency           = serial() ? latency + member->latency_samples()
                                   : std::max(latency, member->latency_samples());
      latencies_.push_back(latency);
      buffers_.emplace_back(size_t(out * max_block), 0.0f);
      outputs_.push_back({});
      for (int64_t c = 0; c < out; ++c)
        outputs_.back().push_back({buffers_.back().data() + c * max_block});
      channels = serial() ? out : std::max(channels, out);
    }
    channels_ = channels;
    latency_  = latency;
    if (!serial())  // each member delayed to the slowest
      for (size_t k = 0; k < members_.size(); ++k)
        delays_.emplace_back(size_t(members_[k]->outlet_channels().front()),
                             DelayLine(latency - members_[k]->latency_samples()));
    for (size_t k = 0; k < members_.size(); ++k) {
      inputs_.push_back({});
      for (float* channel : outputs_[k]) inputs_.back().push_back(channel);
    }
  }

  std::vector<int64_t> outlet_channels() const override { return {channels_}; }
  bool takes(int64_t n_inlets, int64_t channels) const override {
    if (!members_.front()->takes(n_inlets, channels)) return false;
    for (size_t k = 1; k < members_.size(); ++k)  // in series each takes the one before's output
      if (serial() ? !members_[k]->takes(1, members_[k - 1]->outlet_channels().front())
                   : !members_[k]->takes(n_inlets, channels))
        return false;
    return true;
  }
  int64_t latency_samples() const override { return latency_; }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    if (serial()) {
      for (size_t k = 0; k < members_.size(); ++k) {
        members_[k]->process(k == 0 ? inlets : InletBuffers{inputs_[k - 1]}, {outputs_[k]}, n);
        keep_to_song(k, n);
      }
      for (size_t c = 0; c < outlets[0].size(); ++c)
        std::copy_n(outputs_.back()[c], n, outlets[0][c]);
    } else {
      for (size_t c = 0; c < outlets[0].size(); ++c) std::fill_n(outlets[0][c], n, 0.0f);
      for (size_t k = 0; k < members_.size(); ++k) {
        members_[k]->process(inlets, {outputs_[k]}, n);
        const size_t member_channels = outputs_[k].size();
        for (size_t c = 0; c < member_channels; ++c)
          delays_[k][c].process(outputs_[k][c], outputs_[k][c], n);
        // Mono and stereo members add as dual mono, as forward broadcasts them.
        for (size_t c = 0; c < outlets[0].size(); ++c) {
          const float* y = outputs_[k][std::min(c, member_channels - 1)];
          for (int64_t i = 0; i < n; ++i) outlets[0][c][i] += y[i] * weights_[k];
        }
      }
    }
    clock_ += n;
  }

  void reset() override {
    for (auto& member : members_) member->reset();
    for (auto& member : delays_)
      for (DelayLine& d : member) d.reset();
    clock_ = 0;
  }
  std::vector<StreamBurst> bursts() const override {  // the members', moved together
    std::vector<StreamBurst> bursts;
    for (const auto& member : members_)
      for (const StreamBurst& burst : member->bursts()) bursts.push_back(burst);
    return bursts;
  }
  void set_phase(int64_t phase) override {
    for (auto& member : members_) member->set_phase(phase);
    reset();
  }
  void save(StreamWriter& out) const override {
    out.write(kKind);
    out.write(uint64_t(members_.size()));
    for (const auto& member : members_) member->save(out);
    out.write(weights_), out.write(input_channels_);
  }
  void set_song_end(int64_t samples) override {
    song_end_ = samples < 0 ? std::numeric_limits<int64_t>::max() : samples;
    for (auto& member : members_) member->set_song_end(samples);
  }
  void locate(int64_t clock) override {
    clock_ = clock;
    for (auto& member : members_) member->locate(clock);
  }

 private:
  bool serial() const { return weights_.empty(); }
  void keep_to_song(size_t k, int64_t n) {
    const int64_t start = clock_ - latencies_[k];  // song time of the block's first sample
    if (start >= 0 && start + n <= song_end_) return;
    for (float* channel : outputs_[k])
      for (int64_t i = 0; i < n; ++i)
        if (start + i < 0 || start + i >= song_end_) channel[i] = 0;
  }

  std::vector<std::unique_ptr<NodeStream>> members_;
  std::vector<float> weights_;                           // parallel; empty in series
  int64_t input_channels_, channels_ = 1, latency_ = 0;  // of its inlet, its outlet
  std::vector<int64_t> latencies_;                       // of each member's output
  std::vector<std::vector<float>> buffers_;
  std::vector<OutletBuffers::value_type> outputs_;
  std::vector<InletBuffers::value_type> inputs_;
  std::vector<std::vector<DelayLine>> delays_;
  int64_t clock_ = 0, song_end_ = std::numeric_limits<int64_t>::max();
};

/// A multiband container: its crossover's bands, each through its member and mixed with itself
/// by its wet amount, summed (mono and stereo as dual mono), each member and dry band delayed to
/// the slowest member. The bands are silenced outside the song, as the offline render's
/// crossover output ends at the song's ends.
class BandStream : public NodeStream {
 public:
  BandStream(std::unique_ptr<NodeStream> split, std::vector<std::unique_ptr<NodeStream>> members,
             std::vector<float> wet, int64_t max_block)
      : split_(std::move(split)), members_(std::move(members)), wet_(std::move(wet)) {
    const std::vector<int64_t> bands = split_->outlet_channels();
    int64_t slowest                  = 0;
    for (const auto& member : members_) {
      slowest   = std::max(slowest, member->latency_samples());
      channels_ = std::max(channels_, member->outlet_channels().front());
    }
    latency_ = split_->latency_samples() + slowest;
    for (size_t k = 0; k < members_.size(); ++k) {
      band_buffers_.emplace_back(size_t(bands[k] * max_block), 0.0f);
      bands_.push_back({}), band_inputs_.push_back({});
      for (int64_t c = 0; c < bands[k]; ++c) {
        bands_.back().push_back(band_buffers_.back().data() + c * max_block);
        band_inputs_.back().push_back(bands_.back().back());
      }
      const int64_t out = members_[k]->outlet_channels().front();
      output_buffers_.emplace_back(size_t(out * max_block), 0.0f);
      outputs_.push_back({});
      for (int64_t c = 0; c < out; ++c)
        outputs_.back().push_back(output_buffers_.back().data() + c * max_block);
      delays_.emplace_back(size_t(out), DelayLine(slowest - members_[k]->latency_samples()));
      dry_delays_.emplace_back(size_t(bands[k]), DelayLine(slowest));
    }
  }

  std::vector<int64_t> outlet_channels() const override { return {channels_}; }
  bool takes(int64_t n_inlets, int64_t channels) const override {
    if (!split_->takes(n_inlets, channels)) return false;
    const std::vector<int64_t> bands = split_->outlet_channels();
    if (bands.size() != members_.size()) return false;
    for (size_t k = 0; k < members_.size(); ++k)
      if (!members_[k]->takes(1, bands[k])) return false;
    return true;
  }
  int64_t latency_samples() const override { return latency_; }

  void process(const InletBuffers& inlets, const OutletBuffers& outlets, int64_t n) override {
    split_->process(inlets, bands_, n);
    keep_to_song(n);
    for (size_t c = 0; c < outlets[0].size(); ++c) std::fill_n(outlets[0][c], n, 0.0f);
    for (size_t k = 0; k < members_.size(); ++k) {
      members_[k]->process({band_inputs_[k]}, {outputs_[k]}, n);
      const size_t member_channels = outputs_[k].size(), band_channels = bands_[k].size();
      for (size_t c = 0; c < member_channels; ++c)
        delays_[k][c].process(outputs_[k][c], outputs_[k][c], n);
      for (size_t c = 0; c < band_channels; ++c)  // the member has read its band
        dry_delays_[k][c].process(bands_[k][c], bands_[k][c], n);
      const float wet = wet_[k];
      for (size_t c = 0; c < outlets[0].size(); ++c) {
        const float* y   = outputs_[k][std::min(c, member_channels - 1)];
        const float* dry = bands_[k][std::min(c, band_channels - 1)];
        for (int64_t i = 0; i < n; ++i) outlets[0][c][i] += dry[i] + wet * (y[i] - dry[i]);
      }
    }
    clock_ += n;
  }

  void reset() override {
    split_->reset();
    for (auto& member : members_) member->reset();
    for (auto* lines : {&delays_, &dry_delays_})
      for (auto& member : *lines)
        for (DelayLine& d : member) d.reset();
    clock_ = 0;
  }
  std::vector<StreamBurst> bursts() const override {  // the crossover's and members', together
    std::vector<StreamBurst> bursts = split_->bursts();
    for (const auto& member : members_)
      for (const StreamBurst& burst : member->bursts()) bursts.push_back(burst);
    return bursts;
  }
  void set_phase(int64_t phase) override {
    split_->set_phase(phase);
    for (auto& member : members_) member->set_phase(phase);
    reset();
  }
  void save(StreamWriter& out) const override {
    out.write(kBandsKind);
    split_->save(out);
    out.write(uint64_t(members_.size()));
    for (const auto& member : members_) member->save(out);
    out.write(wet_);
  }
  void set_song_end(int64_t samples) override {
    song_end_ = samples < 0 ? std::numeric_limits<int64_t>::max() : samples;
    split_->set_song_end(samples);
    for (auto& member : members_) member->set_song_end(samples);
  }
  void locate(int64_t clock) override {
    clock_ = clock;
    split_->locate(clock);
    for (auto& member : members_) member->locate(clock);
  }

 private:
  void keep_to_song(int64_t n) {
    const int64_t start = clock_ - split_->latency_samples();  // song time of the bands' block
    if (start >= 0 && start + n <= song_end_) return;
    for (const auto& band : bands_)
      for (float* channel : band)
        for (int64_t i = 0; i < n; ++i)
          if (start + i < 0 || start + i >= song_end_) channel[i] = 0;
  }

  std::unique_ptr<NodeStream> split_;
  std::vector<std::unique_ptr<NodeStream>> members_;
  std::vector<float> wet_;  // each band's
  int64_t channels_ = 1, latency_ = 0;
  std::vector<std::vector<float>> band_buffers_, output_buffers_;
  OutletBuffers bands_;                                      // the crossover's outlets
  std::vector<InletBuffers::value_type> band_inputs_;        // the same, as the members' inlets
  std::vector<OutletBuffers::value_type> outputs_;           // each member's
  std::vector<std::vector<DelayLine>> delays_, dry_delays_;  // [member or band][channel]
  int64_t clock_ = 0, song_end_ = std::numeric_limits<int64_t>::max();
};

}  // namespace

std::unique_ptr<NodeStream> band_stream(std::unique_ptr<NodeStream> split,
                                        std::vector<std::unique_ptr<NodeStream>> members,
                                        std::vector<float> wet, int64_t max_block) {
  return std::make_unique<BandStream>(std::move(split), std::move(members), std::move(wet),
                                      max_block);
}

std::unique_ptr<NodeStream> container_stream(std::vector<std::unique_ptr<NodeStream>> members,
                                             std::vector<float> weights, int64_t channels,
                                             int64_t max_block) {
  return std::make_unique<ContainerStream>(std::move(members), std::move(weights), channels,
                                           max_block);
}

namespace {

/// A member's form: one outlet, which is all a container hands it.
std::unique_ptr<NodeStream> load_member(StreamReader& in, int64_t max_block) {
  std::unique_ptr<NodeStream> member = load_node_stream(in, max_block);
  if (member->outlet_channels().size() != 1) in.corrupt("a container's member without one outlet");
  return member;
}

std::unique_ptr<NodeStream> load_container_stream(StreamReader& in, int64_t max_block) {
  std::vector<std::unique_ptr<NodeStream>> members(size_t(in.read_count(1, 1 << 10)));
  for (auto& member : members) member = load_member(in, max_block);
  std::vector<float> weights = in.read_vector<float>();
  if (!weights.empty() && weights.size() != members.size())
    in.corrupt("parallel members without their weights");
  const int64_t channels = in.read_count(1, 8);
  // Its members' buffers, and delay lines that align parallel members to the slowest.
  int64_t slowest = 0;
  for (const auto& member : members) slowest = std::max(slowest, member->latency_samples());
  for (const auto& member : members)
    in.allocate(4.0 * double(member->outlet_channels().front()) *
                double(max_block + (weights.empty() ? 0 : slowest - member->latency_samples())));
  return container_stream(std::move(members), std::move(weights), channels, max_block);
}

std::unique_ptr<NodeStream> load_band_stream(StreamReader& in, int64_t max_block) {
  std::unique_ptr<NodeStream> split = load_node_stream(in, max_block);
  const std::vector<int64_t> bands  = split->outlet_channels();
  std::vector<std::unique_ptr<NodeStream>> members(size_t(in.read_count(2, 3)));
  if (members.size() != bands.size()) in.corrupt("a crossover's bands without a member each");
  for (auto& member : members) member = load_member(in, max_block);
  std::vector<float> wet = in.read_vector<float>();
  if (wet.size() != members.size()) in.corrupt("bands without their wet amounts");
  // Its bands' and members' buffers, and delay lines that align them to the slowest member.
  int64_t slowest = 0;
  for (const auto& member : members) slowest = std::max(slowest, member->latency_samples());
  for (size_t k = 0; k < members.size(); ++k)
    in.allocate(4.0 * double(bands[k]) * double(max_block + slowest) +
                4.0 * double(members[k]->outlet_channels().front()) *
                    double(max_block + slowest - members[k]->latency_samples()));
  return band_stream(std::move(split), std::move(members), std::move(wet), max_block);
}

const bool kRegistered      = register_form(kKind, "container", load_container_stream);
const bool kBandsRegistered = register_form(kBandsKind, "multiband container", load_band_stream);

}  // namespace

}  // namespace grafx
