#pragma once
/// Measuring memory: the peak growth of the process's resident memory while some work runs
/// (`grafx bench`, the render benchmark).
///
///   double mib = peak_memory_growth_mib([&] { render(...).outputs.sum().backward(); });

#include <functional>

namespace grafx {

/// Peak growth (MiB) of resident memory while `work` runs, on Linux: the high-water mark VmHWM
/// after resetting it to the current size (/proc/self/clear_refs), freed memory given back to
/// the system first (malloc_trim). The work runs once before, so that constants (noise,
/// windows, caches) are built and not counted. From the first call on, glibc serves blocks of
/// 128 KiB and more from the system directly, so that freed signals leave resident memory and
/// the measure tracks use (this slows allocation a little for the rest of the process). NaN
/// where the high-water mark cannot be read or reset.
double peak_memory_growth_mib(const std::function<void()>& work);

}  // namespace grafx
