// The memory all owning tensors of the process may hold together (Tensor's constructor reserves
// against it). By default the machine's memory: physical RAM, or the cgroup's memory.max when
// that is smaller. A model whose shapes ask for more is refused with one line (see
// TensorMemoryError) instead of being killed by the kernel's out-of-memory killer part way
// through zero-filling its tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace opscope::engine {

// 0 restores the default.
void SetTensorMemoryLimit(size_t bytes);
size_t TensorMemoryLimit();
// Bytes held by owning tensors now.
size_t LiveTensorBytes();
// Empty when `bytes` more fit under the limit, else the reason, e.g. "would need 17.18 GB, more
// than the 16.50 GB (this machine's memory)".
std::string TensorMemoryError(size_t bytes);

// The iterations one Loop node may run (0: no limit, the default). A Loop whose trip count and
// condition would take it further fails with one line naming the node. The model fuzzers set
// it, so that a data-dependent `while` loop that random inputs never end is a clean failure
// rather than a timeout.
void SetLoopIterationLimit(int64_t iterations);
int64_t LoopIterationLimit();

// The FLOPs one step may do (0: no limit, the default), from its kernel's cost function at the
// shapes of the run. A step over it fails with one line naming the node when it asks for its
// first output, before it computes. The model fuzzers set it: a valid model whose shapes
// are known only when it runs (a ConvTranspose whose weight is its own input, 8.6e9 FLOPs) is
// a clean failure rather than a two-minute unit. An empty input or output counts its rows (the
// product of its nonzero dimensions) against the same limit: kernels walk them.
void SetStepFlopLimit(double flops);
double StepFlopLimit();

// The work one Session::Run may do in all its steps together, subgraph steps (loop bodies)
// included (0: no limit, the default): each step counts its FLOPs, or the elements of its first
// output where it computes fewer. The step that would take the total past it fails with one
// line naming the node, before it computes. The model fuzzers set it: steps each under the step
// limit add up in a Loop (10 k iterations of a 1.3e5-FLOP body ran 88 s instrumented).
void SetRunWorkLimit(double units);
double RunWorkLimit();

}  // namespace opscope::engine
