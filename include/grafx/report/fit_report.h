#pragma once
/// The outputs of a fit, written into one folder:
///
///   mix.wav                  the fitted mix of the whole song (float WAV)
///   console.json, .svg       the console and its picture
///   parameters.safetensors   the fitted raw parameters (Python: safetensors.torch.load_file)
///   parameters.json          every node's parameters in physical units
///   loss.csv, loss.svg       the loss of every step, and its curve
///   report.html              one self-contained page: summary, loss curve, target and fitted
///                            spectrograms, the console's picture, the parameters

#include <grafx/fit/fit.h>

#include <string>
#include <vector>

namespace grafx {

struct FitSummary {
  std::string title;  ///< e.g. "grafx fit: song.wav"
  std::vector<std::string> track_names;
  MixLossTerms before, after;  ///< whole-song loss before and after fitting
  at::Tensor fitted;   ///< the fitted mix (C×L); rendered by write_fit_outputs if undefined
  double seconds = 0;  ///< time spent fitting
};

/// Writes every file above into `folder` (which must exist), each atomically. Existing files
/// are replaced only when `overwrite`. Throws FitError [grafx.fit.diverged], writing nothing,
/// when the fitted mix holds non-finite samples.
void write_fit_outputs(const Fitter& fitter, const FitSummary& summary, const std::string& folder,
                       bool overwrite);

/// The files write_fit_outputs writes, relative to the folder.
const std::vector<std::string>& fit_output_files();

}  // namespace grafx
