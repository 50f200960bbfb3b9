// Structure-aware libFuzzer target for model loading: inputs are ONNX ModelProtos, and the custom
// mutator edits them as protobufs (attribute values, graph input shapes and types, initializer
// shapes, types and payloads, node inputs, op types, the opset) instead of flipping bytes, so
// almost every mutant parses and reaches the checker, shape inference, planning and the kernels.
// The byte-level twin is model_fuzz.cc. Seed it with valid models (scripts/fuzz.sh does):
//   build/fuzz/src/engine/model_struct_fuzz CORPUS_DIR models/ tests/models/ tests/fuzz_corpus/..
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "engine/model_fuzz.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::mt19937_64;

// Integers that break arithmetic on shapes: zero and negative strides/sizes, off-by-one, values
// that overflow int32 or int64 when multiplied. Zero and -1 come up most often.
int64_t InterestingInt(Rng& rng) {
  static const int64_t kValues[] = {1,
                                    2,
                                    3,
                                    -2,
                                    7,
                                    64,
                                    255,
                                    256,
                                    65535,
                                    1 << 20,
                                    int64_t{1} << 31,
                                    (int64_t{1} << 31) - 1,
                                    int64_t{1} << 32,
                                    std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min()};
  switch (rng() % 8) {
    case 0:
    case 1:
      return 0;
    case 2:
      return -1;
    case 3:
      return static_cast<int64_t>(rng() % 17) - 8;
    default:
      return kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
  }
}

float InterestingFloat(Rng& rng) {
  static const float kValues[] = {0.0f,
                                  -0.0f,
                                  -1.0f,
                                  1.0f,
                                  1e-30f,
                                  1e30f,
                                  -1e30f,
                                  0.5f,
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN()};
  return kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
}

// Attribute names the engine's operators read (mutants add them to nodes that lack them).
const char* const kAttrNames[] = {
    "strides",      "pads",    "dilations", "kernel_shape", "group",  "axis",
    "axes",         "perm",    "keepdims",  "transA",       "transB", "alpha",
    "beta",         "epsilon", "auto_pad",  "ceil_mode",    "mode",   "output_padding",
    "output_shape", "split",   "to",        "starts",       "ends",   "blocksize"};
const char* const kOpTypes[] = {"Conv",
                                "MaxPool",
                                "AveragePool",
                                "Relu",
                                "Add",
                                "Mul",
                                "MatMul",
                                "Gemm",
                                "Reshape",
                                "Transpose",
                                "Concat",
                                "Softmax",
                                "Gather",
                                "Slice",
                                "Resize",
                                "ConvTranspose",
                                "BatchNormalization",
                                "Split",
                                "GlobalAveragePool",
                                "Flatten",
                                "Sigmoid",
                                "Squeeze",
                                "Unsqueeze",
                                "ReduceMean",
                                "LayerNormalization",
                                "Cast",
                                "Pad",
                                "Expand"};
const int kDataTypes[] = {onnx::TensorProto::FLOAT,
                          onnx::TensorProto::INT64,
                          onnx::TensorProto::INT32,
                          onnx::TensorProto::BOOL,
                          onnx::TensorProto::UINT8,
                          onnx::TensorProto::FLOAT16,
                          onnx::TensorProto::DOUBLE,
                          onnx::TensorProto::STRING,
                          0,
                          999};

template <typename T>
T Pick(Rng& rng, const T* values, size_t n) {
  return values[rng() % n];
}
#define PICK(rng, arr) Pick(rng, arr, sizeof(arr) / sizeof(arr[0]))

void MutateIntList(Rng& rng, google::protobuf::RepeatedField<int64_t>* ints) {
  switch (rng() % 6) {
    case 0:
    case 4:
      if (!ints->empty())
        ints->Set(static_cast<int>(rng() % ints->size()), InterestingInt(rng));
      else
        ints->Add(InterestingInt(rng));
      break;
    case 1:
    case 5: {  // every element the same (strides=[0,0], pads=[-1,...])
      int64_t v = InterestingInt(rng);
      for (int i = 0; i < ints->size(); ++i) ints->Set(i, v);
      if (ints->empty()) ints->Add(v);
      break;
    }
    case 2:
      ints->Add(InterestingInt(rng));
      break;
    default:
      if (!ints->empty()) ints->RemoveLast();
  }
}

