// Fit a small console to a mix made with hidden gains, and read the gains back in dB.
//
//   build/bin/example_fit_gains

#include <grafx/fit/fit.h>
#include <grafx/fit/multitrack.h>
#include <grafx/graph/console.h>
#include <grafx/graph/graph_tensor.h>

#include <ATen/ATen.h>

#include <cmath>
#include <iostream>

using namespace grafx;

int main() {
  const SampleRate rate = 16000;
  ConsoleOptions options;
  options.n_tracks = 4;
  options.chain    = {"gain_pan"};
  Graph console    = build_console(options, registry_node_types()).graph;

  // Drums, bass, chords and lead (mono, on both channels), and the mix hidden gains make of them.
  Multitrack song      = synthesize_multitrack(rate, 4.0);
  at::Tensor tracks    = song.tracks.expand({4, 2, song.tracks.size(2)}).contiguous();
  at::Tensor hidden_db = at::tensor({-3.f, -3.f, 0.f, 0.f, -1.f, -7.f, -6.f, -1.f}).view({4, 2});
  FitOptions fit;
  fit.n_steps           = 150;
  fit.optimizer.lr      = 0.05;
  fit.crop_seconds      = 1.0;
  fit.skip_seconds      = 0.1;
  Processors processors = make_processors(console.types(), {rate});
  Parameters hidden     = {{"gain_pan", {{"log_gain", hidden_db * (std::log(10.f) / 20)}}}};
  at::Tensor mix =
      render(make_render_plan(to_tensor(console)), processors, hidden, tracks).outputs[0];

  Fitter fitter(console, tracks, mix, rate, fit);
  fitter.run();
  at::Tensor found_db =
      fitter.parameters().at("gain_pan").at("log_gain").detach() * (20 / std::log(10.f));
  std::cout << "hidden gains (dB, left/right of drums, bass, chords, lead):\n"
            << hidden_db << "\nfitted:\n"
            << found_db << "\nwhole-song loss: " << fitter.evaluate().total.item<double>() << "\n";
  return (found_db - hidden_db).abs().max().item<double>() < 0.5 ? 0 : 1;
}
