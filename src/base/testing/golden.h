// Golden-file comparison shared by the tests: the expected output of a formatter or dump lives
// in a testdata/ file next to the test. OPSCOPE_UPDATE_GOLDEN=1 rewrites the file with the actual
// output instead (review the diff afterwards).
#pragma once

#include <string>

namespace opscope::testing {

// EXPECTs `actual` to equal the contents of `path` (a missing file fails the test), or, with
// OPSCOPE_UPDATE_GOLDEN set to anything but "" or "0", writes `actual` to `path`.
void ExpectMatchesGolden(const std::string& path, const std::string& actual);

}  // namespace opscope::testing
