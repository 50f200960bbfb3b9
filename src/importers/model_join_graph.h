// The model join's graph and the matching of ONNX Runtime's fusions by the subgraph they ran
// (model_join_fusions.cc); model_join.cc does the rest of the join. Internal to importers/.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "profile/profile.h"

namespace opscope::importers::join {

struct GraphNode {
  std::string name, op_type;
  std::vector<std::string> inputs, outputs;
  bool constant = false;  // every input is a constant: a runtime folds it when it loads the model
};

struct ModelGraph {
  std::vector<GraphNode> nodes;
  std::unordered_map<std::string, int> by_name, producer;
  std::unordered_map<std::string, std::vector<int>> consumers;  // tensor -> nodes reading it
  // Initializers and Constant outputs (weights); those and what is computed from them alone (what
  // a runtime folds); the graph's outputs.
  std::unordered_set<std::string> weights, constants, outputs;
};

// The ONNX nodes a row of the profile ran, and how they were found.
struct Group {
  std::vector<int> nodes;
  bool region = false;
  std::vector<std::string> undone;  // ONNX Runtime's renamings taken off the row's name
  bool by_structure = false;        // matched by the subgraph it covers, not by its name
};

// A kernel that ONNX Runtime's level-2 transformers make out of a subgraph and often name after
// no node of it ("Gelu", "SkipLayerNormalization_token_67", "GPT2Gelu"): the op types the
// subgraph may hold, those it must hold (one of each list), and how many tensors it reads from
// outside besides constants (two for the Skip kinds: the residual sum's operands). From the
// patterns of layer_norm_fusion.cc, skip_layer_norm_fusion.cc, gelu_fusion.cc,
// bias_gelu_fusion.cc, fast_gelu_fusion.cc, quick_gelu_fusion.cc, embed_layer_norm_fusion.cc,
// attention_fusion.cc and bias_softmax_fusion.cc.
struct RegionKind {
  const char* op_type;
  std::vector<std::string> ops;
  std::vector<std::vector<std::string>> need;
  size_t min_inputs = 1;
};

const RegionKind* RegionKindOf(const std::string& op_type);

// The output of node N with at most one reader, which is not a graph output: that reader, or -1.
int SoleConsumer(const ModelGraph& g, int n);

// What a fused row named after one node of its fusion (by a "<node>/<Kind>Fusion" name or as
// "fused <node>") also ran, when those nodes have no row of their own: ONNX Runtime's
// MatMulAddFusion (Gemm) takes the Add after its MatMul; GemmActivationFusion (FusedGemm, "fused
// ...") the activation after that; MatMulScaleFusion and MatmulTransposeFusion (FusedMatMul) a Mul
// or Div by a constant before or after the MatMul and the Transposes feeding it;
// GatherSliceToSplitFusion (Split) the other Gathers or Slices of the same tensor; ReshapeFusion
// ("<node>_new_reshape") the Reshape after the named one. Taken nodes join the row's group after
// its anchor (post-ops in the cost split; a Split's Gathers each by its own cost).
void AbsorbFusedNeighbours(const ModelGraph& g, const std::vector<profile::OpRecord>& rows,
                           std::vector<Group>* groups, std::vector<char>* claimed);

// Rows that no name matches, or whose name points into a fusion that replaced a whole subgraph
// (QuickGelu named after its last Mul, a LayerNormalization named "<node>/LayerNormFusion/"),
// matched to the subgraph of the model they ran, by structure: the unclaimed nodes of the row's
// RegionKind that end in a node whose output the row wrote (same shape, up to NCHWc's channel
// padding) and which some node outside the pattern reads (a claimed node, or one of another op
// type), grown back through unclaimed nodes of the kind up to claimed nodes, constants and other
// such ends. The subgraph must hold the kind's required op types, read nothing but the row's
// inputs (by shape) and constants, and let no inner tensor out. A row named after one of its
// nodes takes the subgraph that holds that node. Otherwise, of the subgraphs that fit, the one
// that lies between its rows (what it reads written by earlier rows, what it writes read by
// later ones: rows come in execution order) nearest after its producers, else the first in the
// model's order: two layers' Gelus, or the equal Reshapes of q, k and v, differ only there. A
// row whose name was a renaming but led to no node ("gemm_output_reshape_new_reshape": a model
// Reshape merged into MatMulAddFusion's) is matched the same way to one node of its own op type.
// Repeated while rows find subgraphs, since a match can end another's pattern.
void MatchByStructure(const ModelGraph& g,
                      const std::unordered_map<std::string, std::vector<int64_t>>& shapes,
                      const std::vector<profile::OpRecord>& rows, const std::vector<char>& inserted,
                      std::vector<Group>* groups, std::vector<char>* claimed);

}  // namespace opscope::importers::join
