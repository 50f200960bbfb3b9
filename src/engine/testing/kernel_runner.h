// Runs one kernel outside a session, for kernel unit and differential tests.
//
//   Node n = MakeNode("Add", 2, 1);            // op type, #inputs, #outputs
//   n.attrs.Set("axis", IntAttr(1));
//   auto out = RunKernel(n, {&a, &b});           // StatusOr<std::vector<Tensor>>
#pragma once

#include <random>
#include <vector>

#include "base/status.h"
#include "engine/graph.h"
#include "engine/kernel.h"

namespace opscope::engine::testing {

Node MakeNode(const std::string& op_type, int num_inputs, int num_outputs, int opset = 17);
AttrValue IntAttr(int64_t v);
AttrValue FloatAttr(float v);
AttrValue StringAttr(const std::string& v);
AttrValue IntsAttr(std::vector<int64_t> v);
AttrValue FloatsAttr(std::vector<float> v);

// Inputs may contain nullptr for omitted optional inputs. Creates the kernel through the
// registry (so Create_ validation is exercised) and runs it `repeat` times (to exercise caches).
StatusOr<std::vector<Tensor>> RunKernel(const Node& node, const std::vector<const Tensor*>& inputs,
                                        int repeat = 1);

Tensor RandomTensor(std::vector<int64_t> shape, uint32_t seed, float lo = -1, float hi = 1);
Tensor IntTensor(std::vector<int64_t> shape, std::vector<int64_t> values);
Tensor FloatTensor(std::vector<int64_t> shape, std::vector<float> values);
// Max |a-b| / (atol + rtol*|b|) style check; returns "" if close, else a description.
std::string CompareFloat(const Tensor& actual, const Tensor& expected, float atol = 1e-4f,
                         float rtol = 1e-4f);

}  // namespace opscope::engine::testing
