// The model join on transformer graphs: ONNX Runtime 1.30 (CPU EP, level "all", 1 thread,
// 3 runs, tools/ort_profile.js) on tests/models/bert_tiny.onnx and vit_tiny.onnx
// (tools/gen_transformer_models.py). ORT's level-2 transformers replace subgraphs by kernels
// named after no node of them ("Gelu", "SkipLayerNormalization_token_67", "GPT2Gelu"), or after
// one node of a bigger group ("<MatMul>/MatMulAddFusion", "<Mul>/QuickGeluFusion/"); every node
// they ran must get its share of the row's time.
#include "importers/model_join.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/strings.h"
#include "base/testing/golden.h"
#include "importers/importer.h"
#include "profile/profile.h"

namespace opscope::importers {
namespace {

std::string Data(const std::string& name) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/src/importers/testdata/" + name;
}
std::string TestModel(const std::string& name) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/tests/models/" + name;
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double Total(const profile::Profile& p) {
  double t = 0;
  for (const auto& op : p.ops) t += Mean(op.runs_ms);
  return t;
}

struct Joined {
  profile::Profile p;
  JoinSummary sum;
  double before = 0;
  std::map<std::string, const profile::OpRecord*> by;
};

// The profile FILE (or, when TEXT is given, that text) joined to tests/models/MODEL.
void Join(const std::string& file, const std::string& model, Joined* j,
          const std::string* text = nullptr) {
  auto p = text ? Import(*Source::FromBytes(*text, "t.json"), FindFormat("ort"))
                : ImportFile(Data(file));
  ASSERT_TRUE(p.ok()) << p.status().message();
  j->p = std::move(p).value();
  j->before = Total(j->p);
  ModelJoinOptions o;
  o.model_path = TestModel(model);
  o.runtime = "ONNX Runtime";
  auto sum = JoinModel(&j->p, o);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_TRUE(sum->costs) << sum->engine_note;
  j->sum = *sum;
  for (const auto& op : j->p.ops) j->by[op.name] = &op;
  EXPECT_NEAR(Total(j->p), j->before, 1e-9);  // time moved, none made or lost
}

// Every node of the model and what became of it: the row that timed it and its share of that
// row, as a golden (the checkout's path as $SRC).
void GoldenOf(const std::string& name, const Joined& j) {
  std::string out = fmt::format("matched_share {:.4f} rows {} matched_rows {} nodes {} of {}\n",
                                j.sum.matched_share, j.sum.rows, j.sum.matched_rows,
                                j.sum.nodes_matched, j.sum.model_nodes);
  for (const auto& [row, share] : j.sum.unmatched)
    out += fmt::format("unmatched '{}' {:.4f}\n", row, share);
  for (const auto& op : j.p.ops)
    out += fmt::format("{} | {} | {} | {} | {:.5f} ms | {}\n", op.name, op.op_type,
                       profile::OpStatusName(op.status), op.step, Mean(op.runs_ms), op.attribution);
  const std::string src = OPSCOPE_SOURCE_DIR;
  for (size_t at; (at = out.find(src)) != std::string::npos;) out.replace(at, src.size(), "$SRC");
  opscope::testing::ExpectMatchesGolden(Data("golden/" + name + ".txt"), out);
}

void ExpectFusedInto(const Joined& j, const std::vector<std::string>& nodes,
                     const std::string& row) {
  for (const auto& n : nodes) {
    auto it = j.by.find(n);
    ASSERT_NE(it, j.by.end()) << n << " has no time (should be part of '" << row << "')";
    EXPECT_EQ(it->second->status, profile::OpStatus::kFused) << n;
    // Its step is the row (with the rows ORT inserted for it, charged to a group's first node).
    const std::string& step = it->second->step;
    const std::string parts = " | " + step + " | ";
    EXPECT_NE(parts.find(" | " + row + " | "), std::string::npos) << n << ": " << step;
    EXPECT_GE(Mean(it->second->runs_ms), 0) << n;
    EXPECT_NE(it->second->attribution.find("split by estimated cost"), std::string::npos) << n;
  }
}

// BERT (opset 14, LayerNorm and GELU decomposed): ORT makes SkipLayerNormalization (the residual
// Add and the nine LayerNorm nodes; the embeddings' Add and LayerNorm around a constant-folded
// position Gather), Gelu (Div, Erf, Add, Mul, Mul), Gemm from MatMul+Add with inserted Reshapes,
// some merged with the model's Reshapes ("gemm_output_reshape_new_reshape"), FusedMatMul (the
// scores MatMul and its Div) and FusedGemm (the pooler's MatMul, Add and Tanh). Before: 66.3% of
// the time on 39 of 124 nodes, 31 rows unmatched, and no FLOPs (the engine's planning run with
// random token types, 0..7, indexed past the table of 2).
TEST(ModelJoinTransformers, OrtBertFusionsCreditEveryNodeTheyRan) {
  Joined j;
  Join("ort_bert_tiny_all.json", "bert_tiny.onnx", &j);
  EXPECT_GE(j.sum.matched_share, 0.95);
  EXPECT_DOUBLE_EQ(j.sum.matched_share, 1.0);
  EXPECT_TRUE(j.sum.unmatched.empty());
  // The position embedding's Gather reads constants only: ORT folded it when it loaded the model.
  EXPECT_EQ(j.sum.nodes_matched, j.sum.model_nodes - 1);
  EXPECT_EQ(j.by.count("/embeddings/position_embeddings/Gather"), 0u);
  const std::vector<std::string> ln = {"ReduceMean", "Sub", "Pow", "ReduceMean_1", "Add",
                                       "Sqrt",       "Div", "Mul", "Add_1"};
  std::vector<std::string> skip0 = {"/encoder/layer.0/attention/output/Add"};
  for (const auto& n : ln) skip0.push_back("/encoder/layer.0/attention/output/LayerNorm/" + n);
  ExpectFusedInto(j, skip0, "SkipLayerNormalization_token_67");
  std::vector<std::string> emb = {"/embeddings/Add_1"};
  for (const auto& n : ln) emb.push_back("/embeddings/LayerNorm/" + n);
  ExpectFusedInto(j, emb, "SkipLayerNormalization");
  std::vector<std::string> last = {"/encoder/layer.1/output/Add"};
  for (const auto& n : ln) last.push_back("/encoder/layer.1/output/LayerNorm/" + n);
  ExpectFusedInto(j, last, "SkipLayerNormalization_token_70");
  for (int layer : {0, 1}) {
    const std::string g = fmt::format("/encoder/layer.{}/intermediate/intermediate_act_fn/", layer);
    ExpectFusedInto(j, {g + "Div", g + "Erf", g + "Add", g + "Mul", g + "Mul_1"},
                    layer == 0 ? "Gelu" : "Gelu_token_66");
  }
  const std::string a = "/encoder/layer.0/attention/self/";
  ExpectFusedInto(j, {a + "query/MatMul", a + "query/Add"}, a + "query/MatMul/MatMulAddFusion");
  ExpectFusedInto(j, {a + "MatMul", a + "Div"}, a + "MatMul/MatMulScaleFusion/");
  ExpectFusedInto(j, {"/pooler/dense/MatMul", "/pooler/dense/Add", "/pooler/activation/Tanh"},
                  "fused /pooler/dense/MatMul/MatMulAddFusion");
  // A model Reshape merged with MatMulAddFusion's output Reshape: one node, its own type.
  ASSERT_TRUE(j.by.count(a + "Reshape_1"));
  EXPECT_EQ(j.by[a + "Reshape_1"]->status, profile::OpStatus::kExecuted);
  EXPECT_EQ(j.by[a + "Reshape_1"]->step, "gemm_output_reshape_new_reshape");
  EXPECT_EQ(j.by[a + "Reshape_3"]->step, a + "Reshape_3_new_reshape");
  // MatMulAddFusion's own Reshapes are ORT's, charged to their Gemm's MatMul.
  EXPECT_NE(j.by[a + "query/MatMul"]->attribution.find("plus 'gemm_input_reshape_token_2'"),
            std::string::npos)
      << j.by[a + "query/MatMul"]->attribution;
  EXPECT_NE(j.by["/embeddings/LayerNorm/Sqrt"]->attribution.find("matched by structure"),
            std::string::npos);
  GoldenOf("ort_bert_tiny_all.model", j);
}

// ViT (opset 17: the LayerNormalization op): ORT keeps the pre-norm LayerNormalizations, makes
// FastGelu ("GPT2Gelu") of block 0's tanh GELU and QuickGelu of block 1's x * sigmoid(1.702 x)
// (named after its last Mul), a Split of the three Gathers of q, k and v
// (GatherSliceToSplitFusion, plus inserted Squeezes and Transposes), FusedMatMul of the scores
// MatMul and q's scale, and SkipLayerNormalization of the last residual Add and the final norm.
// Before: 80.2% of the time on 35 of 68 nodes, 24 rows unmatched.
TEST(ModelJoinTransformers, OrtVitFusionsCreditEveryNodeTheyRan) {
  Joined j;
  Join("ort_vit_tiny_all.json", "vit_tiny.onnx", &j);
  EXPECT_GE(j.sum.matched_share, 0.95);
  EXPECT_DOUBLE_EQ(j.sum.matched_share, 1.0);
  EXPECT_TRUE(j.sum.unmatched.empty());
  const std::string act0 = "/blocks.0/mlp/act/", act1 = "/blocks.1/mlp/act/";
  ExpectFusedInto(j,
                  {act0 + "Pow", act0 + "Mul", act0 + "Add", act0 + "Mul_1", act0 + "Tanh",
                   act0 + "Add_1", act0 + "Mul_2", act0 + "Mul_3"},
                  "GPT2Gelu");
  ExpectFusedInto(j, {act1 + "Mul", act1 + "Sigmoid", act1 + "Mul_1"},
                  act1 + "Mul_1/QuickGeluFusion/");
  ExpectFusedInto(j, {"/blocks.1/Add_1", "/norm/LayerNormalization"}, "SkipLayerNormalization");
  for (int b : {0, 1}) {
    const std::string a = fmt::format("/blocks.{}/attn/", b);
    ExpectFusedInto(j, {a + "Gather", a + "Gather_1", a + "Gather_2"},
                    a + "Gather_2/GatherSliceToSplitFusion");
    ExpectFusedInto(j, {a + "MatMul", a + "Mul"}, a + "MatMul/MatMulScaleFusion/");
    ExpectFusedInto(j, {a + "qkv/MatMul", a + "qkv/Add"}, a + "qkv/MatMul/MatMulAddFusion");
    ASSERT_TRUE(j.by.count(a + "Reshape"));
    EXPECT_EQ(j.by[a + "Reshape"]->step, b == 0 ? "gemm_output_reshape_new_reshape"
                                                : "gemm_output_reshape_token_23_new_reshape");
  }
  // ORT's transpose optimizer moved the [2,0,3,1,4] Transpose of q, k, v behind the Split: what
  // ran are the inserted Transposes, charged to the rows they serve; the model's node has no row.
  EXPECT_EQ(j.by.count("/blocks.0/attn/Transpose"), 0u);
  EXPECT_EQ(j.sum.nodes_matched, j.sum.model_nodes - 2);
  GoldenOf("ort_vit_tiny_all.model", j);
}

// ORT 1.30 fuses no Attention on these exports (MatMulAddFusion turns the projections into Gemms
// first), so the Attention kind is checked on the BERT profile with layer 0's self-attention rows
// replaced by one Attention row, as AttentionFusion would write it: it takes the Q/K/V
// projections, the scores, the mask Add, the Softmax and the context up to the last Reshape; a
// second fused row that no subgraph is left for stays unmatched, under its name.
TEST(ModelJoinTransformers, AttentionRowTakesItsSubgraphAndALeftoverRowIsNamed) {
  std::string text = ReadFile(Data("ort_bert_tiny_all.json")).value();
  std::vector<std::string> lines = Split(text, '\n');
  std::string kept;
  const std::vector<std::string> gone = {"/encoder/layer.0/attention/self/",
                                         "\"gemm_input_reshape_kernel_time",
                                         "\"gemm_input_reshape_token_2_kernel",
                                         "\"gemm_input_reshape_token_8_kernel",
                                         "\"gemm_output_reshape_new_reshape_kernel",
                                         "\"gemm_output_reshape_token_5_new_reshape_kernel",
                                         "\"gemm_output_reshape_token_11_new_reshape_kernel"};
  int dropped = 0;
  for (const auto& line : lines) {
    bool drop = false;
    for (const auto& g : gone) drop = drop || line.find(g) != std::string::npos;
    if (line.find("\"cat\" : \"Node\"") == std::string::npos) drop = false;
    if (drop) {
      ++dropped;
      continue;
    }
    if (line == "]" || line.empty()) continue;
    kept += line + "\n";
  }
  ASSERT_GT(dropped, 30);
  // One Attention and one BiasSoftmax event per run, inside that run's model_run interval.
  std::vector<std::pair<long, long>> runs;
  for (const auto& line : lines) {
    if (line.find("\"name\" :\"model_run\"") == std::string::npos) continue;
    auto num = [&](const char* key) {
      size_t at = line.find(key);
      return std::stol(line.substr(at + std::string(key).size()));
    };
    runs.push_back({num("\"ts\" :"), num("\"dur\" :")});
  }
  ASSERT_EQ(runs.size(), 3u);
  if (EndsWith(kept, ",\n")) kept.erase(kept.size() - 2, 1);
  for (const auto& [ts, dur] : runs) {
    kept += fmt::format(
        ",{{\"cat\" : \"Node\",\"pid\" :1,\"tid\" :1,\"dur\" :60,\"ts\" :{},\"ph\" : \"X\","
        "\"name\" :\"Attention_kernel_time\",\"args\" : {{\"op_name\" : \"Attention\","
        "\"node_index\" : \"190\",\"input_type_shape\" : [{{\"float\":[1,16,64]}},"
        "{{\"float\":[64,192]}},{{\"float\":[192]}},{{\"float\":[1,1,1,16]}}],"
        "\"output_type_shape\" : [{{\"float\":[1,16,64]}}]}}}}\n",
        ts + 1);
    kept += fmt::format(
        ",{{\"cat\" : \"Node\",\"pid\" :1,\"tid\" :1,\"dur\" :5,\"ts\" :{},\"ph\" : \"X\","
        "\"name\" :\"BiasSoftmax_token_3_kernel_time\",\"args\" : {{\"op_name\" : "
        "\"BiasSoftmax\",\"node_index\" : \"191\",\"input_type_shape\" : "
        "[{{\"float\":[1,4,16,16]}},{{\"float\":[1,1,1,16]}}],"
        "\"output_type_shape\" : [{{\"float\":[1,4,16,16]}}]}}}}\n",
        ts + dur - 2);
  }
  kept += "]\n";
  Joined j;
  Join("", "bert_tiny.onnx", &j, &kept);
  const std::string a = "/encoder/layer.0/attention/self/";
  ExpectFusedInto(j,
                  {a + "query/MatMul", a + "query/Add", a + "key/MatMul", a + "value/Add",
                   a + "Reshape", a + "Transpose_1", a + "MatMul", a + "Div", a + "Add",
                   a + "Softmax", a + "MatMul_1", a + "Transpose_3", a + "Reshape_3"},
                  "Attention");
  EXPECT_NE(j.by[a + "Softmax"]->attribution.find("matched by structure"), std::string::npos);
  // The mask's nodes have rows of their own, layer 1's Softmax too: nothing is left for it.
  ASSERT_EQ(j.sum.unmatched.size(), 1u);
  EXPECT_EQ(j.sum.unmatched[0].first, "BiasSoftmax_token_3");
  EXPECT_GT(j.sum.matched_share, 0.95);
  EXPECT_TRUE(j.by.count("BiasSoftmax_token_3"));
}

}  // namespace
}  // namespace opscope::importers
