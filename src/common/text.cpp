#include <grafx/text.h>

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace grafx {

std::string escape_markup(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string significant_digits(double value, int digits) {
  std::ostringstream s;
  s << std::setprecision(digits) << value;
  return s.str();
}

std::string fixed_decimals(double value, int decimals) {
  if (std::abs(value) < 0.5 * std::pow(10.0, -decimals)) value = 0;  // no "-0.00"
  char text[400];  // the longest double in fixed notation has 309 digits before the point
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace grafx
