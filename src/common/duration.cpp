#include <grafx/duration.h>

#include <cmath>
#include <iomanip>
#include <sstream>

namespace grafx {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  std::ostringstream s;
  if (seconds < 0.995) {
    s << std::setprecision(2) << seconds << " s";  // 0.4 s, 0.45 s, 0.012 s
    return s.str();
  }
  if (seconds < 9.95) {
    s << std::fixed << std::setprecision(1) << seconds << " s";
    return s.str();
  }
  const long long whole = std::llround(seconds);
  if (whole < 60) {
    s << whole << " s";
  } else if (whole < 3600) {
    s << whole / 60 << " min " << std::setw(2) << std::setfill('0') << whole % 60 << " s";
  } else {
    const long long minutes = std::llround(seconds / 60);
    s << minutes / 60 << " h " << std::setw(2) << std::setfill('0') << minutes % 60 << " min";
  }
  return s.str();
}

}  // namespace grafx
