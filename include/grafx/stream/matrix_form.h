#pragma once
/// The streaming form of a memoryless channel matrix (gains, pans, side gains, sends).

#include <grafx/stream/form.h>

#include <memory>
#include <string>
#include <vector>

namespace grafx {

/// An entry of a channel matrix: offset + scale · 10^(value/20) of the control `control`'s value
/// in dB (a constant `offset` where control < 0): the gains, pans and side gains of the
/// matrix forms.
struct MatrixEntry {
  int64_t control = -1;
  double offset = 0, scale = 1;
};

/// The streaming form of a memoryless channel matrix, y_o = Σ_i m[o][i]·x_i (a mono input is
/// read as dual mono where the matrix has two inputs; a 1×1 matrix is one gain on every
/// channel), whose entries (row-major, n_outputs × n_inputs) are MatrixEntry of the controls'
/// values in dB; changes glide. Where the node automates the raw parameter `raw_name` (a log
/// gain) whose elements the controls are, the values follow its curve instead, and there are no
/// controls.
std::unique_ptr<NodeStream> matrix_stream(int64_t n_inputs, int64_t n_outputs,
                                          std::vector<StreamControl> controls,
                                          std::vector<MatrixEntry> entries,
                                          const StreamSetup& setup, const std::string& raw_name);

}  // namespace grafx
