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
