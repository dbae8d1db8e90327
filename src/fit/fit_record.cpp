#include <grafx/error.h>
#include <grafx/files.h>
#include <grafx/fit/fit_record.h>
#include <grafx/fit/fit_settings.h>
#include <grafx/hash.h>
#include <grafx/io/audio.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace grafx {

namespace fs = std::filesystem;

std::vector<std::string> content_hashes(const FitInputs& inputs) {
  std::vector<std::string> paths = inputs.tracks, hashes;
  paths.push_back(inputs.mix);
  for (const auto& path : paths) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw IoError("grafx.io.unreadable", path + ": cannot be read");
    uint64_t hash = kFnv1aStart;
    std::vector<char> buffer(1 << 20);
    while (file.read(buffer.data(), std::streamsize(buffer.size())) || file.gcount() > 0) {
      hash = fnv1a(buffer.data(), size_t(file.gcount()), hash);
      if (!file) break;
    }
    std::ostringstream text;
    text << std::hex << std::setw(16) << std::setfill('0') << hash;
    hashes.push_back(text.str());
  }
  return hashes;
}

void write_fit_record(const std::string& folder, const FitInputs& inputs, const FitOptions& options,
                      bool overwrite) {
  nlohmann::json j;
  j["format"]  = "grafx.fit";
  j["version"] = 2;  // 2: the settings as fit_settings_json writes them
  for (const auto& path : inputs.tracks) j["tracks"].push_back(fs::absolute(path).string());
  j["mix"]         = fs::absolute(inputs.mix).string();
  j["track_names"] = inputs.track_names;
  j["sample_rate"] = inputs.sample_rate;
  j["strict_rate"] = inputs.strict_rate;
  j["settings"]    = fit_settings_json(options);
  if (!inputs.hashes.empty()) j["hashes"] = inputs.hashes;
  write_text_file(folder + "/" + kFitRecordFile, j.dump(2) + "\n", overwrite);
}

FitFolderRecord read_fit_record(const std::string& folder) {
  const std::string path = folder + "/" + kFitRecordFile;
  auto fail              = [&](const std::string& what) {
    throw IoError("grafx.io.fit_folder", path + ": " + what);
  };
  if (!fs::exists(path))
    fail("not found: " + folder +
         " is not the folder of a fit (grafx fit or grafx demo writes it)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("not valid JSON: ") + e.what());
  }
  FitInputs inputs;
  FitOptions options;
  try {
    if (j.at("format") != "grafx.fit") fail("not a grafx fit record");
    inputs.tracks      = j.at("tracks").get<std::vector<std::string>>();
    inputs.mix         = j.at("mix").get<std::string>();
    inputs.track_names = j.at("track_names").get<std::vector<std::string>>();
    inputs.sample_rate = j.at("sample_rate").get<SampleRate>();
    inputs.strict_rate = j.at("strict_rate").get<bool>();
    inputs.hashes      = j.value("hashes", std::vector<std::string>());
    if (!inputs.hashes.empty() && inputs.hashes.size() != inputs.tracks.size() + 1)
      fail("expected " + std::to_string(inputs.tracks.size() + 1) +
           " hashes (the tracks' and the mix's), but got " + std::to_string(inputs.hashes.size()));
    if (j.contains("settings")) {
      try {
        options = fit_options_from_json(j.at("settings"), options);
      } catch (const FitError& e) {
        fail("settings: " + e.message());
      }
    } else {  // version 1: these settings at the top level
      options.crop_seconds            = j.at("crop_seconds").get<double>();
      options.skip_seconds            = j.at("skip_seconds").get<double>();
      options.optimizer.lr            = j.at("lr").get<double>();
      options.lr_schedule.final_ratio = j.value("final_lr_ratio", 1.0);
      options.seed                    = j.at("seed").get<uint64_t>();
    }
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("missing or wrong field: ") + e.what());
  }
  return {inputs, options};
}

void check_fit_audio_unchanged(const FitInputs& inputs, const std::string& fit) {
  if (inputs.hashes.empty()) return;  // a record from before hashes were kept
  const std::vector<std::string> now = content_hashes(inputs);
  std::vector<std::string> paths     = inputs.tracks;
  paths.push_back(inputs.mix);
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i] == inputs.hashes[i]) continue;
    std::string what = "changed since the fit";
    auto other       = std::find(inputs.hashes.begin(), inputs.hashes.end(), now[i]);
    if (other != inputs.hashes.end())
      what = "now holds what " + paths[size_t(other - inputs.hashes.begin())] +
             " held when fitted (files swapped or reordered?)";
    throw IoError("grafx.io.fit_folder",
                  fit + ": " + paths[i] + " " + what + "; restore it, or fit again");
  }
}

at::Tensor read_stereo(const std::string& path, SampleRate sample_rate, bool strict) {
  Audio audio = read_audio(path);
  if (audio.samples.size(0) > 2)
    throw IoError("grafx.io.channels", path + ": " + std::to_string(audio.samples.size(0)) +
                                           " channels; expected mono or stereo");
  if (audio.sample_rate != sample_rate) {
    if (strict)
      throw IoError("grafx.io.sample_rate", path + ": " + std::to_string(audio.sample_rate) +
                                                " Hz, but the fit runs at " +
                                                std::to_string(sample_rate) +
                                                " Hz (without --strict-rate it is resampled)");
    audio.samples = resample(audio.samples, audio.sample_rate, sample_rate, path);
  }
  return audio.samples.expand({2, audio.samples.size(1)}).contiguous();
}

std::vector<std::string> trim_to_shortest(
    const std::vector<std::pair<std::string, at::Tensor*>>& audio, SampleRate sample_rate) {
  int64_t length = -1;
  std::string shortest;
  for (const auto& [path, samples] : audio)
    if (length < 0 || samples->size(1) < length) length = samples->size(1), shortest = path;
  std::vector<std::string> notes;
  for (const auto& [path, samples] : audio)
    if (samples->size(1) != length) {
      const int64_t extra = samples->size(1) - length;
      std::ostringstream note;
      note << path << " is ";
      if (extra < sample_rate / 100)  // less than 10 ms: in samples, not "0.00 s"
        note << extra << " sample" << (extra == 1 ? "" : "s");
      else
        note << std::fixed << std::setprecision(2) << double(extra) / double(sample_rate) << " s";
      note << " longer than " << shortest << "; its end is left out";
      notes.push_back(note.str());
      *samples = samples->narrow(1, 0, length);
    }
  return notes;
}

FitAudio load_fit_audio(const FitInputs& inputs) {
  std::vector<at::Tensor> tracks;
  for (const auto& path : inputs.tracks)
    tracks.push_back(read_stereo(path, inputs.sample_rate, inputs.strict_rate));
  at::Tensor mix = read_stereo(inputs.mix, inputs.sample_rate, inputs.strict_rate);
  std::vector<std::pair<std::string, at::Tensor*>> all;
  for (size_t i = 0; i < tracks.size(); ++i) all.emplace_back(inputs.tracks[i], &tracks[i]);
  all.emplace_back(inputs.mix, &mix);
  std::vector<std::string> notes = trim_to_shortest(all, inputs.sample_rate);
  return {at::stack(tracks), mix, notes};
}

}  // namespace grafx
