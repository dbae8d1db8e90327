// Bindings of audio files (libsndfile, libsamplerate), as the CLI reads and writes them.

#include "bindings.h"

#include <grafx/io/audio.h>

namespace grafx::python {

void bind_io(py::module_& m) {
  m.def(
      "load_audio",
      [](const std::string& path) {
        Audio audio = read_audio(path);
        return py::make_tuple(audio.samples, audio.sample_rate);
      },
      py::arg("path"));
  m.def(
      "save_audio",
      [](const std::string& path, const at::Tensor& samples, SampleRate sample_rate,
         bool overwrite) { write_audio(path, samples, sample_rate, overwrite); },
      py::arg("path"), py::arg("samples"), py::arg("sample_rate"), py::arg("overwrite"));
  m.def(
      "resample",
      [](const at::Tensor& samples, SampleRate from_rate, SampleRate to_rate) {
        py::gil_scoped_release released;
        return resample(samples, from_rate, to_rate);
      },
      py::arg("samples"), py::arg("from_rate"), py::arg("to_rate"));
}

}  // namespace grafx::python
