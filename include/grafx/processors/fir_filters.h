#pragma once
/// FIR filters with learnable responses.
///
/// `fir_eq` (letter f): GRAFX's NewZeroPhaseFIREqualizer with its filterbank: a few band gains
/// (40 by default, on the Bark scale from 40 Hz to Nyquist) interpolated to 1024 frequencies
/// (power gains weighted by dsp::band_weights), then the zero-phase FIR of grafx/dsp/fir.h
/// (2047 taps), convolved with every channel:
///
///   |H(f)|² = Σ_j w_j(f)·e^{2·raw_j},  h = window · roll(irfft(|H|), 1023)
///
/// Parameters: the tables in docs/processors/equalizers.md (fir_eq) and filters.md (fir_filter),
/// generated from parameter_specs() (also `grafx processors TYPE`).
///
/// Options (FirEqOptions) choose the channels (mono, stereo, mid/side), the number of bands,
/// the scale (linear, log, mel HTK or Slaney, Bark Traunmüller, Schroeder or Wang), the lowest
/// band's frequency and the window (Hann, Hamming, Blackman, rectangular); a type with other
/// options is one `register_processor` call (CONTRIBUTING.md).
///
/// `fir_filter` (letter F): GRAFX's FIRFilter, a learnable causal FIR of 1023 taps scaled to
/// unit energy: h = t/‖t‖ with t = tanh(raw + δ), δ a unit impulse at tap 0, so raw 0 is the
/// identity (GRAFX starts from noise; its constructor does not run).
///
/// Parameters: see above.

#include <grafx/dsp/fir.h>
#include <grafx/processors/descriptor.h>
#include <grafx/processors/eq.h>
#include <grafx/processors/linear_processor.h>

namespace grafx {

ProcessorDescriptor fir_eq_descriptor();      ///< letter f
ProcessorDescriptor fir_filter_descriptor();  ///< letter F

struct FirEqOptions {
  std::string type_name     = "fir_eq";  ///< the registry name of a type with these options
  EqChannels channels       = EqChannels::kMono;
  int64_t n_bands           = 40;
  dsp::FrequencyScale scale = dsp::FrequencyScale::kBarkTraunmuller;
  double lowest_band_hz     = 40.0;
  dsp::Window window        = dsp::Window::kHann;
};

class FirEqualizer : public LinearProcessor {
 public:
  static constexpr int64_t kBins = 1024;

  FirEqualizer(const ProcessorConfig& config, FirEqOptions options = {});
  std::string name() const override { return options_.type_name; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;

 private:
  SampleRate sample_rate_;
  FirEqOptions options_;
  ConstantCache constants_;
};

class FirFilter : public LinearProcessor {
 public:
  static constexpr int64_t kTaps = 1023;

  explicit FirFilter(const ProcessorConfig&) {}
  std::string name() const override { return "fir_filter"; }
  std::vector<ParameterSpec> parameter_specs() const override;
  ProcessorOutput forward(const std::vector<at::Tensor>& inputs,
                          const TensorDict& parameters) const override;
  TemporalSupport temporal_support(const TensorDict& parameters) const override;
};

}  // namespace grafx
