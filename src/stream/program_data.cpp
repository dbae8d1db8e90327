#include <grafx/error.h>
#include <grafx/stream/program_data.h>

#include <cmath>
#include <cstring>

namespace grafx {

void StreamWriter::write(const std::string& text) {
  write(uint64_t(text.size()));
  bytes_ += text;
}

const char* StreamReader::take(size_t n) {
  if (n > left_) corrupt("the data end early");
  const char* at = data_;
  data_ += n, left_ -= n;
  return at;
}

std::string StreamReader::read_string() {
  const std::vector<char> text = read_vector<char>();
  return std::string(text.begin(), text.end());
}

double StreamReader::read_bound() {
  double bound;
  std::memcpy(&bound, take(sizeof bound), sizeof bound);
  if (std::isnan(bound)) corrupt("a range's end that is not a number");
  return bound;
}

int64_t StreamReader::read_count(int64_t minimum, int64_t maximum) {
  const int64_t n = read<int64_t>();
  if (n < minimum || n > maximum)
    corrupt("a count of " + std::to_string(n) + " where " + std::to_string(minimum) + " to " +
            std::to_string(maximum) + " fit");
  return n;
}

void StreamReader::allocate(double bytes) {
  budget_ -= bytes;
  if (!(budget_ >= 0)) corrupt("it would allocate more memory than its data could need");
}

void StreamReader::corrupt(const std::string& what) {
  throw RenderError("grafx.stream.program", "not a stream program of this version: " + what);
}

}  // namespace grafx
