// Builders for the hand-made profiles the diagnosis tests use, and the golden-file check.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/testing/golden.h"
#include "profile/profile.h"

namespace opscope::analysis::testing {

// An op whose every run takes `ms`.
inline profile::OpRecord MakeOp(const std::string& name, const std::string& type, double ms,
                                double flops, double bytes, int runs = 5) {
  profile::OpRecord op;
  op.name = name;
  op.op_type = type;
  op.flops = flops;
  op.bytes = bytes;
  op.runs_ms.assign(runs, ms);
  op.output_shapes = {{1, 64, 56, 56}};
  return op;
}

inline profile::Profile MakeProfile(std::vector<profile::OpRecord> ops,
                                    std::vector<double> e2e = {}) {
  profile::Profile p;
  p.meta.kind = "profile";
  p.meta.build_type = "Release";
  p.meta.threads = 2;
  p.meta.warmup = 2;
  p.meta.runs = 5;
  p.meta.governor = "performance";
  p.ops = std::move(ops);
  for (size_t i = 0; i < p.ops.size(); ++i) p.ops[i].index = static_cast<int>(i);
  p.e2e.runs_ms = std::move(e2e);
  profile::FinalizeStats(p);
  return p;
}

// Compares `actual` with testdata/<name>; OPSCOPE_UPDATE_GOLDEN=1 rewrites the file instead.
inline void ExpectGolden(const std::string& name, const std::string& actual) {
  ::opscope::testing::ExpectMatchesGolden(
      std::string(OPSCOPE_SOURCE_DIR) + "/src/analysis/testdata/" + name, actual);
}

}  // namespace opscope::analysis::testing
