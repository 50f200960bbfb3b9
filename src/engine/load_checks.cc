#include "engine/load_checks.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/strings.h"
#include "opscope/node_name.h"

namespace opscope::engine {
namespace {

// What is known of a value before or between libonnx's inference: its rank, and for a 1-D
// value its length when that is fixed (-1 otherwise).
struct Known {
  int rank = 0;
  int64_t length = -1;
};
using RankMap = std::unordered_map<std::string, Known>;

std::string IntsToString(const std::vector<int64_t>& v) {
  std::vector<std::string> s;
  for (int64_t x : v) s.push_back(std::to_string(x));
  return "[" + Join(s, ", ") + "]";
}

bool DefaultDomain(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx";
}

bool IsConstant(const onnx::NodeProto& n) {
  return n.op_type() == "Constant" && n.output_size() == 1 && DefaultDomain(n);
}

// The largest stride, dilation, kernel size, pad or block size accepted: larger ones are surely
// corrupt, and smaller bounds keep libonnx's shape arithmetic (int64) from overflowing.
constexpr int64_t kMaxAttrSize = (int64_t{1} << 31) - 1;

const std::set<std::string> kConvs = {"Conv", "ConvInteger", "QLinearConv", "ConvTranspose"};
const std::set<std::string> kPools = {"MaxPool", "AveragePool", "LpPool", "MaxUnpool"};

// The most axes an output may get from the length of a shape input (Expand's shape,
// ConstantOfShape's input). ONNX sets no limit; no model has more than a handful, and libonnx
// 1.12 allocates one dimension record per axis before anything checks the count.
constexpr int64_t kMaxShapeInputLength = 1024;

// Nodes whose libonnx 1.12 shape inference indexes per-axis lists and the weight's dims by the
// input's rank unchecked (convPoolShapeInference, convTransposeShapeInference, maxUnpool, Gemm's
// A and B dims, LayerNormalization's axis), or makes the output's rank the length of a shape
// input (Expand, ConstantOfShape): their inputs' ranks and lengths must be checked before
// libonnx infers them.
bool RankSensitive(const onnx::NodeProto& n) {
  return DefaultDomain(n) && (kConvs.count(n.op_type()) > 0 || kPools.count(n.op_type()) > 0 ||
                              n.op_type() == "LayerNormalization" || n.op_type() == "Gemm" ||
                              n.op_type() == "Expand" || n.op_type() == "ConstantOfShape");
}

// True when a subgraph of `n` (If/Loop/Scan bodies, at any depth) holds a rank-sensitive node.
bool SubgraphHasRankSensitive(const onnx::NodeProto& n) {
  auto in_graph = [](const onnx::GraphProto& g) {
    for (const auto& m : g.node())
      if (RankSensitive(m) || SubgraphHasRankSensitive(m)) return true;
    return false;
  };
  for (const auto& a : n.attribute()) {
    if (a.has_g() && in_graph(a.g())) return true;
    for (const auto& g : a.graphs())
      if (in_graph(g)) return true;
  }
  return false;
}

void NoteRank(const onnx::ValueInfoProto& v, RankMap* ranks) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
  const onnx::TensorShapeProto& shape = v.type().tensor_type().shape();
  Known k;
  k.rank = shape.dim_size();
  if (k.rank == 1 && shape.dim(0).has_dim_value()) k.length = shape.dim(0).dim_value();
  (*ranks)[v.name()] = k;
}

void NoteTensor(const std::string& name, const onnx::TensorProto& t, RankMap* ranks, bool replace) {
  Known k;
  k.rank = t.dims_size();
  if (k.rank == 1) k.length = t.dims(0);
  if (replace)
    (*ranks)[name] = k;
  else
    ranks->emplace(name, k);
}

// Ranks known before any inference: graph inputs, initializers, Constant values (libonnx infers
// a Constant before any consumer).
RankMap InitialRanks(const onnx::GraphProto& g) {
  RankMap ranks;
  for (const auto& v : g.input()) NoteRank(v, &ranks);
  for (const auto& t : g.initializer()) NoteTensor(t.name(), t, &ranks, true);
  for (const auto& n : g.node())
    if (IsConstant(n))
      for (const auto& a : n.attribute())
        if (a.name() == "value" && a.has_t()) NoteTensor(n.output(0), a.t(), &ranks, false);
  return ranks;
}

// Checks one node (see CheckNodeAttributes) against the ranks known so far.
Status CheckNode(const onnx::NodeProto& n, int index, const RankMap& ranks,
                 const std::string& path) {
  const std::string& op = n.op_type();
  std::string name = NodeName(n.name(), op, index);
  std::string where = path + ": node '" + name + "' (" + op + ")";
  // Any node: an attribute given twice would be checked here in one form and used by the
  // kernel in the other (the checker, which refuses it, does not run past opset 17).
  std::set<std::string> seen;
  for (const auto& a : n.attribute())
    if (!seen.insert(a.name()).second)
      return InvalidArgument(where + ": attribute '" + a.name() + "' is given twice");
  if (!DefaultDomain(n)) return Status::Ok();
  if (op == "LayerNormalization") {
    // libonnx 1.12's inference normalises `axis` by X's rank and indexes X's dims with it
    // unchecked: a scalar X (axis -1 + 0) is a SEGV there (a model_struct_fuzz finding).
    auto it = n.input_size() > 0 ? ranks.find(n.input(0)) : ranks.end();
    if (it == ranks.end()) return Status::Ok();
    const int64_t r = it->second.rank;
    int64_t axis = -1;
    for (const auto& a : n.attribute())
      if (a.name() == "axis") axis = a.i();
    if (r == 0) return InvalidArgument(where + ": input X is a scalar; it needs rank >= 1");
    if (axis < -r || axis >= r)
      return InvalidArgument(where + ": attribute axis = " + std::to_string(axis) +
                             " is outside [-" + std::to_string(r) + ", " + std::to_string(r) +
                             ") for X of rank " + std::to_string(r));
    return Status::Ok();
  }
  if (op == "Gemm") {
    // A and B are matrices in every opset; libonnx 1.12's Gemm-6 inference reads their dims
    // unchecked (a scalar A is a null dereference: a model_struct_fuzz finding).
    for (int k = 0; k < 2 && k < n.input_size(); ++k) {
      auto it = ranks.find(n.input(k));
      if (it != ranks.end() && it->second.rank != 2)
        return InvalidArgument(where + ": input " + (k == 0 ? "A" : "B") + " ('" + n.input(k) +
                               "') has rank " + std::to_string(it->second.rank) +
                               "; Gemm multiplies 2-D matrices");
    }
    return Status::Ok();
  }
  if (op == "Expand" || op == "ConstantOfShape") {
    // libonnx 1.12 gives the output one axis per element of the shape input when only that
    // input's length is known: a shape input of length 2^31 is 2^31 dimension records, an
    // out-of-memory abort (a model_struct_fuzz finding, Expand(x, x) with x of shape [2^31]).
    const int k = op == "Expand" ? 1 : 0;
    auto it = k < n.input_size() ? ranks.find(n.input(k)) : ranks.end();
    if (it != ranks.end() && it->second.rank == 1 && it->second.length > kMaxShapeInputLength)
      return InvalidArgument(where + ": shape input '" + n.input(k) + "' has " +
                             std::to_string(it->second.length) +
                             " elements, so the output would have as many axes; at most " +
                             std::to_string(kMaxShapeInputLength) + " are accepted");
    return Status::Ok();
  }
  const bool conv = kConvs.count(op) > 0, pool = kPools.count(op) > 0;
  const bool block = op == "DepthToSpace" || op == "SpaceToDepth";
  if (!conv && !pool && !block) return Status::Ok();
  auto bad = [&](const onnx::AttributeProto& a, const std::string& value, const std::string& why) {
    return InvalidArgument(where + ": attribute " + a.name() + " = " + value + ": " + why);
  };
  auto find = [&](const std::string& attr) -> const onnx::AttributeProto* {
    for (const auto& a : n.attribute())
      if (a.name() == attr) return &a;
    return nullptr;
  };
  auto check_int = [&](const std::string& attr, int64_t lo) -> Status {
    const onnx::AttributeProto* a = find(attr);
    if (!a) return Status::Ok();
    if (a->type() != onnx::AttributeProto::INT)
      return bad(*a, "(not an integer)", "must be a single integer");
    if (a->i() < lo || a->i() > kMaxAttrSize)
      return bad(*a, std::to_string(a->i()),
                 "must be between " + std::to_string(lo) + " and " + std::to_string(kMaxAttrSize));
    return Status::Ok();
  };
  if (block) return check_int("blocksize", 1);
  if (conv) OPSCOPE_RETURN_IF_ERROR(check_int("group", 1));
  // Spatial rank: from the data input, else the weight, else the first list attribute given.
  int spatial = -1;
  std::string spatial_from;
  const int w_input = op == "QLinearConv" ? 3 : 1;
  auto rank_of = [&](int i) {
    if (i >= n.input_size()) return -1;
    auto it = ranks.find(n.input(i));
    return it == ranks.end() ? -1 : it->second.rank;
  };
  if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose" || op == "QLinearConv") {
    // libonnx 1.12's inference indexes the per-axis lists (dilations, strides, pads, kernel
    // shape taken from the weight's dims 2..) by the input's spatial axes and reads the
    // weight's dim 1 without checking either (a rank-2 input is a null dereference); its Conv
    // inference segfaults when the weight's rank differs from the input's.
    const int r = rank_of(0), rw = rank_of(w_input);
    const std::string w_name = w_input < n.input_size() ? n.input(w_input) : "";
    auto rank_error = [&](const std::string& what) {
      return InvalidArgument(where + ": " + what + "; " + op +
                             " needs input and weight of the same rank, at least 3 (N, C and "
                             "one or more spatial axes)");
    };
    if (r >= 0 && r < 3)
      return rank_error("input '" + n.input(0) + "' has rank " + std::to_string(r));
    if (rw >= 0 && rw < 3)
      return rank_error("weight '" + w_name + "' has rank " + std::to_string(rw));
    if (r >= 0 && rw >= 0 && r != rw)
      return rank_error("input '" + n.input(0) + "' has rank " + std::to_string(r) +
                        " but weight '" + w_name + "' has rank " + std::to_string(rw));
  }
  if (int r = rank_of(0); r >= 2) {
    spatial = r - 2;
    spatial_from = "input '" + n.input(0) + "' has rank " + std::to_string(r);
  } else if (int rw = conv ? rank_of(w_input) : -1; rw >= 2) {
    spatial = rw - 2;
    spatial_from = "weight '" + n.input(w_input) + "' has rank " + std::to_string(rw);
  }
  struct ListRule {
    const char* name;
    int64_t lo;
    int per_dim;  // values per spatial dimension
  };
  static const ListRule kRules[] = {{"kernel_shape", 1, 1},   {"strides", 1, 1},
                                    {"dilations", 1, 1},      {"pads", 0, 2},
                                    {"output_padding", 0, 1}, {"output_shape", 1, 1}};
  for (const ListRule& rule : kRules) {
    const onnx::AttributeProto* a = find(rule.name);
    if (!a) continue;
    if (a->type() != onnx::AttributeProto::INTS)
      return bad(*a, "(not a list of integers)", "must be a list of integers");
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    for (int64_t x : v)
      if (x < rule.lo || x > kMaxAttrSize)
        return bad(*a, IntsToString(v),
                   std::string("every value must be between ") + std::to_string(rule.lo) + " and " +
                       std::to_string(kMaxAttrSize));
    if (spatial < 0) {
      if (v.size() % rule.per_dim != 0)
        return bad(*a, IntsToString(v), "needs 2 values (begin and end) per spatial dimension");
      spatial = static_cast<int>(v.size()) / rule.per_dim;
      spatial_from =
          std::string("attribute ") + rule.name + " has " + std::to_string(v.size()) + " values";
      continue;
    }
    const size_t want = static_cast<size_t>(spatial) * rule.per_dim;
    if (v.size() != want)
      return bad(*a, IntsToString(v),
                 "has " + std::to_string(v.size()) + " values, " + std::to_string(want) +
                     " expected (" + (rule.per_dim == 2 ? "begin and end for " : "one for ") +
                     "each of " + std::to_string(spatial) + " spatial dimensions: " + spatial_from +
                     ")");
  }
  return Status::Ok();
}

