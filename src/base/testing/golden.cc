#include "base/testing/golden.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "base/files.h"

namespace opscope::testing {

void ExpectMatchesGolden(const std::string& path, const std::string& actual) {
  const char* update = std::getenv("OPSCOPE_UPDATE_GOLDEN");
  if (update && update[0] != '\0' && std::string(update) != "0") {
    Status st = WriteFileAtomic(path, actual);
    EXPECT_TRUE(st.ok()) << st.message();
    return;
  }
  StatusOr<std::string> expected = ReadFile(path);
  ASSERT_TRUE(expected.ok()) << path << " missing: run the test with OPSCOPE_UPDATE_GOLDEN=1";
  EXPECT_EQ(*expected, actual)
      << "golden " << path << " differs (OPSCOPE_UPDATE_GOLDEN=1 regenerates it; review the diff)";
}

}  // namespace opscope::testing
