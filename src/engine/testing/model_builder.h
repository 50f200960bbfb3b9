// ModelBuilder: small ONNX models written to a temporary folder, for the tests of the
// session's pieces (graph_build_test, passes_*_test, planner_test, executor_test).
//
//   ModelBuilder b;
//   b.Input("x", {1, 3, 8, 8});
//   b.Node("Relu", {"x"}, {"y"}, "r");
//   b.Output("y", {1, 3, 8, 8});
//   std::string path = b.Save("relu.onnx");
#pragma once

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <stdlib.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/files.h"

namespace opscope::engine::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13) {
    m_.set_ir_version(8);
    auto* imp = m_.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    m_.mutable_graph()->set_name("test");
  }
  void Input(const std::string& name, std::vector<int64_t> shape,
             int type = onnx::TensorProto::FLOAT) {
    auto* v = m_.mutable_graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : shape) {
      if (d < 0)
        t->mutable_shape()->add_dim()->set_dim_param("batch");
      else
        t->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  void Output(const std::string& name, std::vector<int64_t> shape) {
    auto* v = m_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* sh = v->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int64_t d : shape) {
      if (d < 0)
        sh->add_dim()->set_dim_param("batch");
      else
        sh->add_dim()->set_dim_value(d);
    }
  }
  void Init(const std::string& name, std::vector<int64_t> shape, std::vector<float> data) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    for (float f : data) t->add_float_data(f);
  }
  void InitI64(const std::string& name, std::vector<int64_t> shape, std::vector<int64_t> data) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : shape) t->add_dims(d);
    for (int64_t v : data) t->add_int64_data(v);
  }
  onnx::NodeProto* Node(const std::string& op, std::vector<std::string> in,
                        std::vector<std::string> out, const std::string& name) {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
  // A float output of the given rank whose dims are left to shape inference.
  void OutputAnyShape(const std::string& name, size_t rank) {
    auto* v = m_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* sh = v->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (size_t i = 0; i < rank; ++i) sh->add_dim()->set_dim_param("d" + std::to_string(i));
  }
  static void FloatAttr(onnx::NodeProto* n, const std::string& name, float f) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(f);
  }
  static void IntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void IntsAttr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void StringAttr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  std::string Save(const std::string& file) {
    static std::string dir = [] {
      char tmpl[] = "/tmp/opscope_engine_test_XXXXXX";
      return std::string(mkdtemp(tmpl));
    }();
    std::string path = dir + "/" + file;
    std::ofstream(path, std::ios::binary) << m_.SerializeAsString();
    return path;
  }
  onnx::ModelProto& model() { return m_; }

  // A model read from `path` (a fuzz corpus input), to be edited and saved again.
  static ModelBuilder FromFile(const std::string& path) {
    ModelBuilder b;
    if (auto bytes = ReadFile(path); bytes.ok()) b.m_.ParseFromString(*bytes);
    return b;
  }
  // Cuts every main-graph node of the default domain to the outputs its operator has (libonnx's
  // schema at the model's opset) and drops the graph outputs no node computes any more: a fuzz
  // input that exercises a kernel but also names outputs the load now refuses.
  void TrimExtraOutputs() {
    int opset = 0;
    for (const auto& imp : m_.opset_import())
      if (imp.domain().empty()) opset = static_cast<int>(imp.version());
    auto* g = m_.mutable_graph();
    std::set<std::string> computed;
    for (const auto& in : g->input()) computed.insert(in.name());
    for (const auto& t : g->initializer()) computed.insert(t.name());
    for (auto& n : *g->mutable_node()) {
      const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
      if (s && n.domain().empty())
        while (n.output_size() > s->max_output()) n.mutable_output()->RemoveLast();
      for (const auto& o : n.output()) computed.insert(o);
    }
    auto* outs = g->mutable_output();
    for (int i = outs->size() - 1; i >= 0; --i)
      if (!computed.count(outs->Get(i).name())) outs->DeleteSubrange(i, 1);
  }

 private:
  onnx::ModelProto m_;
};

inline std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace opscope::engine::testing