void MutateAttribute(Rng& rng, onnx::AttributeProto* a) {
  // Mostly a new value of the attribute's own type; now and then any field or a wrong type.
  if (rng() % 8 != 0) {
    switch (a->type()) {
      case onnx::AttributeProto::INTS:
        MutateIntList(rng, a->mutable_ints());
        return;
      case onnx::AttributeProto::INT:
        a->set_i(InterestingInt(rng));
        return;
      case onnx::AttributeProto::FLOAT:
        a->set_f(InterestingFloat(rng));
        return;
      default:
        break;
    }
  }
  switch (rng() % 6) {
    case 0:
      a->set_i(InterestingInt(rng));
      if (a->type() == onnx::AttributeProto::UNDEFINED) a->set_type(onnx::AttributeProto::INT);
      break;
    case 1:
      a->set_f(InterestingFloat(rng));
      break;
    case 2:
      MutateIntList(rng, a->mutable_ints());
      break;
    case 3:
      if (a->floats_size() > 0)
        a->set_floats(static_cast<int>(rng() % a->floats_size()), InterestingFloat(rng));
      else
        a->add_floats(InterestingFloat(rng));
      break;
    case 4: {  // a type that disagrees with the payload
      static const onnx::AttributeProto::AttributeType kTypes[] = {
          onnx::AttributeProto::INT,      onnx::AttributeProto::INTS,
          onnx::AttributeProto::FLOAT,    onnx::AttributeProto::FLOATS,
          onnx::AttributeProto::STRING,   onnx::AttributeProto::TENSOR,
          onnx::AttributeProto::UNDEFINED};
      a->set_type(PICK(rng, kTypes));
      break;
    }
    default: {
      static const char* const kStrings[] = {"",        "SAME_UPPER", "VALID", "NOTSET",
                                             "nearest", "linear",     "cubic", "constant",
                                             "reflect", "x"};
      a->set_s(PICK(rng, kStrings));
      break;
    }
  }
}

void MutateShape(Rng& rng, onnx::TypeProto* type) {
  if (rng() % 5 == 0) {
    type->mutable_tensor_type()->set_elem_type(PICK(rng, kDataTypes));
    return;
  }
  onnx::TensorShapeProto* shape = type->mutable_tensor_type()->mutable_shape();
  switch (rng() % 4) {
    case 0:
      if (shape->dim_size() > 0) {
        auto* d = shape->mutable_dim(static_cast<int>(rng() % shape->dim_size()));
        d->set_dim_value(InterestingInt(rng));
      }
      break;
    case 1:
      if (shape->dim_size() > 0)
        shape->mutable_dim(static_cast<int>(rng() % shape->dim_size()))->set_dim_param("N");
      break;
    case 2:
      shape->add_dim()->set_dim_value(static_cast<int64_t>(rng() % 4));
      break;
    default:
      if (shape->dim_size() > 0)
        shape->mutable_dim()->RemoveLast();
      else
        type->mutable_tensor_type()->clear_shape();
  }
}

void MutateInitializer(Rng& rng, onnx::TensorProto* t) {
  switch (rng() % 6) {
    case 0:
      if (t->dims_size() > 0)
        t->set_dims(static_cast<int>(rng() % t->dims_size()), InterestingInt(rng));
      break;
    case 1:
      t->add_dims(static_cast<int64_t>(rng() % 4));
      break;
    case 2:
      if (t->dims_size() > 0) t->mutable_dims()->RemoveLast();
      break;
    case 3:
      t->set_data_type(PICK(rng, kDataTypes));
      break;
    case 4: {  // payload shorter or longer than the shape says
      std::string* raw = t->mutable_raw_data();
      if (!raw->empty() && rng() % 2)
        raw->resize(rng() % raw->size());
      else
        raw->append(static_cast<size_t>(1 + rng() % 16), '\x01');
      break;
    }
    default:  // move the values between raw_data and the typed fields
      if (t->has_raw_data()) {
        t->clear_raw_data();
        t->add_float_data(InterestingFloat(rng));
      } else {
        t->set_raw_data(std::string(4 * (1 + rng() % 4), '\0'));
      }
  }
}

