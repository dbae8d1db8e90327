// Argument parsing and printing shared by the commands (arguments.h).

#include "arguments.h"

#include <grafx/text.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

namespace grafx::cli {

void print_notes(const std::vector<std::string>& notes) {
  for (const auto& note : notes) std::cerr << "grafx: note: " << note << "\n";
}

std::optional<double> parse_finite(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  char* end    = nullptr;
  errno        = 0;
  double value = std::strtod(text.c_str(), &end);
  // Too small for a double is a number all the same (strtod gives it as a subnormal or 0);
  // too large is not.
  if (end != text.c_str() + text.size() || !std::isfinite(value) ||
      (errno == ERANGE && std::abs(value) > 1.0))
    return std::nullopt;
  return value;
}

CLI::Validator finite_number(double min, bool inclusive) {
  const std::string bound = significant_digits(min, 6);  // as iostream prints it
  const std::string wanted =
      inclusive ? "a finite number of at least " + bound : "a finite number above " + bound;
  return CLI::Validator(
      [min, inclusive, wanted](std::string& text) -> std::string {
        std::optional<double> value = parse_finite(text);
        if (!value || (inclusive ? *value < min : *value <= min))
          return "expected " + wanted + ", but got \"" + text + "\"";
        return "";
      },
      wanted);
}

CLI::Validator whole_number(int64_t min) {
  std::string wanted = "a whole number of at least " + std::to_string(min);
  return CLI::Validator(
      [min, wanted](std::string& text) -> std::string {
        size_t used     = 0;
        long long value = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::logic_error&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || value < min)
          return "expected " + wanted + ", but got \"" + text + "\"";
        return "";
      },
      wanted);
}

std::string counted(int64_t n, const std::string& singular, const std::string& plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

namespace {
bool threads_were_chosen = false;  // set once, while the command line is parsed
}  // namespace

bool threads_chosen() { return threads_were_chosen; }

void note_threads_chosen() { threads_were_chosen = true; }

std::vector<std::string> split(const std::string& text, char separator) {
  if (text.empty()) return {""};
  std::vector<std::string> items;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, separator)) items.push_back(item);
  if (text.back() == separator) items.emplace_back();
  return items;
}

}  // namespace grafx::cli