Status CheckSparse(const onnx::SparseTensorProto& s, const std::string& what) {
  (void)s;
  return Unsupported(what +
                     " is a sparse tensor, which the engine does not support; store it "
                     "as a dense tensor (onnx.numpy_helper.from_array of the dense array)");
}

}  // namespace

// libonnx's messages span several lines ("...\n\n==> Context: Bad node spec for node. Name: n0
// OpType: Relu"); errors are one line, so the lines are joined with "; " (a space after a line
// that ends in ':', "input 'x' of node:\nname: n0 OpType: Relu").
std::string OneLine(const std::string& msg) {
  std::string out;
  for (const std::string& line : Split(msg, '\n')) {
    std::string t = Trim(line);
    if (t.empty()) continue;
    if (!out.empty()) out += out.back() == ':' ? " " : "; ";
    out += t;
  }
  return out;
}

Status CheckSparseTensors(const onnx::GraphProto& g, const std::string& path) {
  for (const auto& s : g.sparse_initializer()) {
    const std::string name = s.values().name();
    OPSCOPE_RETURN_IF_ERROR(CheckSparse(s, path + ": sparse initializer '" + name + "'"));
  }
  int index = 0;
  for (const auto& n : g.node()) {
    std::string name = NodeName(n.name(), n.op_type(), index);
    ++index;
    for (const auto& a : n.attribute()) {
      std::string what =
          path + ": node '" + name + "' (" + n.op_type() + ") attribute '" + a.name() + "'";
      if (a.has_sparse_tensor()) OPSCOPE_RETURN_IF_ERROR(CheckSparse(a.sparse_tensor(), what));
      for (const auto& s : a.sparse_tensors()) OPSCOPE_RETURN_IF_ERROR(CheckSparse(s, what));
      if (a.has_g()) OPSCOPE_RETURN_IF_ERROR(CheckSparseTensors(a.g(), path));
      for (const auto& sub : a.graphs()) OPSCOPE_RETURN_IF_ERROR(CheckSparseTensors(sub, path));
    }
  }
  return Status::Ok();
}