void MutateNode(Rng& rng, onnx::GraphProto* g, onnx::NodeProto* n) {
  switch (rng() % 8) {
    case 0:
    case 1:
    case 2:
      if (n->attribute_size() > 0) {
        MutateAttribute(rng, n->mutable_attribute(static_cast<int>(rng() % n->attribute_size())));
        break;
      }
      [[fallthrough]];
    case 3: {
      onnx::AttributeProto* a = n->add_attribute();
      a->set_name(PICK(rng, kAttrNames));
      a->set_type(onnx::AttributeProto::INTS);
      int k = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < k; ++i) a->add_ints(InterestingInt(rng));
      break;
    }
    case 4:
      if (n->attribute_size() > 0)
        n->mutable_attribute()->DeleteSubrange(static_cast<int>(rng() % n->attribute_size()), 1);
      break;
    case 5:  // one input fewer, one more, or an optional input left empty
      if (n->input_size() > 0 && rng() % 2)
        n->mutable_input()->RemoveLast();
      else if (n->input_size() > 0 && rng() % 2)
        n->set_input(static_cast<int>(rng() % n->input_size()), "");
      else if (n->input_size() > 0)
        n->add_input(n->input(static_cast<int>(rng() % n->input_size())));
      else
        n->add_input(g->input_size() > 0 ? g->input(0).name() : "missing");
      break;
    case 6:
      n->set_op_type(PICK(rng, kOpTypes));
      break;
    default: {  // a second output, or an output name that another node also produces
      if (n->output_size() == 0) break;
      const onnx::NodeProto& other = g->node(static_cast<int>(rng() % g->node_size()));
      if (rng() % 2 || other.output_size() == 0)
        n->add_output(n->output(0) + "_extra");
      else
        n->set_output(0, other.output(0));
    }
  }
}

void MutateModel(Rng& rng, onnx::ModelProto* m) {
  onnx::GraphProto* g = m->mutable_graph();
  int what = static_cast<int>(rng() % 10);
  if (what < 5 && g->node_size() > 0) {
    MutateNode(rng, g, g->mutable_node(static_cast<int>(rng() % g->node_size())));
  } else if (what < 7 && g->input_size() > 0) {
    MutateShape(rng, g->mutable_input(static_cast<int>(rng() % g->input_size()))->mutable_type());
  } else if (what < 9 && g->initializer_size() > 0) {
    MutateInitializer(rng, g->mutable_initializer(static_cast<int>(rng() % g->initializer_size())));
  } else if (m->opset_import_size() > 0) {
    static const int64_t kOpsets[] = {1, 6, 7, 9, 11, 13, 17, 18, 21, 1000, -1, 0};
    m->mutable_opset_import(0)->set_version(PICK(rng, kOpsets));
  } else if (g->output_size() > 0) {
    MutateShape(rng, g->mutable_output(static_cast<int>(rng() % g->output_size()))->mutable_type());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  opscope::engine::FuzzLoadModel(data, size);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto m;
  // Inputs that do not parse (or a few that do, to keep byte-level variety) get libFuzzer's own
  // mutations.
  if (rng() % 16 == 0 || !m.ParseFromArray(data, static_cast<int>(size)) || !m.has_graph())
    return LLVMFuzzerMutate(data, size, max_size);
  int rounds = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < rounds; ++i) MutateModel(rng, &m);
  std::string out;
  if (!m.SerializeToString(&out) || out.size() > max_size)
    return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
