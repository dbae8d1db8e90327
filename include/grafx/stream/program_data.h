#pragma once
/// Programs as plain data: what a stream and its nodes' forms save (native byte order, field by
/// field) and read back, checked as they are read (a program from a file is never trusted).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace grafx {

/// Plain data of a saved stream (native byte order), written field by field.
class StreamWriter {
 public:
  template <typename T>
  void write(T value) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>, "a number");
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void write(const std::string& text);
  template <typename T>
  void write(const std::vector<T>& values) {
    write(uint64_t(values.size()));
    bytes_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

/// Reads what a StreamWriter wrote, in the same order. Throws RenderError
/// [grafx.stream.program] where the data end early or a count cannot be right, and where what
/// the data would have it allocate (counted by `allocate`) passes a budget of 1 GiB and 8 bytes
/// per byte of data: a program whose counts were changed cannot take all memory.
class StreamReader {
 public:
  StreamReader(const char* data, size_t size)
      : data_(data), left_(size), budget_(double(1 << 30) + 8.0 * double(size)) {}
  /// A value as written; a number of floating point must be finite (forms hold no NaN or
  /// infinity: one would only make the stream's outputs silence).
  template <typename T>
  T read() {
    if constexpr (std::is_same_v<T, bool>) {  // a flag: 0 or 1, as written
      const uint8_t flag = read<uint8_t>();
      if (flag > 1) corrupt("a flag that is neither 0 nor 1");
      return flag == 1;
    } else {
      T value;
      std::memcpy(&value, take(sizeof value), sizeof value);
      if constexpr (std::is_floating_point_v<T>)
        if (!std::isfinite(value)) corrupt("a number that is not finite");
      return value;
    }
  }
  /// An end of a control's range: a number or an infinity (a range without that end), not NaN.
  double read_bound();
  std::string read_string();
  template <typename T>
  std::vector<T> read_vector() {
    const uint64_t n = read<uint64_t>();
    if (n > left_ / sizeof(T)) corrupt("a list longer than the data");
    std::vector<T> values(static_cast<size_t>(n));
    if (n > 0) std::memcpy(values.data(), take(size_t(n) * sizeof(T)), size_t(n) * sizeof(T));
    if constexpr (std::is_floating_point_v<T>)
      for (const T value : values)
        if (!std::isfinite(value)) corrupt("a number that is not finite");
    return values;
  }
  /// A count that must lie in [minimum, maximum].
  int64_t read_count(int64_t minimum, int64_t maximum);
  size_t left() const { return left_; }
  /// Counts `bytes` that a reader is about to allocate against the budget.
  void allocate(double bytes);
  [[noreturn]] static void corrupt(const std::string& what);

 private:
  const char* take(size_t n);
  const char* data_;
  size_t left_;
  double budget_;
};

}  // namespace grafx
