// The recursions' CUDA kernels (src/dsp/cuda/recursion_kernels.h) on a GPU, without LibTorch:
// ballistics forward and backward and the linear recurrence against plain sequential loops on
// the host, in float and double, then the time of ballistics forward + backward on 1024 rows
// of 2^18 float samples. Exits non-zero on any failure.
//
//   nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -Iinclude -Isrc \
//     bench/recursion_kernels_check.cu src/dsp/cuda/recursion_kernels.cu -o /tmp/rk && /tmp/rk

#include "dsp/cuda/recursion_kernels.h"

#include <grafx/dsp/dynamics_steps.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

namespace gpu = grafx::dsp::cuda;

#define CHECK_CUDA(call)                                                 \
  do {                                                                   \
    const cudaError_t error_ = (call);                                   \
    if (error_ != cudaSuccess) {                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(error_));                          \
      std::exit(2);                                                      \
    }                                                                    \
  } while (0)

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

template <typename T>
struct DeviceArray {
  T* data     = nullptr;
  size_t size = 0;
  explicit DeviceArray(size_t n) : size(n) {
    CHECK_CUDA(cudaMalloc(&data, std::max<size_t>(n, 1) * sizeof(T)));
  }
  DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() { cudaFree(data); }
  DeviceArray(const DeviceArray&)            = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload(const std::vector<T>& host) {
    CHECK_CUDA(cudaMemcpy(data, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(size);
    CHECK_CUDA(cudaMemcpy(host.data(), data, size * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
};

// ---- test rows ------------------------------------------------------------------------------

/// Row r of a batch: levels of some kind, and settings.
struct Rows {
  int64_t rows, length;
  std::vector<double> x, rise, fall, initial;
};

Rows make_rows(int64_t rows, int64_t length, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  const double coefficients[] = {0.3, 0.9, 0.99, 0.999, 0.9999, 0.99999};
  Rows out{rows, length, std::vector<double>(rows * length), {}, {}, {}};
  for (int64_t r = 0; r < rows; ++r) {
    double* x       = out.x.data() + r * length;
    const int kind  = int(r % 8);
    const double f0 = 3 + 10 * uniform(random);
    for (int64_t n = 0; n < length; ++n) {
      const double time     = double(n) / 30000,
                   envelope = std::pow(std::abs(std::sin(time * f0)), 3) + 0.05;
      switch (kind) {
        case 0:
          x[n] = std::abs(normal(random)) * envelope;
          break;  // bursts
        case 1:
          x[n] = 0.3;
          break;  // constant: ties
        case 2:
          x[n] = std::exp(-time * 3);
          break;  // only falling
        case 3:
          x[n] = normal(random);
          break;  // signed noise
        case 4:
          x[n] = std::log(std::abs(normal(random)) * envelope + 1e-5);
          break;  // log levels
        case 5:
          x[n] = double((n / 5000) % 3) * 0.25;
          break;  // steps
        case 6:
          x[n] = std::round(std::abs(normal(random)) * envelope * 4) / 4;
          break;  // quantised
        default:
          x[n] = n < length / 2 ? std::log(1e-5) : std::log(0.3);
          break;  // silence, tone
      }
    }
    double rise = coefficients[random() % 6], fall = coefficients[random() % 6];
    if (rise == fall) fall = 0.5 * (fall + 1);  // attack ≠ release
    out.rise.push_back(rise);
    out.fall.push_back(fall);
    out.initial.push_back(r % 3 == 0 ? 0.0 : 2 * uniform(random) - 0.5);
  }
  return out;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// ---- host references --------------------------------------------------------------------------

/// The CPU kernel's loop: ballistics_step with gains 1 − α in T.
template <typename T>
std::vector<T> host_ballistics(const std::vector<T>& x, const std::vector<T>& rise,
                               const std::vector<T>& fall, const std::vector<T>& initial,
                               int64_t rows, int64_t length) {
  std::vector<T> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    T state = initial[r], up = T(1) - rise[r], down = T(1) - fall[r];
    for (int64_t n = 0; n < length; ++n)
      y[r * length + n] = state = grafx::dsp::ballistics_step(state, x[r * length + n], up, down);
  }
  return y;
}

/// The adjoint with the branches of y (rising when x[n] > y[n−1]), in double.
struct Adjoint {
  std::vector<double> grad_x, grad_rise, grad_fall, grad_initial, rise_scale, fall_scale;
};

template <typename T>
Adjoint host_adjoint(const std::vector<T>& x, const std::vector<T>& y, const std::vector<T>& rise,
                     const std::vector<T>& fall, const std::vector<T>& initial,
                     const std::vector<T>& grad, int64_t rows, int64_t length) {
  Adjoint out{std::vector<double>(x.size()), {}, {}, {}, {}, {}};
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr   = x.data() + r * length;
    const T* yr   = y.data() + r * length;
    auto previous = [&](int64_t n) { return n > 0 ? yr[n - 1] : initial[r]; };
    auto alpha    = [&](int64_t n) { return double(xr[n] > previous(n) ? rise[r] : fall[r]); };
    double lambda = 0, sum_rise = 0, sum_fall = 0, scale_rise = 0, scale_fall = 0;
    for (int64_t n = length - 1; n >= 0; --n) {
      lambda = double(grad[r * length + n]) + (n + 1 < length ? alpha(n + 1) * lambda : 0.0);
      out.grad_x[r * length + n] = (1 - alpha(n)) * lambda;
      const double term          = lambda * double(previous(n) - xr[n]);
      (xr[n] > previous(n) ? sum_rise : sum_fall) += term;
      (xr[n] > previous(n) ? scale_rise : scale_fall) += std::abs(term);
    }
    out.grad_rise.push_back(sum_rise);
    out.grad_fall.push_back(sum_fall);
    out.grad_initial.push_back(lambda * alpha(0));
    out.rise_scale.push_back(scale_rise);
    out.fall_scale.push_back(scale_fall);
  }
  return out;
}

/// y[n] = a[n]·y[n∓1] + x[n] in double.
std::vector<double> host_recurrence(const std::vector<double>& x, const std::vector<double>& a,
                                    bool per_sample, const std::vector<double>& initial,
                                    int64_t rows, int64_t length, bool reverse) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double state = initial[r];
    for (int64_t k = 0; k < length; ++k) {
      const int64_t n   = reverse ? length - 1 - k : k;
      state             = (per_sample ? a[r * length + n] : a[r]) * state + x[r * length + n];
      y[r * length + n] = state;
    }
  }
  return y;
}

// ---- comparisons ------------------------------------------------------------------------------

/// The largest difference in any row, relative to that row's peak of the reference (at least
/// `floor`); NaN counts as infinite.
template <typename A, typename B>
double worst_row_error(const std::vector<A>& got, const std::vector<B>& want, int64_t rows,
                       int64_t length, double floor = 1e-300) {
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double peak = floor, error = 0;
    for (int64_t n = 0; n < length; ++n) {
      const double difference =
          std::abs(double(got[r * length + n]) - double(want[r * length + n]));
      peak  = std::max(peak, std::abs(double(want[r * length + n])));
      error = std::isnan(difference) ? INFINITY : std::max(error, difference);
    }
    worst = std::max(worst, error / peak);
  }
  return worst;
}

template <typename T>
void check_ballistics(int64_t rows, int64_t length, uint32_t seed) {
  const bool single     = sizeof(T) == 4;
  const double limit    = single ? 1e-5 : 1e-10;
  const std::string tag = std::string(single ? "float" : "double") + " rows " +
                          std::to_string(rows) + " length " + std::to_string(length);
  const Rows in          = make_rows(rows, length, seed);
  const std::vector<T> x = cast<T>(in.x), rise = cast<T>(in.rise), fall = cast<T>(in.fall),
                       initial = cast<T>(in.initial);
  DeviceArray<T> dx(x), drise(rise), dfall(fall), dinitial(initial), dy(x.size());
  DeviceArray<int> diterations(rows);
  gpu::ballistics_forward<T>(dx.data, drise.data, dfall.data, dinitial.data, dy.data,
                             diterations.data, rows, length, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<T> y       = dy.download();
  const std::vector<int> count = diterations.download();
  const std::vector<T> want    = host_ballistics(x, rise, fall, initial, rows, length);
  const double error           = worst_row_error(y, want, rows, length);
  int64_t identical            = 0;
  for (int64_t r = 0; r < rows; ++r)
    identical +=
        std::equal(y.begin() + r * length, y.begin() + (r + 1) * length, want.begin() + r * length);
  const int most  = *std::max_element(count.begin(), count.end());
  const int least = *std::min_element(count.begin(), count.end());
  double mean     = 0;
  for (int c : count) mean += c / double(rows);
  std::printf(
      "ballistics forward  %-36s error %.2e of the peak, %lld/%lld rows bit-identical, "
      "iterations %d-%d (mean %.1f)\n",
      tag.c_str(), error, (long long)identical, (long long)rows, least, most, mean);
  expect(error <= limit, "ballistics forward " + tag);
  expect(least >= 1 && most <= gpu::kChunksPerRow, "iteration counts " + tag);

  // The backward pass against the host adjoint with the same branches (those of the GPU's y).
  std::mt19937 random(seed + 1);
  std::normal_distribution<double> normal;
  std::vector<T> grad(x.size());
  for (T& g : grad) g = T(normal(random));
  DeviceArray<T> dgrad(grad), dgrad_x(x.size()), dgrad_rise(rows), dgrad_fall(rows),
      dgrad_initial(rows);
  gpu::ballistics_backward<T>(dx.data, dy.data, drise.data, dfall.data, dinitial.data, dgrad.data,
                              dgrad_x.data, dgrad_rise.data, dgrad_fall.data, dgrad_initial.data,
                              rows, length, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  const Adjoint adjoint   = host_adjoint(x, y, rise, fall, initial, grad, rows, length);
  const double grad_error = worst_row_error(dgrad_x.download(), adjoint.grad_x, rows, length);
  const std::vector<T> grad_rise = dgrad_rise.download(), grad_fall = dgrad_fall.download(),
                       grad_initial = dgrad_initial.download();
  double sum_error                  = 0;
  for (int64_t r = 0; r < rows; ++r) {
    // Relative to the sum of both sums' terms' magnitudes (a sum of a few tiny terms rounds to
    // a float denormal), ∂y0 to the bound max |g| / (1 − α) of |λ[0]|.
    double peak = 0;
    for (int64_t n = 0; n < length; ++n)
      peak = std::max(peak, std::abs(double(grad[r * length + n])));
    const double scale    = std::max(adjoint.rise_scale[r] + adjoint.fall_scale[r], 1e-300);
    const double errors[] = {std::abs(grad_rise[r] - adjoint.grad_rise[r]) / scale,
                             std::abs(grad_fall[r] - adjoint.grad_fall[r]) / scale,
                             std::abs(grad_initial[r] - adjoint.grad_initial[r]) /
                                 std::max(peak / (1 - std::max(in.rise[r], in.fall[r])), 1e-300)};
    for (double e : errors) sum_error = std::isnan(e) ? INFINITY : std::max(sum_error, e);
  }
  std::printf("ballistics backward %-36s ∂x error %.2e of the peak, ∂α, ∂y0 %.2e of their scale\n",
              tag.c_str(), grad_error, sum_error);
  expect(grad_error <= limit, "ballistics backward ∂x " + tag);
  expect(sum_error <= limit, "ballistics backward ∂α, ∂y0 " + tag);
}

template <typename T>
void check_recurrence(int64_t rows, int64_t length, uint32_t seed) {
  const bool single  = sizeof(T) == 4;
  const double limit = single ? 1e-5 : 1e-10;
  std::mt19937 random(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  std::vector<double> x(rows * length), initial(rows), a_row(rows), a_sample(rows * length);
  for (double& v : x) v = T(normal(random));
  for (double& v : initial) v = T(normal(random));
  for (int64_t r = 0; r < rows; ++r)
    a_row[r] = T(r % 4 == 0 ? 0.9999 : 0.5 + 0.49 * uniform(random));
  for (double& v : a_sample) v = T(uniform(random));
  if (length > 2)
    for (int64_t r = 0; r < rows; ++r) a_sample[r * length + length / 2] = 0;  // an exact zero
  const std::vector<T> xs = cast<T>(x), is = cast<T>(initial);
  DeviceArray<T> dx(xs), dinitial(is), dy(xs.size()), drow(cast<T>(a_row)),
      dsample(cast<T>(a_sample));
  for (bool per_sample : {false, true})
    for (bool reverse : {false, true}) {
      gpu::linear_recurrence<T>(dx.data, per_sample ? dsample.data : drow.data, per_sample,
                                dinitial.data, dy.data, rows, length, reverse, nullptr);
      CHECK_CUDA(cudaDeviceSynchronize());
      const std::vector<double> want = host_recurrence(x, per_sample ? a_sample : a_row, per_sample,
                                                       initial, rows, length, reverse);
      const double error             = worst_row_error(dy.download(), want, rows, length, 1.0);
      const std::string tag          = std::string(single ? "float" : "double") + " rows " +
                              std::to_string(rows) + " length " + std::to_string(length) +
                              (per_sample ? " per sample" : " per row") +
                              (reverse ? " reverse" : " forward");
      std::printf("linear recurrence   %-52s error %.2e of the peak\n", tag.c_str(), error);
      expect(error <= limit, "linear recurrence " + tag);
    }
}

/// The two-pole recursion (the biquads' poles) against a host loop, and its time on 256 rows of
/// 2^18 doubles (the biquad cascades run it in float64).
void check_two_pole(int64_t rows, int64_t length, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  std::vector<double> x(rows * length), c1(rows * length), c2(rows * length);
  for (double& v : x) v = normal(random);
  for (int64_t i = 0; i < rows * length; ++i) {  // poles of radius 0.5 … 0.999
    const double radius = 0.5 + 0.499 * uniform(random), angle = M_PI * uniform(random);
    c1[i] = 2 * radius * std::cos(angle), c2[i] = -radius * radius;
  }
  DeviceArray<double> dx(x), dy(x.size()), d1(c1), d2(c2);
  for (bool per_sample : {false, true})
    for (bool reverse : {false, true}) {
      std::vector<double> a1(rows), a2(rows);  // per row: each row's first sample's pole
      for (int64_t r = 0; r < rows; ++r) a1[r] = c1[r * length], a2[r] = c2[r * length];
      DeviceArray<double> r1(a1), r2(a2);
      gpu::two_pole(dx.data, per_sample ? d1.data : r1.data, per_sample ? d2.data : r2.data,
                    per_sample, dy.data, rows, length, reverse, nullptr);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaDeviceSynchronize());
      std::vector<double> want(x.size());
      for (int64_t r = 0; r < rows; ++r) {
        double previous = 0, before = 0;
        for (int64_t i = 0; i < length; ++i) {
          const int64_t n = reverse ? length - 1 - i : i, k = r * length + n;
          const double y = x[k] + (per_sample ? c1[k] : a1[r]) * previous +
                           (per_sample ? c2[k] : a2[r]) * before;
          want[k] = y, before = previous, previous = y;
        }
      }
      const double error    = worst_row_error(dy.download(), want, rows, length, 1.0);
      const std::string tag = "rows " + std::to_string(rows) + " length " + std::to_string(length) +
                              (per_sample ? " per sample" : " per row") +
                              (reverse ? " reverse" : " forward");
      std::printf("two poles  double   %-52s error %.2e of the peak\n", tag.c_str(), error);
      expect(error <= 1e-10, "two poles " + tag);
    }
}

// ---- timing -----------------------------------------------------------------------------------

/// Detector-like levels on the device: |noise| under a moving envelope, a hash per sample.
__global__ void fill_levels(float* x, int64_t length, int64_t total, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 2246822519u;
    h ^= h >> 13;
    const float noise    = float(h & 0xffffff) / float(0xffffff);
    const int64_t n      = i % length;
    const float envelope = powf(fabsf(sinf(float(n) / 30000 * 7 + float(i / length))), 3) + 0.05f;
    x[i]                 = noise * envelope;
  }
}

__global__ void fill_settings(float* rise, float* fall, float* initial, int64_t rows) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  rise[r]    = 0.9f + 0.0999f * float(r % 7) / 6;    // attack 0.9 … 0.9999
  fall[r]    = 0.99f + 0.00999f * float(r % 5) / 4;  // release 0.99 … 0.99999
  initial[r] = float(r % 3) * 0.1f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void time_ballistics() {
  const int64_t rows = 1024, length = int64_t(1) << 18, total = rows * length;
  DeviceArray<float> x0(total), x1(total), y(total), grad(total), grad_x(total);
  DeviceArray<float> rise(rows), fall(rows), initial(rows), grad_rise(rows), grad_fall(rows),
      grad_initial(rows);
  DeviceArray<int> iterations(rows);
  fill_levels<<<4096, 256>>>(x0.data, length, total, 1);
  fill_levels<<<4096, 256>>>(x1.data, length, total, 2);
  fill_levels<<<4096, 256>>>(grad.data, length, total, 3);
  fill_settings<<<(rows + 255) / 256, 256>>>(rise.data, fall.data, initial.data, rows);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t start, middle, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&middle));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> forward, backward, both;
  std::vector<int> most;
  for (int run = 0; run < 13; ++run) {
    const float* x = run % 2 ? x1.data : x0.data;
    CHECK_CUDA(cudaEventRecord(start, stream));
    gpu::ballistics_forward<float>(x, rise.data, fall.data, initial.data, y.data, iterations.data,
                                   rows, length, stream);
    CHECK_CUDA(cudaEventRecord(middle, stream));
    gpu::ballistics_backward<float>(x, y.data, rise.data, fall.data, initial.data, grad.data,
                                    grad_x.data, grad_rise.data, grad_fall.data, grad_initial.data,
                                    rows, length, stream);
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float forward_ms, backward_ms;
    CHECK_CUDA(cudaEventElapsedTime(&forward_ms, start, middle));
    CHECK_CUDA(cudaEventElapsedTime(&backward_ms, middle, stop));
    if (run < 3) continue;  // warm-up
    forward.push_back(forward_ms);
    backward.push_back(backward_ms);
    both.push_back(forward_ms + backward_ms);
    const std::vector<int> counts = iterations.download();
    most.push_back(*std::max_element(counts.begin(), counts.end()));
  }
  // The same forward and backward captured in a CUDA graph and replayed: the same results.
  {
    CHECK_CUDA(cudaMemsetAsync(y.data, 0, total * sizeof(float), stream));
    CHECK_CUDA(cudaMemsetAsync(grad_x.data, 0, total * sizeof(float), stream));
    cudaGraph_t graph;
    cudaGraphExec_t instance;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    gpu::ballistics_forward<float>(x0.data, rise.data, fall.data, initial.data, y.data,
                                   iterations.data, rows, length, stream);
    gpu::ballistics_backward<float>(x0.data, y.data, rise.data, fall.data, initial.data, grad.data,
                                    grad_x.data, grad_rise.data, grad_fall.data, grad_initial.data,
                                    rows, length, stream);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&instance, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(instance, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const std::vector<float> y_graph = y.download(), grad_graph = grad_x.download();
    gpu::ballistics_forward<float>(x0.data, rise.data, fall.data, initial.data, y.data,
                                   iterations.data, rows, length, stream);
    gpu::ballistics_backward<float>(x0.data, y.data, rise.data, fall.data, initial.data, grad.data,
                                    grad_x.data, grad_rise.data, grad_fall.data, grad_initial.data,
                                    rows, length, stream);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const bool same = y_graph == y.download() && grad_graph == grad_x.download();
    std::printf("CUDA graph of forward + backward: %s\n", same ? "same results" : "DIFFERENT");
    expect(same, "forward + backward captured in a CUDA graph");
    CHECK_CUDA(cudaGraphExecDestroy(instance));
    CHECK_CUDA(cudaGraphDestroy(graph));
  }
  const std::vector<int> counts = iterations.download();
  double mean                   = 0;
  for (int c : counts) mean += c / double(rows);
  const double samples = double(total);
  std::printf(
      "time 1024 x 2^18 float: forward %.3f ms (%.1f G samples/s), backward %.3f ms "
      "(%.1f G samples/s), forward + backward %.3f ms: %.1f G samples/s "
      "(medians of %zu); iterations mean %.2f, most %d\n",
      median(forward), samples / median(forward) * 1e-6, median(backward),
      samples / median(backward) * 1e-6, median(both), samples / median(both) * 1e-6, both.size(),
      mean, *std::max_element(most.begin(), most.end()));
  expect(samples / median(both) * 1e-6 >= 20, "forward + backward at 20 G samples/s or more");
  // The linear recurrence (per-row coefficient) on the same rows, for reference.
  std::vector<double> linear;
  for (int run = 0; run < 8; ++run) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    gpu::linear_recurrence<float>(run % 2 ? x1.data : x0.data, rise.data, false, initial.data,
                                  y.data, rows, length, false, stream);
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (run >= 2) linear.push_back(ms);
  }
  std::printf("time 1024 x 2^18 float: linear recurrence %.3f ms (%.1f G samples/s)\n",
              median(linear), samples / median(linear) * 1e-6);
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(middle));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(stream));
}