// More outputs than the operator has: libonnx's checker refuses them, but it does not run past
// the last opset it knows (17 for 1.12), and kernels compute only the outputs their operator
// defines, leaving the others without data for whoever reads them (a Transpose named three
// outputs in a model_struct_fuzz input). The schema is the newest one libonnx knows at or below
// the model's opset: to our knowledge no operator gained outputs in opsets 18-21 (not checked
// against a newer libonnx; one that did would be refused, naming the older schema). Inputs some
// did gain (ReduceMean-18's axes, Pad-18's axes), so they are not checked this way. Operators
// libonnx does not know (Gelu-20, other domains) are left to the executor, which refuses an
// output that is read but was not produced.
Status CheckOutputCount(const onnx::NodeProto& n, int index, int opset, const std::string& path) {
  if (!DefaultDomain(n)) return Status::Ok();
  int count = n.output_size();
  while (count > 0 && n.output(count - 1).empty()) --count;  // trailing omitted outputs
  if (count == 0) return Status::Ok();
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
  if (!schema || count <= schema->max_output()) return Status::Ok();
  const std::string name = NodeName(n.name(), n.op_type(), index);
  return InvalidArgument(path + ": node '" + name + "' (" + n.op_type() + ") names " +
                         std::to_string(count) + " outputs, but " + n.op_type() + "-" +
                         std::to_string(schema->SinceVersion()) + " has " +
                         (schema->min_output() == schema->max_output() ? "" : "at most ") +
                         std::to_string(schema->max_output()));
}

