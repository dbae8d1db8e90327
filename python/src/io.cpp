// Bindings of audio files (libsndfile, libsamplerate), as the CLI reads and writes them, and of
// the SVG line plots of reports.

#include "bindings.h"

#include <grafx/error.h>
#include <grafx/io/audio.h>
#include <grafx/io/plot.h>

namespace grafx::python {

void bind_io(py::module_& m) {
  m.def(
      "load_audio",
      [](const std::string& path) {
        Audio audio = read_audio(path);
        return py::make_tuple(audio.samples, audio.sample_rate);
      },
      py::arg("path"),
      "Reads an audio file (WAV, FLAC, ... through libsndfile); returns (samples, sample_rate): a "
      "float32 C×L tensor and the rate in Hz. IoError if it cannot be read.");
  m.def(
      "save_audio",
      [](const std::string& path, const at::Tensor& samples, SampleRate sample_rate,
         bool overwrite) {
        // A file of NaN or infinite samples is one that load_audio and every command refuse.
        if (samples.defined() && at::isFloatingType(samples.scalar_type()) &&
            !at::isfinite(samples).all().item<bool>()) {
          const at::Tensor flat = samples.detach().reshape({-1});
          const int64_t first = at::logical_not(at::isfinite(flat)).nonzero()[0][0].item<int64_t>();
          const int64_t length = samples.dim() > 0 ? samples.size(-1) : 1;
          throw IoError("grafx.io.non_finite", path + ": expected finite samples, but got " +
                                                   std::to_string(flat[first].item<double>()) +
                                                   " at channel " + std::to_string(first / length) +
                                                   ", sample " + std::to_string(first % length) +
                                                   " (nothing is written)");
        }
        write_audio(path, samples, sample_rate, overwrite);
      },
      py::arg("path"), py::arg("samples"), py::arg("sample_rate"), py::arg("overwrite"));
  m.def(
      "resample",
      [](const at::Tensor& samples, SampleRate from_rate, SampleRate to_rate) {
        py::gil_scoped_release released;
        return resample(samples, from_rate, to_rate);
      },
      py::arg("samples"), py::arg("from_rate"), py::arg("to_rate"),
      "`samples` (C×L) at `from_rate` resampled to `to_rate` (both in Hz) with libsamplerate's "
      "best sinc converter: exactly round(L × to_rate / from_rate) samples.");
  m.def(
      "write_plot",
      [](const std::string& path,
         const std::vector<std::tuple<std::string, std::vector<double>, std::vector<double>>>&
             series,
         const std::string& title, const std::string& x_label, const std::string& y_label,
         bool log_x, bool overwrite) {
        std::vector<PlotSeries> lines;
        for (const auto& [label, x, y] : series) lines.push_back({label, x, y});
        PlotOptions options;
        options.title   = title;
        options.x_label = x_label;
        options.y_label = y_label;
        options.log_x   = log_x;
        write_plot(path, lines, options, overwrite);
      },
      py::arg("path"), py::arg("series"), py::arg("title") = "", py::arg("x_label") = "",
      py::arg("y_label") = "", py::arg("log_x") = false, py::arg("overwrite") = false);
}

}  // namespace grafx::python
