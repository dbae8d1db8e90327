#pragma once
/// A fit's checkpoint as a file format of its own: what Fitter::save_checkpoint writes and
/// Fitter::load_checkpoint continues from (a safetensors file, "format": "grafx.checkpoint").
/// Its versions, each still read:
///   1  the loss history without gradient norms (5 columns; read as NaN: unknown, not zero)
///   2  gradient norms; the settings that change the steps under metadata keys of their own
///   3  those settings as one JSON record, "settings" (fit_settings.h)
/// Reading turns every version into the current form; what a fit must agree on to continue is
/// the Fitter's to judge.

#include <grafx/fit/fit.h>
#include <grafx/tensors.h>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grafx {

inline constexpr int64_t kCheckpointVersion = 3;

struct Checkpoint {
  TensorDict parameters;            ///< raw parameters, keyed "TYPE.NAME"
  TensorDict optimizer;             ///< the optimiser's state (its own keys)
  std::vector<FitRecord> history;   ///< every step done
  std::optional<bool> curves_live;  ///< where automation was asked for: curves updated yet
  /// What the fit was made for (Fitter::identity: graph, data, sample rate, crops, ...).
  std::map<std::string, std::string> identity;
  nlohmann::json settings;  ///< fit_settings_json of the fit's options
};

/// Writes `checkpoint` at `path`, atomically, replacing a file there.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

/// Reads a checkpoint of any version. Throws FitError [grafx.fit.checkpoint] (the path first)
/// for a file that is not one, one of a newer version, or one whose settings or loss history
/// are unreadable; IoError for a file that is not safetensors.
Checkpoint read_checkpoint(const std::string& path);

}  // namespace grafx
