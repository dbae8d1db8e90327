// The main of every test program: LibTorch's default generator is seeded anew in each process
// (Debian's build seeds it from the system), so each test starts from seed 0 to see the same
// random data on every run, whatever the order or filter of the tests.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace {

class SeedEachTest : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { at::manual_seed(0); }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedEachTest);
  return RUN_ALL_TESTS();
}
