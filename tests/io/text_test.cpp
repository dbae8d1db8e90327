// The text helpers (grafx/text.h) that every page, listing and message prints through.

#include <grafx/text.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace grafx {
namespace {

TEST(Text, EscapesMarkupEverywhereItMatters) {
  EXPECT_EQ(escape_markup("a < b & \"c\" > d"), "a &lt; b &amp; &quot;c&quot; &gt; d");
  EXPECT_EQ(escape_markup("plain, 'quoted' é"), "plain, 'quoted' é");  // UTF-8 kept whole
  EXPECT_EQ(escape_markup("&amp;"), "&amp;amp;");                      // escaped once more
}

TEST(Text, NumbersRoundAsAskedAndReadBack) {
  EXPECT_EQ(significant_digits(1.0 / 3, 4), "0.3333");
  EXPECT_EQ(significant_digits(123456.0, 4), "1.235e+05");
  EXPECT_EQ(significant_digits(std::numeric_limits<double>::infinity(), 4), "inf");
  for (double x : {0.1, 1.0 / 3, 6.02214076e23, -2.5e-308})  // 17 digits: the same double
    EXPECT_EQ(std::stod(significant_digits(x, 17)), x);
  EXPECT_EQ(fixed_decimals(2.345678, 2), "2.35");
  EXPECT_EQ(fixed_decimals(-0.001, 2), "0.00");  // no sign on a zero
  EXPECT_EQ(fixed_decimals(-0.006, 2), "-0.01");
  EXPECT_EQ(fixed_decimals(1e300, 1).size(), 303u);  // whole, however long
  EXPECT_EQ(fixed_decimals(-1e308, 200).size(), 1u + 309 + 1 + 200);
}

}  // namespace
}  // namespace grafx
