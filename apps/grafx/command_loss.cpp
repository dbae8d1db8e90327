// grafx loss ESTIMATE.wav TARGET.wav: the paper's mix loss and its terms between two files, read
// as the fit reads them, so that any mix (ours or another tool's) can be scored; --breakdown
// shows where the loss lives (by frequency band and by second).

#include "arguments.h"
#include "commands.h"

#include <grafx/error.h>
#include <grafx/fit/fit_record.h>
#include <grafx/loss/mix_loss.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <optional>
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

/// [{"part": LABEL, "loss": x, "L": x, "R": x, "mid": x, "side": x}, ...]
std::string json_parts(const MixLossParts& parts) {
  std::string text = "[";
  for (size_t k = 0; k < parts.labels.size(); ++k) {
    const at::Tensor channels = parts.channels[int64_t(k)];
    text += std::string(k ? ", " : "") + "{\"part\": \"" + parts.labels[k] +
            "\", \"loss\": " + json_number(parts.loss[int64_t(k)].item<double>());
    const char* names[] = {"L", "R", "mid", "side"};
    for (int64_t c = 0; c < 4; ++c)
      text += std::string(", \"") + names[c] + "\": " + json_number(channels[c].item<double>());
    text += "}";
  }
  return text + "]";
}

/// One line per part: its share of the loss, and its parts of L, R, mid and side.
void print_parts(const MixLossParts& parts, double total, const std::vector<int64_t>& shown) {
  for (int64_t k : shown) {
    const double part         = parts.loss[k].item<double>();
    const at::Tensor channels = parts.channels[k];
    const std::string& label  = parts.labels[size_t(k)];
    const auto characters     = std::count_if(label.begin(), label.end(),  // UTF-8: the dash
                                              [](char c) { return (uint8_t(c) & 0xC0) != 0x80; });
    std::cout << "  " << label << std::string(size_t(std::max<long>(1, 16 - characters)), ' ')
              << std::right << std::fixed << std::setprecision(4) << part << " (" << std::setw(5)
              << std::setprecision(1) << (total > 0 ? 100 * part / total : 0.0) << " %)"
              << std::setprecision(4) << "  L " << channels[0].item<double>() << "  R "
              << channels[1].item<double>() << "  mid " << channels[2].item<double>() << "  side "
              << channels[3].item<double>() << "\n";
  }
}

/// The indices of the `n` largest parts, largest first.
std::vector<int64_t> largest(const MixLossParts& parts, int64_t n) {
  const at::Tensor order = parts.loss.argsort(0, /*descending=*/true);
  std::vector<int64_t> shown;
  for (int64_t i = 0; i < std::min(n, order.size(0)); ++i)
    shown.push_back(order[i].item<int64_t>());
  return shown;
}

}  // namespace

void add_loss_command(CLI::App& app) {
  struct Args {
    std::string estimate, target;
    double skip_seconds    = 0;
    SampleRate sample_rate = MixLossOptions().sample_rate;
    bool strict_rate = false, json = false, breakdown = false;
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
  cmd->add_flag("--breakdown", args->breakdown,
                "Also break the loss down into exact parts by frequency band (octaves) and by "
                "second of the song, each with its parts of L, R, mid and side: where the "
                "estimate differs most");
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
    const MixLoss loss(options);
    std::optional<MixLossBreakdown> breakdown;
    if (args->breakdown) breakdown = loss.breakdown(estimate, target);
    const MixLossTerms terms = breakdown ? breakdown->terms : loss.streamed_terms(estimate, target);
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
                << ", \"seconds\": " << json_number(double(target.size(1)) / args->sample_rate);
      if (breakdown)
        std::cout << ", \"by_band\": " << json_parts(breakdown->bands)
                  << ", \"by_second\": " << json_parts(breakdown->seconds);
      std::cout << "}\n";
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
    if (!breakdown) return;
    const double total = terms.total.item<double>();
    std::cout << "by band (parts that sum to the loss; share; their parts of L, R, mid, side):\n";
    std::vector<int64_t> bands(breakdown->bands.labels.size());
    std::iota(bands.begin(), bands.end(), 0);
    print_parts(breakdown->bands, total, bands);
    const int64_t n_seconds = int64_t(breakdown->seconds.labels.size()), most = 10;
    std::cout << "by second, the " << std::min(most, n_seconds) << " of " << n_seconds
              << " seconds holding the most (--json lists all):\n";
    print_parts(breakdown->seconds, total, largest(breakdown->seconds, most));
  });
}

}  // namespace grafx::cli
