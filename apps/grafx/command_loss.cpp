// grafx loss ESTIMATE.wav TARGET.wav: the paper's mix loss and its terms between two files, read
// as the fit reads them, so that any mix (ours or another tool's) can be scored.

#include "arguments.h"
#include "commands.h"

#include <grafx/error.h>
#include <grafx/fit/fit_record.h>
#include <grafx/loss/mix_loss.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace grafx::cli {
namespace {

std::string json_number(double value) {
  std::ostringstream s;
  s << std::setprecision(10) << value;
  return s.str();
}

/// [[L, R, M, S] per resolution] as JSON.
std::string json_rows(const at::Tensor& rows) {
  std::string text = "[";
  for (int64_t r = 0; r < rows.size(0); ++r) {
    text += r ? ", [" : "[";
    for (int64_t c = 0; c < rows.size(1); ++c)
      text += (c ? ", " : "") + json_number(rows[r][c].item<double>());
    text += "]";
  }
  return text + "]";
}

}  // namespace

void add_loss_command(CLI::App& app) {
  struct Args {
    std::string estimate, target;
    double skip_seconds    = 0;
    SampleRate sample_rate = MixLossOptions().sample_rate;
    bool strict_rate = false, json = false;
  };
  auto args     = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "loss", "The mix loss (the pruning paper's) between an estimate and a target mix");
  cmd->add_option("estimate", args->estimate, "The mix to score (audio file)")->required();
  cmd->add_option("target", args->target, "The reference mix (audio file)")->required();
  cmd->add_option("--skip", args->skip_seconds, "Seconds at the start left out of the loss")
      ->capture_default_str()
      ->check(finite_number(0, /*inclusive=*/true));
  cmd->add_option("--sample-rate", args->sample_rate, "Rate the loss runs at (Hz), as the fit's")
      ->capture_default_str()
      ->check(CLI::Range(8000, 192000));
  cmd->add_flag("--strict-rate", args->strict_rate,
                "Refuse audio at another sample rate instead of resampling it");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->callback([args] {
    at::Tensor estimate = read_stereo(args->estimate, args->sample_rate, args->strict_rate);
    at::Tensor target   = read_stereo(args->target, args->sample_rate, args->strict_rate);
    print_notes(trim_to_shortest({{args->estimate, &estimate}, {args->target, &target}},
                                 args->sample_rate));
    MixLossOptions options;
    options.sample_rate = args->sample_rate;
    // In double first, bounded: a huge skip must not overflow the count (it read as negative).
    options.skip_samples =
        int64_t(std::llround(std::min(args->skip_seconds * double(args->sample_rate), 9e18)));
    c10::NoGradGuard no_grad;
    // In chunks, as the fit's whole-song loss: memory stays flat with the song's length.
    const MixLossTerms terms         = MixLoss(options).streamed_terms(estimate, target);
    const std::vector<int64_t>& ffts = options.fft_sizes;
    // Finite audio can still overflow float32 spectra (samples near 1e19 and above): a NaN or
    // infinite score is no score, and "nan" is not JSON.
    for (const at::Tensor& term : {terms.total, terms.spectral_convergence, terms.log_magnitude})
      if (!at::isfinite(term).all().item<bool>())
        throw LossError("grafx.loss.non_finite",
                        args->estimate + " against " + args->target +
                            ": expected a finite loss, but got " +
                            json_number(terms.total.item<double>()) +
                            " (samples too large for float32 spectra? scale both files down)");
    if (args->json) {
      std::string sizes;
      for (size_t r = 0; r < ffts.size(); ++r) sizes += (r ? ", " : "") + std::to_string(ffts[r]);
      std::cout << "{\"loss\": " << json_number(terms.total.item<double>())
                << ", \"left_right\": " << json_number(terms.lr.item<double>())
                << ", \"mid\": " << json_number(terms.mid.item<double>())
                << ", \"side\": " << json_number(terms.side.item<double>())
                << ", \"spectral_difference_db\": " << json_number(spectral_difference_db(terms))
                << ", \"fft_sizes\": [" << sizes << "], \"channels\": [\"L\", \"R\", \"M\", \"S\"]"
                << ", \"spectral_convergence\": " << json_rows(terms.spectral_convergence)
                << ", \"log_magnitude\": " << json_rows(terms.log_magnitude)
                << ", \"sample_rate\": " << args->sample_rate
                << ", \"skip_seconds\": " << json_number(args->skip_seconds)
                << ", \"seconds\": " << json_number(double(target.size(1)) / args->sample_rate)
                << "}\n";
      return;
    }
    std::cout << std::fixed << std::setprecision(4) << "loss " << terms.total.item<double>()
              << " = 0.5 L/R " << terms.lr.item<double>() << " + 0.25 mid "
              << terms.mid.item<double>() << " + 0.25 side " << terms.side.item<double>()
              << " (spectral difference " << std::setprecision(1) << spectral_difference_db(terms)
              << " dB; " << std::setprecision(2) << double(target.size(1)) / args->sample_rate
              << " s at " << args->sample_rate << " Hz)\n"
              << "per resolution: spectral convergence + log magnitude, of L, R, mid, side\n";
    const char* names[] = {"L", "R", "mid", "side"};
    for (size_t r = 0; r < ffts.size(); ++r) {
      std::cout << "  FFT " << std::setw(4) << ffts[r] << ":";
      for (int64_t c = 0; c < 4; ++c)
        std::cout << "  " << names[c] << " " << std::setprecision(3)
                  << terms.spectral_convergence[int64_t(r)][c].item<double>() << " + "
                  << terms.log_magnitude[int64_t(r)][c].item<double>();
      std::cout << "\n";
    }
  });
}

}  // namespace grafx::cli
