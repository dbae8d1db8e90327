// The checkpoint format (grafx/fit/checkpoint.h): its versions and their migrations.

#include <grafx/error.h>
#include <grafx/fit/checkpoint.h>
#include <grafx/io/safetensors.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <limits>

namespace grafx {
namespace {

/// Version 2 kept the settings that change the steps under keys of their own, those at their
/// defaults left out (its "settings", where present, were only a record). Takes those keys out
/// of `metadata`.
nlohmann::json settings_of_version_2(std::map<std::string, std::string>& metadata) {
  auto take = [&](const std::string& key, const std::string& absent) {
    auto it           = metadata.find(key);
    std::string value = it == metadata.end() ? absent : it->second;
    if (it != metadata.end()) metadata.erase(it);
    return value;
  };
  nlohmann::json settings = {{"seed", std::stoull(take("seed", "0"))},
                             {"lr", std::stod(take("lr", "0.01"))},
                             {"crops_per_step", std::stoll(take("crops_per_step", "1"))},
                             {"optimizer", take("optimizer", "adamw")},
                             {"max_gradient_norm", std::stod(take("clip", "0"))},
                             {"reset_optimizer_every", std::stoll(take("reset_every", "0"))}};
  // "4 warm-up steps, final 0.1"; before schedules: constant.
  long long warmup = 0;
  double final     = 1;
  std::sscanf(take("lr_schedule", "0 warm-up steps, final 1").c_str(),
              "%lld warm-up steps, final %lf", &warmup, &final);
  settings["warmup_steps"]   = warmup;
  settings["final_lr_ratio"] = final;
  // "20 Hz from 0.5, smoothness 0.01", where the fit automated parameters.
  double rate = 0, start = 0, smoothness = 0;
  if (std::sscanf(take("automation", "").c_str(), "%lf Hz from %lf, smoothness %lf", &rate, &start,
                  &smoothness) == 3)
    settings.update({{"automation_rate", rate},
                     {"automation_start", start},
                     {"automation_smoothness", smoothness}});
  return settings;
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  TensorDict tensors;
  for (const auto& [key, value] : checkpoint.parameters) tensors["parameters/" + key] = value;
  for (const auto& [key, value] : checkpoint.optimizer) tensors["optimizer/" + key] = value;
  std::vector<double> rows;  // one tensor for all, not one per step (12,000 in a long fit)
  rows.reserve(checkpoint.history.size() * 6);
  for (const FitRecord& r : checkpoint.history)
    rows.insert(rows.end(), {double(r.step), r.loss, r.match_loss, r.regularization,
                             r.skipped ? 1.0 : 0.0, r.gradient_norm});
  tensors["history"] = at::tensor(rows, at::kDouble).view({int64_t(checkpoint.history.size()), 6});
  if (checkpoint.curves_live)
    tensors["curves_live"] = at::tensor(std::vector<int64_t>{*checkpoint.curves_live}, at::kLong);
  auto metadata        = checkpoint.identity;
  metadata["format"]   = "grafx.checkpoint";
  metadata["version"]  = std::to_string(kCheckpointVersion);
  metadata["settings"] = checkpoint.settings.dump();
  save_safetensors(path, tensors, metadata, /*overwrite=*/true);
}

Checkpoint read_checkpoint(const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  auto fail            = [&](const std::string& what) {
    throw FitError("grafx.fit.checkpoint", path + ": " + what);
  };
  if (file.metadata["format"] != "grafx.checkpoint") fail("not a grafx checkpoint");
  const std::string version = file.metadata["version"];
  if (version != "1" && version != "2" && version != "3")
    fail("a checkpoint of version " + version + ", from a newer grafx (this one reads 1 to 3)");
  Checkpoint checkpoint;
  try {
    checkpoint.settings = version == "3" ? nlohmann::json::parse(file.metadata["settings"])
                                         : settings_of_version_2(file.metadata);
  } catch (const std::exception&) {  // JSON or numbers that do not parse
    fail("its recorded settings are unreadable");
  }
  for (const char* record_only : {"format", "version", "settings"})
    file.metadata.erase(record_only);
  checkpoint.identity = std::move(file.metadata);
  for (const auto& [key, value] : file.tensors) {
    if (key.rfind("parameters/", 0) == 0) checkpoint.parameters[key.substr(11)] = value;
    if (key.rfind("optimizer/", 0) == 0) checkpoint.optimizer[key.substr(10)] = value;
  }
  auto live = file.tensors.find("curves_live");
  if (live != file.tensors.end()) {
    if (live->second.numel() != 1) fail("holds a malformed curves_live");
    checkpoint.curves_live = live->second.item<int64_t>() != 0;
  }
  auto history = file.tensors.find("history");
  if (history == file.tensors.end() || history->second.dim() != 2 ||
      (history->second.size(1) != 5 && history->second.size(1) != 6))
    fail("lacks the loss history");
  const at::Tensor h = history->second.to(at::kDouble).contiguous();
  const double* row  = h.data_ptr<double>();
  for (int64_t i = 0; i < h.size(0); ++i, row += h.size(1)) {
    FitRecord record{int64_t(row[0]), row[1], row[2], row[3], row[4] != 0};
    // Version 1 kept no gradient norms: unknown, not zero.
    record.gradient_norm = h.size(1) > 5 ? row[5] : std::numeric_limits<double>::quiet_NaN();
    checkpoint.history.push_back(record);
  }
  return checkpoint;
}

}  // namespace grafx
