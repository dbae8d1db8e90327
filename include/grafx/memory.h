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

/// Lets glibc keep freed memory for reuse instead of returning it to the system at once: blocks
/// up to 1 GiB come from the heap (not each from its own mmap, unmapped when freed), and the
/// heap is trimmed only past 1 GiB of free space at its top. A render or fit step allocates and
/// frees the same large signals every time; with glibc's defaults each step faulted all of
/// them in anew (a fit step: 6× the page faults, 15 % more CPU time; docs/benchmarks.md). The
/// resident memory then stays at its peak, which itself can be higher (memory freed while a
/// song's files were read stays resident: a 1-minute song's evaluation peaked at 956 MiB
/// against 839 MiB). Called by the grafx program, the benchmarks and the
/// Python module on import. Process-wide; GRAFX_KEEP_FREED_MEMORY=0 in the environment makes it
/// do nothing (glibc's defaults stay).
void keep_freed_memory();

}  // namespace grafx
