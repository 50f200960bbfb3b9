// Load-time checks of an ONNX graph that run before libonnx's shape inference (which trusts
// attributes and ranks and crashes on bad ones) and the guarded shape inference itself.
// Internal to the engine (session.cc).
#pragma once

#include <string>

#include "base/status.h"

namespace onnx {
class GraphProto;
class ModelProto;
}  // namespace onnx

namespace opscope::engine {

// libonnx's multi-line messages joined into one line ("; " between lines).
std::string OneLine(const std::string& msg);

// Sparse tensors (graph sparse_initializer, Constant's sparse_value, SPARSE_TENSOR attributes,
// in subgraphs too) are refused with one line naming the tensor: the engine has no sparse
// kernels, and libonnx 1.12 reads their indices unchecked.
Status CheckSparseTensors(const onnx::GraphProto& g, const std::string& path);

// The size attributes (strides, dilations, kernel_shape, pads, group, blocksize, ...) of
// convolutions, pools and DepthToSpace/SpaceToDepth, the input/weight ranks of convolutions, and
// attributes given twice, for every node; ranks are those known before any inference (graph
// inputs, initializers, Constant values). Also, for the model's `opset`: a node of the default
// domain with more outputs than its operator's newest libonnx schema at or below that opset has.
Status CheckNodeAttributes(const onnx::GraphProto& g, const std::string& path, int opset);

// libonnx's shape inference, run so that no node it assumes well-ranked inputs for (the conv
// and pool families) is inferred before opscope has checked its inputs' ranks: the graph is
// inferred in segments that end before such a node whose inputs come from the segment, and the
// node is checked (CheckNodeAttributes' rules) against the ranks just inferred. Every node is
// inferred once. A Conv whose weight is a Reshape's output of the wrong rank is refused here
// instead of crashing libonnx (SEGV in convPoolShapeInference). A node whose subgraphs hold a
// conv or pool (If, Loop, Scan) is left out of libonnx's inference: libonnx would infer the
// subgraph in one go.
Status InferShapesChecked(onnx::ModelProto& model, const std::string& path);

}  // namespace opscope::engine