// Checks the size attributes of convolutions, pools and DepthToSpace/SpaceToDepth before
// libonnx's shape inference sees them: it divides by strides and by blocksize squared unchecked
// (strides=[0,0] is SIGFPE in libonnx 1.12), and the kernels rely on them too. Lengths are
// checked against the spatial rank where it is known before inference (graph inputs and
// initializers; value_info may be stale), otherwise against each other. InferShapesChecked
// checks the rank-sensitive nodes again with the ranks libonnx inferred.
Status CheckNodeAttributes(const onnx::GraphProto& g, const std::string& path, int opset) {
  const RankMap ranks = InitialRanks(g);
  int index = 0;
  for (const auto& n : g.node()) {
    OPSCOPE_RETURN_IF_ERROR(CheckOutputCount(n, index, opset, path));
    OPSCOPE_RETURN_IF_ERROR(CheckNode(n, index++, ranks, path));
    // libonnx's Scan shape inference fills a vector of num_scan_inputs axes before checking it
    // against the inputs: 2^31 asked for 16 GiB (model_struct_fuzz). At most the node's inputs.
    if (n.op_type() == "Scan" && (n.domain().empty() || n.domain() == "ai.onnx"))
      for (const auto& a : n.attribute())
        if (a.name() == "num_scan_inputs" && (a.i() < 1 || a.i() > n.input_size()))
          return InvalidArgument(path + ": node '" + n.name() +
                                 "' (Scan): num_scan_inputs = " + std::to_string(a.i()) +
                                 " but the node has " + std::to_string(n.input_size()) + " inputs");
    // Subgraphs (If/Loop/Scan bodies) are checked the same way, with their own ranks.
    for (const auto& a : n.attribute())
      if (a.has_g()) OPSCOPE_RETURN_IF_ERROR(CheckNodeAttributes(a.g(), path, opset));
  }
  return Status::Ok();
}

