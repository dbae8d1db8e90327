#pragma once
/// The outputs of a fit, written into one folder:
///
///   mix.wav                  the fitted mix of the whole song (float WAV)
///   console.json, .svg       the console and its picture
///   parameters.safetensors   the fitted raw parameters (Python: safetensors.torch.load_file)
///   parameters.json          every node's parameters in physical units
///   loss.csv, loss.svg       the loss of every step, and its curve
///   report.html              one page that opens from the folder (see below)
///
/// The report shows what a mixing engineer looks for: players of the target mix, the fitted mix
/// and each track (HTML5 audio linked relative to the folder, never embedded); spectrograms of
/// the target and the fitted mix on one scale and of their difference, with time and frequency
/// axes and dB colour bars; per track (each strip of the console: the nodes named "<track>" or
/// "<track>.<anything>") the filters' curves as heard (the descriptors' magnitude `response`
/// pictures, wet amount included) and a table of every setting in physical units (the specs'
/// physical names and units; vectors of more than four values summarised by median and range);
/// where the loss lives (by band, by second and, given FitSummary::by_track, by track);
/// the console's picture with a legend of its letters (from the registry's descriptors), the
/// loss curve, the initial console and the files. When the summary holds `reference` settings
/// (the demo's hidden console), each fitted setting stands beside the reference one with the
/// error (fitted − reference; root mean square for vectors), and the curves are drawn with the
/// reference's dashed.
///
///   FitSummary summary;
///   summary.title       = "grafx fit: song.wav";
///   summary.target_file = "song.wav";              // played beside mix.wav
///   write_fit_outputs(fitter, summary, "fit", /*overwrite=*/false);

#include <grafx/fit/fit.h>
#include <grafx/fit/track_losses.h>

#include <string>
#include <vector>

namespace grafx {

struct FitSummary {
  std::string title;  ///< e.g. "grafx fit: song.wav"
  std::vector<std::string> track_names;
  MixLossTerms before;     ///< whole-song loss before fitting
  MixLossBreakdown after;  ///< and after, with its parts (Fitter::evaluate_parts of `fitted`)
  /// What each track's own processing does (track_losses of the fitter); empty: not shown.
  std::vector<TrackLoss> by_track;
  at::Tensor fitted;   ///< the fitted mix (C×L); rendered by write_fit_outputs if undefined
  double seconds = 0;  ///< time spent fitting
  /// Audio files the page plays beside the fitted mix.wav: the target mix and the tracks (in
  /// track order), as paths absolute or relative to the working directory; the page links them
  /// relative to the folder (so it finds them while both stay where they are). Empty: no player.
  std::string target_file;
  std::string target_label = "target mix";
  std::vector<std::string> track_files;
  /// Settings known to be true, of the same graph (the demo's hidden console), shown beside the
  /// fitted ones with the error; empty: none. Checked like the fitted parameters (RenderError).
  Parameters reference;
  std::string reference_label = "reference";  ///< e.g. "hidden console"
};

/// Writes every file above into `folder` (which must exist), each atomically. Existing files
/// are replaced only when `overwrite`. Throws FitError [grafx.fit.diverged], writing nothing,
/// when the fitted mix holds non-finite samples.
void write_fit_outputs(const Fitter& fitter, const FitSummary& summary, const std::string& folder,
                       bool overwrite);

/// The files write_fit_outputs writes, relative to the folder.
const std::vector<std::string>& fit_output_files();

}  // namespace grafx
