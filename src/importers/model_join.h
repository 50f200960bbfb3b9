// The join of an imported profile with the ONNX model it was measured on (`import --model`).
//
// Every imported row (an ORT node, a TensorRT layer, ...) is mapped to the ONNX nodes it came
// from, in this order of evidence:
//   1. explicit source lists (TensorRT layer info "Metadata": [ONNX Layer: ...]);
//   2. the row name as a node name, or as the name of a tensor a node produces
//      (onnx-tensorrt's "node_of_<tensor>");
//   3. the name taken apart (TensorRT "A + B", "PWN(...)", "{ForeignNode[A...B]}": every node
//      from A to B in the model's order);
//   4. ONNX Runtime's renamings: "<node>_nchwc", and fused nodes named after their last node
//      whose op type (the row's op_name) is that of an earlier node in the chain feeding it —
//      the chain back to that node is the fused group;
//   5. ONNX Runtime's fused kernels named after one node of their group take the rest of it
//      (MatMulAddFusion's Add, FusedMatMul's scale and Transposes, a Split's other Gathers, a
//      FusedGemm's activation); kernels that replace a subgraph (Gelu, FastGelu, QuickGelu,
//      LayerNormalization, SkipLayerNormalization, Attention, ...), named after none of its
//      nodes or after one, take the subgraph of that pattern that lies between the rows around
//      them (matched by structure: op types, shapes, position).
// Then each matched node gets its op type, shapes, FLOPs and bytes from the engine loaded at
// the given shapes (its cost estimates), and the row's time: all of it for a 1:1 match; for a
// fused row, a share by estimated cost (profile/fused_split.h, the split opscope's engine uses
// for its own fused steps), marked "fused" with the row as its step. The result has one op per
// matched ONNX node (model order), then the unmatched rows under their own names; meta says how
// much of the time was attributed and lists the unmatched rows with their shares.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::importers {

struct ModelJoinOptions {
  std::string model_path;
  std::map<std::string, std::vector<int64_t>> shapes;  // --shape NAME=DIMS
  // Row name -> its source ONNX node names, when the runtime wrote them (TensorRT layer info).
  std::map<std::string, std::vector<std::string>> sources;
  std::string runtime = "the runtime";  // "ONNX Runtime", "TensorRT", ... for attributions
};

struct JoinSummary {
  size_t rows = 0, matched_rows = 0, nodes_matched = 0, model_nodes = 0;
  double matched_share = 0;                               // of the profile's time, 0..1
  std::vector<std::pair<std::string, double>> unmatched;  // row name, share of time
  bool costs = false;                                     // FLOPs/bytes/shapes came from the engine
  std::string engine_note;                                // why not, when they did not
};

// Rewrites P as described above. An error when no row matches any node (the profile is not of
// this model) or when the model cannot be read.
StatusOr<JoinSummary> JoinModel(profile::Profile* p, const ModelJoinOptions& options);

}  // namespace opscope::importers