Status InferShapesChecked(onnx::ModelProto& model, const std::string& path) {
  onnx::GraphProto* g = model.mutable_graph();
  // The graph's nodes are parked in `all` and lent back to the graph one segment at a time
  // (the pointers move, nothing is copied); they go back in their order whatever happens.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> all;
  all.Swap(g->mutable_node());
  struct Restore {
    onnx::GraphProto* g;
    google::protobuf::RepeatedPtrField<onnx::NodeProto>* all;
    ~Restore() {
      auto* nodes = g->mutable_node();
      while (!nodes->empty()) (void)nodes->ReleaseLast();
      nodes->Swap(all);
    }
  } restore{g, &all};

  std::unordered_map<std::string, onnx::NodeProto*> constant_of;  // output -> Constant node
  for (auto& n : all)
    if (IsConstant(n)) constant_of[n.output(0)] = &n;
  RankMap ranks = InitialRanks(*g);
  for (auto& n : all)
    if (IsConstant(n))
      for (const auto& a : n.attribute())
        if (a.name() == "value" && a.has_t()) NoteTensor(n.output(0), a.t(), &ranks, false);

  int begin = 0;
  std::unordered_set<std::string> pending;  // outputs of the segment not inferred yet
  auto infer = [&](int end) -> Status {
    if (end <= begin) return Status::Ok();
    auto* nodes = g->mutable_node();
    // libonnx reads a Constant's value as input data (Reshape's shape, ...) only when the
    // Constant is in the graph it infers: each segment gets the Constants its nodes read.
    std::unordered_set<const onnx::NodeProto*> lent;
    for (int i = begin; i < end; ++i)
      for (const auto& in : all.Get(i).input()) {
        auto it = constant_of.find(in);
        if (it != constant_of.end() && lent.insert(it->second).second)
          nodes->AddAllocated(it->second);
      }
    // A node whose subgraph holds a conv or pool is not inferred at all: libonnx would infer the
    // subgraph in one go, with ranks no one checked. Its outputs stay untyped, which later
    // nodes' inference handles (the engine does not use the inferred types; each kernel checks
    // the real shapes when it runs).
    for (int i = begin; i < end; ++i)
      if (!lent.count(&all.Get(i)) && !SubgraphHasRankSensitive(all.Get(i)))
        nodes->AddAllocated(all.Mutable(i));
    Status st;
    try {
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 0, false));
    } catch (const std::exception& e) {
      st = InvalidArgument(path + ": ONNX shape inference failed: " + OneLine(e.what()));
    }
    while (!nodes->empty()) (void)nodes->ReleaseLast();
    begin = end;
    pending.clear();
    for (const auto& v : g->value_info()) NoteRank(v, &ranks);
    for (const auto& v : g->output()) NoteRank(v, &ranks);
    return st;
  };

  for (int i = 0; i < all.size(); ++i) {
    const onnx::NodeProto& n = all.Get(i);
    if (RankSensitive(n)) {
      bool from_segment = false;
      for (const auto& in : n.input()) from_segment = from_segment || pending.count(in) > 0;
      if (from_segment) OPSCOPE_RETURN_IF_ERROR(infer(i));
      OPSCOPE_RETURN_IF_ERROR(CheckNode(n, i, ranks, path));
    }
    for (const auto& out : n.output()) pending.insert(out);
  }
  return infer(all.size());
}

}  // namespace opscope::engine
