#include <grafx/memory.h>

#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>

namespace grafx {

namespace {

/// A field of /proc/self/status in KiB ("VmRSS:"), or NaN.
double status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(line.find(':') + 1));
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

void keep_freed_memory() {
  const char* keep = std::getenv("GRAFX_KEEP_FREED_MEMORY");
  if (keep && std::string(keep) == "0") return;
  constexpr int kGiB = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kGiB);
  mallopt(M_TRIM_THRESHOLD, kGiB);
}

double peak_memory_growth_mib(const std::function<void()>& work) {
  work();
  mallopt(M_MMAP_THRESHOLD, 1 << 17);
  malloc_trim(0);
  std::ofstream reset("/proc/self/clear_refs");
  reset << "5";  // resets the high-water mark to the current size
  reset.close();
  if (!reset) return std::numeric_limits<double>::quiet_NaN();
  const double before = status_kib("VmRSS:");
  work();
  return (status_kib("VmHWM:") - before) / 1024.0;
}

}  // namespace grafx