void time_two_pole() {
  const int64_t rows = 256, length = int64_t(1) << 18, total = rows * length;
  std::vector<double> x(total), c1(total, 1.6), c2(total, -0.81);
  std::mt19937 random(5);
  std::normal_distribution<double> normal;
  for (double& v : x) v = normal(random);
  DeviceArray<double> dx(x), dy(total), d1(c1), d2(c2);
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (bool per_sample : {false, true}) {
    std::vector<double> times;
    for (int run = 0; run < 10; ++run) {
      CHECK_CUDA(cudaEventRecord(start));
      gpu::two_pole(dx.data, d1.data, d2.data, per_sample, dy.data, rows, length, false, nullptr);
      CHECK_CUDA(cudaEventRecord(stop));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float ms;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      if (run >= 2) times.push_back(ms);
    }
    std::printf("time 256 x 2^18 double: two poles %s %.3f ms (%.1f G samples/s)\n",
                per_sample ? "per sample" : "per row", median(times),
                double(total) / median(times) * 1e-6);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
}

}  // namespace

int main() {
  int device = 0;
  cudaDeviceProp properties{};
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaGetDeviceProperties(&properties, device));
  std::printf("device: %s, %d SMs\n", properties.name, properties.multiProcessorCount);
  try {
    uint32_t seed = 10;
    for (int64_t length : {1, 5, 255, 256, 257, 300, 4099, 60000}) {
      check_ballistics<float>(64, length, ++seed);
      check_ballistics<double>(64, length, ++seed);
    }
    check_ballistics<float>(16, (int64_t(1) << 18) + 3, ++seed);
    check_ballistics<double>(16, (int64_t(1) << 18) + 3, ++seed);
    for (int64_t length : {1, 5, 300, 60000}) {
      check_recurrence<float>(24, length, ++seed);
      check_recurrence<double>(24, length, ++seed);
    }
    for (int64_t length : {1, 5, 255, 257, 4099, 60000}) check_two_pole(8, length, ++seed);
    time_ballistics();
    time_two_pole();
  } catch (const std::exception& error) {
    std::printf("FAIL: %s\n", error.what());
    return 1;
  }
  std::printf(failures ? "%d FAILED\n" : "all passed\n", failures);
  return failures ? 1 : 0;
}
