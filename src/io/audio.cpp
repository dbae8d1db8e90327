#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/io/audio.h>

#include <ATen/ATen.h>
#include <samplerate.h>
#include <sndfile.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

namespace grafx {
namespace {

struct SndfileCloser {
  void operator()(SNDFILE* f) const { sf_close(f); }
};
using SndfilePtr = std::unique_ptr<SNDFILE, SndfileCloser>;

int container_for(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  if (ext == ".wav") return SF_FORMAT_WAV;
  if (ext == ".flac") return SF_FORMAT_FLAC;
  if (ext == ".ogg") return SF_FORMAT_OGG;
  if (ext == ".aif" || ext == ".aiff") return SF_FORMAT_AIFF;
  throw IoError("grafx.io.audio_format", path + ": unknown audio format \"" + ext +
                                             "\"; expected .wav, .flac, .ogg or .aiff");
}

/// libsndfile's text for its last error, as part of a sentence: "Error : Malformed WAV file."
/// becomes "malformed WAV file".
std::string sndfile_reason(SNDFILE* file) {
  std::string text = sf_strerror(file);
  for (const char* prefix : {"Error : ", "System error : ", "Error: "})
    if (text.rfind(prefix, 0) == 0) text.erase(0, std::strlen(prefix));
  while (!text.empty() && (text.back() == '.' || text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  if (!text.empty()) text[0] = char(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

/// Why a file cannot be opened as audio, in words a user acts on.
IoError unreadable_audio(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path file(path);
  std::string why;
  if (!std::filesystem::exists(file, ec))
    why = "does not exist";
  else if (std::filesystem::is_directory(file, ec))
    why = "is a folder, not an audio file";
  else if (std::filesystem::is_regular_file(file, ec) && std::filesystem::file_size(file, ec) == 0)
    why = "is empty (0 bytes), not an audio file";
  else
    why = "cannot be read as audio (WAV, FLAC, Ogg Vorbis or AIFF): " + sndfile_reason(nullptr);
  return IoError("grafx.io.unreadable", path + ": " + why);
}

}  // namespace

Audio read_audio(const std::string& path) {
  check_path(path, "grafx.io.unreadable");
  SF_INFO info{};
  SndfilePtr file(sf_open(path.c_str(), SFM_READ, &info));
  if (!file) throw unreadable_audio(path);
  if (info.channels < 1 || info.frames < 0 || info.samplerate < 1)
    throw IoError("grafx.io.unreadable", path + ": not a usable audio file");
  check_input_size(path, uint64_t(info.frames) * uint64_t(info.channels) * sizeof(float));
  at::Tensor interleaved = at::empty({int64_t(info.frames), int64_t(info.channels)}, at::kFloat);
  sf_count_t read        = sf_readf_float(file.get(), interleaved.data_ptr<float>(), info.frames);
  if (read != info.frames)
    throw IoError("grafx.io.unreadable", path + ": read " + std::to_string(read) + " of " +
                                             std::to_string(info.frames) + " frames");
  at::Tensor samples = interleaved.t().contiguous();  // C×L
  if (samples.size(1) == 0) throw IoError("grafx.io.length", path + ": holds no samples");
  at::Tensor bad = ~samples.isfinite();
  if (bad.any().item<bool>()) {
    at::Tensor first = bad.nonzero()[0];
    throw IoError("grafx.io.non_finite",
                  path + ": holds non-finite samples (NaN or infinity), the first at sample " +
                      std::to_string(first[1].item<int64_t>()) + " of channel " +
                      std::to_string(first[0].item<int64_t>()));
  }
  return {samples, info.samplerate};
}

void write_audio(const std::string& path, const at::Tensor& samples, SampleRate sample_rate,
                 bool overwrite, AudioEncoding encoding) {
  if (!samples.defined() || samples.dim() != 2 || samples.size(0) < 1)
    throw IoError("grafx.io.audio_format", path + ": expected C×L samples to write");
  // Integer samples (PCM counts) would be written as floats thousands of times full scale.
  if (!at::isFloatingType(samples.scalar_type()))
    throw IoError("grafx.io.audio_format",
                  path + ": expected floating-point samples (full scale at ±1), but got " +
                      std::string(c10::toString(samples.scalar_type())) +
                      "; convert them, e.g. 16-bit counts divided by 32768");
  if (sample_rate < 1 || sample_rate > std::numeric_limits<int>::max())  // libsndfile's int
    throw IoError("grafx.io.audio_format", path + ": invalid sample rate " +
                                               std::to_string(sample_rate) +
                                               " (audio files hold 1 to 2147483647 Hz)");
  int container = container_for(path);
  int subtype   = encoding == AudioEncoding::kPcm16   ? SF_FORMAT_PCM_16
                  : encoding == AudioEncoding::kPcm24 ? SF_FORMAT_PCM_24
                                                      : SF_FORMAT_FLOAT;
  if (container == SF_FORMAT_FLAC && subtype == SF_FORMAT_FLOAT) subtype = SF_FORMAT_PCM_24;
  if (container == SF_FORMAT_OGG) subtype = SF_FORMAT_VORBIS;
  at::Tensor interleaved = samples.detach().to(at::kCPU, at::kFloat).t().contiguous();
  if (subtype != SF_FORMAT_FLOAT) interleaved = interleaved.clamp(-1.0, 1.0);
  write_atomically(path, overwrite, [&](const std::string& temporary) {
    SF_INFO info{};
    info.samplerate = int(sample_rate);
    info.channels   = int(samples.size(0));
    info.format     = container | subtype;
    if (!sf_format_check(&info))
      throw IoError("grafx.io.audio_format", path + ": this container cannot hold this encoding");
    SndfilePtr file(sf_open(temporary.c_str(), SFM_WRITE, &info));
    if (!file)
      throw IoError("grafx.io.unwritable", path + ": cannot write it: " + sndfile_reason(nullptr));
    sf_count_t frames = interleaved.size(0);
    if (sf_writef_float(file.get(), interleaved.data_ptr<float>(), frames) != frames)
      throw IoError("grafx.io.unwritable",
                    path + ": cannot write it: " + sndfile_reason(file.get()));
  });
}

at::Tensor resample(const at::Tensor& samples, SampleRate from_rate, SampleRate to_rate,
                    const std::string& what) {
  if (from_rate == to_rate) return samples;
  if (from_rate < 1 || to_rate < 1)
    throw IoError("grafx.io.audio_format", what + ": cannot resample from " +
                                               std::to_string(from_rate) + " Hz to " +
                                               std::to_string(to_rate) + " Hz");
  const double ratio = double(to_rate) / double(from_rate);
  if (ratio > 256 || ratio < 1.0 / 256)  // libsamplerate's range; beyond, sizes explode
    throw IoError("grafx.io.resample",
                  what + ": cannot resample from " + std::to_string(from_rate) + " Hz to " +
                      std::to_string(to_rate) + " Hz: the rates are more than 256 times apart");
  at::Tensor in = samples.detach().to(at::kCPU, at::kFloat).t().contiguous();  // L×C interleaved
  check_input_size(what, uint64_t(double(in.numel()) * ratio) * sizeof(float));
  const int64_t frames_out = int64_t(std::llround(double(in.size(0)) * ratio));
  at::Tensor out           = at::zeros({frames_out + 16, in.size(1)}, at::kFloat);
  SRC_DATA data{};
  data.data_in       = in.data_ptr<float>();
  data.input_frames  = long(in.size(0));
  data.data_out      = out.data_ptr<float>();
  data.output_frames = long(out.size(0));
  data.src_ratio     = ratio;
  int error          = src_simple(&data, SRC_SINC_BEST_QUALITY, int(in.size(1)));
  if (error)
    throw IoError("grafx.io.resample", what + ": resampling from " + std::to_string(from_rate) +
                                           " Hz to " + std::to_string(to_rate) +
                                           " Hz failed: " + src_strerror(error));
  // Always round(L × ratio) frames: libsamplerate's count varies with the channel count (a mono
  // file came out a sample shorter than a stereo one of the same length); a frame it did not
  // generate stays zero.
  return out.narrow(0, 0, frames_out).t().contiguous();
}

}  // namespace grafx
