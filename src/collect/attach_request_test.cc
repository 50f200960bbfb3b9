#include "collect/attach_request.h"

#include <gtest/gtest.h>

#include <string>

#include "base/testing/fuzz_corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace opscope::collect {
namespace {

TEST(AttachRequest, WhatOpscopeWritesIsObeyed) {
  const AttachRequest r = ParseAttachRequest(
      "opscope-attach 1\nopscope-pid 4242\nout /tmp/opscope-attach-out-x\ncpu 0\n");
  EXPECT_TRUE(r.Valid());
  EXPECT_EQ(r.opscope_pid, 4242);
  EXPECT_EQ(r.out, "/tmp/opscope-attach-out-x");
  EXPECT_FALSE(r.cpu);
}

// A pid that is not all digits or not a pid, a relative folder, a NUL in it, no magic line: not
// obeyed. `opscope-pid 4294967295` used to become pid_t -1, and kill(-1, 0) then said opscope was
// alive for as long as the program ran.
TEST(AttachRequest, MalformedRequestsAreNotObeyed) {
  const std::string ok = "opscope-attach 1\nout /tmp/o\n";
  static const char kNulInFolder[] = "opscope-attach 1\nopscope-pid 7\nout /tmp/\0o\n";
  for (const std::string& bad :
       {ok + "opscope-pid 4294967295\n", ok + "opscope-pid -1\n", ok + "opscope-pid 12abc\n",
        ok + "opscope-pid \n", ok + "opscope-pid 0\n", ok + "opscope-pid 99999999999999999999\n",
        std::string("opscope-attach 1\nopscope-pid 7\nout tmp/o\n"),
        std::string(kNulInFolder, sizeof kNulInFolder - 1),
        std::string("opscope-pid 7\nout /tmp/o\n")}) {
    EXPECT_FALSE(ParseAttachRequest(bad).Valid()) << bad;
  }
  EXPECT_TRUE(ParseAttachRequest(ok + "opscope-pid 2147483647\n").Valid());
}

TEST(AttachRequest, FuzzRegressionCorpus) {
  int n = ::opscope::testing::ReplayFuzzCorpus("attach_request_fuzz", [](const std::string& b) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  });
  EXPECT_GE(n, 2);
}

}  // namespace
}  // namespace opscope::collect
