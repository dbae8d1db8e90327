#pragma once
// The recursions' CUDA kernels (private to dsp): exact and parallel along time, one block per
// row, its threads each running one chunk of the row (dsp/chunked_recursions.h gives the
// algorithm; docs/dsp.md why it is exact). Plain C++ declarations, so that recursion.cpp can
// call them without CUDA headers: pointers are device pointers to contiguous row-major rows
// [rows, length] (per-row values [rows]), `stream` a cudaStream_t. Every call only enqueues
// kernels on `stream` (no synchronisation, no allocation, no host reads: capturable in a CUDA
// graph) and throws std::runtime_error with CUDA's message when a launch fails. Instantiated for
// float and double.

#include <cstdint>

namespace grafx::dsp::cuda {

/// Chunks per row (threads per block) of every kernel here.
constexpr int kChunksPerRow = 256;

/// y[n] = ballistics_step(y[n−1], x[n], 1 − α↑, 1 − α↓), y[−1] = initial, by Newton's method on
/// the chunks' start states; `iterations` (one int per row) receives the passes each row took
/// (1 … kChunksPerRow − 1).
template <typename T>
void ballistics_forward(const T* x, const T* alpha_rise, const T* alpha_fall, const T* initial,
                        T* y, int* iterations, int64_t rows, int64_t length, void* stream);

/// The adjoint of ballistics given its output y and ∂loss/∂y, the branches (x[n] > y[n−1])
/// taken as constants: ∂loss/∂x [rows, length] and ∂loss/∂α↑, ∂loss/∂α↓, ∂loss/∂initial [rows].
template <typename T>
void ballistics_backward(const T* x, const T* y, const T* alpha_rise, const T* alpha_fall,
                         const T* initial, const T* grad_y, T* grad_x, T* grad_alpha_rise,
                         T* grad_alpha_fall, T* grad_initial, int64_t rows, int64_t length,
                         void* stream);

/// y[n] = a[n]·y[n−1] + x[n], y[−1] = initial (`reverse`: y[n] = a[n]·y[n+1] + x[n], y[L] =
/// initial), `a` one value per row or (a_per_sample) per sample, accumulated in double.
template <typename T>
void linear_recurrence(const T* x, const T* a, bool a_per_sample, const T* initial, T* y,
                       int64_t rows, int64_t length, bool reverse, void* stream);

/// y[n] = x[n] + c1[n]·y[n−1] + c2[n]·y[n−2] from a zero state (`reverse`: y[n+1], y[n+2], from
/// n = L − 1 down), c1 and c2 one value per row or (per_sample) per sample; in double.
void two_pole(const double* x, const double* c1, const double* c2, bool per_sample, double* y,
              int64_t rows, int64_t length, bool reverse, void* stream);

}  // namespace grafx::dsp::cuda
