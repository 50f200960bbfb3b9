// The engine's own view of an ONNX graph: nodes with typed attributes and value ids, decoupled
// from protobuf so kernels compile without ONNX headers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "opscope/tensor.h"

namespace opscope::engine {

struct AttrValue {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor, kGraph };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  Tensor t;
  // kGraph: the session's id of the subgraph (KernelContext::RunSubgraph) and its signature as
  // ONNX element types (onnx::TensorProto::DataType; 0 where the graph does not say).
  int graph = -1;
  std::vector<int> graph_input_types, graph_output_types;
  std::vector<std::string> graph_input_names, graph_output_names;
  // The declared shape of each graph output (-1 for a symbolic or missing dim); an output
  // without a declared shape has graph_output_ranked[i] == false.
  std::vector<std::vector<int64_t>> graph_output_shapes;
  std::vector<bool> graph_output_ranked;
};

class Attributes {
 public:
  void Set(const std::string& name, AttrValue v) { attrs_[name] = std::move(v); }
  bool Has(const std::string& name) const { return attrs_.count(name) > 0; }
  const AttrValue* Find(const std::string& name) const {
    auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : &it->second;
  }
  int64_t Int(const std::string& name, int64_t def) const {
    auto* a = Find(name);
    return a ? a->i : def;
  }
  float Float(const std::string& name, float def) const {
    auto* a = Find(name);
    return a ? a->f : def;
  }
  std::string String(const std::string& name, const std::string& def) const {
    auto* a = Find(name);
    return a ? a->s : def;
  }
  std::vector<int64_t> Ints(const std::string& name, std::vector<int64_t> def = {}) const {
    auto* a = Find(name);
    return a ? a->ints : def;
  }
  std::vector<float> Floats(const std::string& name, std::vector<float> def = {}) const {
    auto* a = Find(name);
    return a ? a->floats : def;
  }
  const Tensor* TensorAttr(const std::string& name) const {
    auto* a = Find(name);
    return a && a->kind == AttrValue::Kind::kTensor ? &a->t : nullptr;
  }
  const AttrValue* Graph(const std::string& name) const {
    auto* a = Find(name);
    return a && a->kind == AttrValue::Kind::kGraph ? a : nullptr;
  }
  const std::map<std::string, AttrValue>& all() const { return attrs_; }

 private:
  std::map<std::string, AttrValue> attrs_;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;        // "" for ai.onnx
  int opset = 0;             // the model's opset for this node's domain
  std::vector<int> inputs;   // value ids, -1 for an omitted optional input
  std::vector<int> outputs;  // value ids, -1 for an omitted optional output
  std::vector<std::string> input_names, output_names;
  Attributes attrs;
};

}  // namespace opscope::engine
