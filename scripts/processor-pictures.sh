#!/usr/bin/env bash
# Regenerates the pictures of docs/processors/*.md with `grafx processors NAME --response`.
set -euo pipefail
cd "$(dirname "$0")/.."
grafx="${GRAFX_BUILD_DIR:-build}/bin/grafx"
out=docs/images/processors
mkdir -p "$out"
picture() {  # name, file, parameters...
  local name=$1 file=$2
  shift 2
  "$grafx" processors "$name" --response "$out/$file" --sample-rate 30000 --force "$@"
}
picture eq eq.svg --param log_magnitude=0.7,0,0,0,0.35,0,0,0,-0.7
picture eq_midside eq_midside.svg --param "log_magnitude=0.7,0,-0.7;-1,0,0,0,0,0,0,0.5"
picture compressor compressor.svg
picture compressor compressor_4to1.svg --param log_ratio=1.0986 --param log_threshold=2
picture noise_gate noise_gate.svg
picture reverb reverb.svg
picture reverb reverb_lows_ring.svg --param "delta_log_magnitude=-1.5,2"
picture delay delay.svg
# Echoes 20 ms (left) and 60 ms (right) after each 100 ms segment start, 1.3 dB quieter per
# segment: one row per tap (0–19 left, 20–39 right), poles of radius 0.999 (raw 3.8) at angles
# −2π·600/3000 and −2π·1800/3000, colour gains −0.15·m (natural log).
delay_rows=$(awk 'BEGIN { for (t = 0; t < 40; t++) printf "%s%s", (t ? ";" : ""), (t < 20 ? "1.174,-3.614" : "-3.074,2.234") }')
gain_rows=$(awk 'BEGIN { for (t = 0; t < 40; t++) printf "%s%.2f", (t ? ";" : ""), -0.15 * (t % 20) }')
picture delay delay_echoes.svg --param "delay_z=$delay_rows" --param "log_fir_magnitude=$gain_rows"
picture gain_pan gain_pan.svg --param log_gain=0.5,-0.5
picture stereo_imager stereo_imager.svg --param log_gain=-1
picture send send.svg --param gain_db=-12
picture mono_to_stereo mono_to_stereo.svg
picture stereo_to_mid_side stereo_to_mid_side.svg
picture mid_side_to_stereo mid_side_to_stereo.svg
# Filters and equalizers (docs/processors/filters.md, equalizers.md), set in physical units.
picture lowpass lowpass.svg --param cutoff_hz=1000 --param q=2
picture highpass highpass.svg --param cutoff_hz=200
picture bandpass bandpass.svg --param centre_hz=1000 --param q=2
picture bandreject bandreject.svg --param centre_hz=1000 --param q=2
picture peaking peaking.svg --param centre_hz=1000 --param q=1 --param gain_db=6
picture low_shelf low_shelf.svg --param cutoff_hz=200 --param gain_db=-6
picture high_shelf high_shelf.svg --param cutoff_hz=5000 --param gain_db=4
picture biquad biquad.svg --param b=0.2,-0.5,0.3 --param z_a1=-0.6 --param z_a2=0.4
picture pole_zero pole_zero.svg --param pole=0.6,0.7 --param zero=-0.3,0.9
picture state_variable_filter state_variable_filter.svg --param cutoff_hz=1500 --param q=3 \
  --param highpass_mix=0.3 --param bandpass_mix=-0.7 --param lowpass_mix=1.1
picture parametric_eq parametric_eq.svg --param gain_db=3,-4,2,5,-6,1,-2,4,-3,2 \
  --param q=0.7,1,2,0.5,1.5,3,1,0.8,2,0.7
picture parametric_eq_midside parametric_eq_midside.svg \
  --param "gain_db=3,0,0,0,0,0,0,0,0,-3;-6,0,0,0,0,4,0,0,0,2"
picture graphic_eq graphic_eq.svg --param gain_db=6,-3,0,4,-6,2,0,0,-4,3
picture graphic_eq_third_octave graphic_eq_third_octave.svg --param gain_db=-6,0,6,0,-6,0,6
picture fir_eq fir_eq.svg --param gain_db=4,0,-3,0,6,0,-6
picture fir_filter fir_filter.svg --param fir=0.5,0.2,0,-0.2,0
picture crossover crossover.svg --param crossover_hz=800
picture crossover_3band crossover_3band.svg --param crossover_hz=200,3000
# Distortions (docs/processors/distortion.md).
picture tanh_distortion tanh_distortion.svg --param drive_db=12
picture piecewise_tanh_distortion piecewise_tanh_distortion.svg --param drive_db=6 \
  --param hardness=3,0.5 --param threshold=0.4,0.7
picture power_distortion power_distortion.svg --param weight=0,0.9,0,-0.2,0,0,0,0,0,0
picture chebyshev_distortion chebyshev_distortion.svg --param weight=0,0.8,0.1,0.05,0,0,0,0,0,0
