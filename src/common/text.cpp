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
  // Measured first: a large value with many decimals is longer than any fixed buffer.
  std::string text(size_t(std::snprintf(nullptr, 0, "%.*f", decimals, value)), '\0');
  std::snprintf(text.data(), text.size() + 1, "%.*f", decimals, value);
  return text;
}

std::string join(const std::vector<std::string>& items, const std::string& none) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text.empty() ? none : text;
}

}  // namespace grafx
