// The layout pass (passes_layout.cc) run by itself after an all-NCHW planning run: which
// values it stores channels-last, and that the runs after it still compute the NCHW result.
#include <gtest/gtest.h>

#include "engine/ops/region_layout.h"
#include "engine/testing/kernel_runner.h"
#include "engine/testing/model_builder.h"
#include "engine/testing/session_peer.h"

namespace opscope::engine {
namespace {

using P = SessionImplPeer;
using testing::ModelBuilder;

onnx::NodeProto* Conv3x3(ModelBuilder& b, const std::string& x, const std::string& w,
                         const std::string& y, const std::string& name) {
  auto* n = b.Node("Conv", {x, w}, {y}, name);
  ModelBuilder::IntsAttr(n, "pads", {1, 1, 1, 1});
  return n;
}

std::unique_ptr<Session> LoadNchw(const std::string& path, bool fuse = true) {
  SessionOptions o;
  o.threads = 1;
  o.channels_last = false;
  o.fuse = fuse;
  auto s = Session::Load(path, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return nullptr;
  EXPECT_TRUE((*s)->FillRandomInputs(3).ok());
  return std::move(*s);
}

int StepOf(const Session& s, const std::string& node) {
  for (const NodeInfo& n : s.Nodes())
    if (n.name == node) return n.step;
  return -1;
}

// Two sessions of one model after their planning runs: `ref` stays all NCHW, `s` has had the
// layout pass.
struct Planned {
  std::unique_ptr<Session> ref, s;
};
Planned LoadAndAssign(const std::string& path) {
  Planned p{LoadNchw(path), LoadNchw(path)};
  if (!p.ref || !p.s || !p.ref->Run().ok() || !p.s->Run().ok()) return {};
  P::AssignChannelsLast(static_cast<SessionImpl&>(*p.s));
  return p;
}

// conv1 -> Relu -> r; conv2(r) -> c2; a = Add(c2, r); conv3(a) -> y. Every activation between
// the convolutions goes channels-last, the residual Add runs on NHWC, y (an output) stays NCHW.
// Unfused: with fusion the planning run's end would already have made the Add part of conv2
// (FuseResidualAdds runs after the layout pass there, SessionTest.ResidualAddsJoinThe...).
TEST(LayoutPass, ConvChainWithResidualAddGoesChannelsLast) {
  ModelBuilder b;
  b.Input("x", {1, 4, 8, 8});
  for (const char* w : {"w1", "w2", "w3"}) b.Init(w, {4, 4, 3, 3}, testing::RandomFloats(144, 5));
  Conv3x3(b, "x", "w1", "c1", "conv1");
  b.Node("Relu", {"c1"}, {"r"}, "relu");
  Conv3x3(b, "r", "w2", "c2", "conv2");
  b.Node("Add", {"c2", "r"}, {"a"}, "add");
  Conv3x3(b, "a", "w3", "y", "conv3");
  b.Output("y", {1, 4, 8, 8});
  const std::string path = b.Save("layout_residual.onnx");
  std::unique_ptr<Session> ref = LoadNchw(path);
  std::unique_ptr<Session> s = LoadNchw(path, /*fuse=*/false);
  ASSERT_TRUE(ref && s);
  ASSERT_TRUE(ref->Run().ok());
  ASSERT_TRUE(s->Run().ok());  // the planning run: all NCHW
  auto& impl = static_cast<SessionImpl&>(*s);
  for (const StepInfo& st : s->Steps()) EXPECT_FALSE(st.channels_last_in || st.channels_last_out);
  P::AssignChannelsLast(impl);
  const auto& steps = s->Steps();
  const int c1 = StepOf(*s, "conv1"), c2 = StepOf(*s, "conv2"), c3 = StepOf(*s, "conv3");
  EXPECT_FALSE(steps[c1].channels_last_in);  // a graph input
  EXPECT_TRUE(steps[c1].channels_last_out);
  EXPECT_TRUE(steps[c2].channels_last_in && steps[c2].channels_last_out);
  EXPECT_TRUE(steps[c3].channels_last_in);    // a = Add(c2, r) is NHWC
  EXPECT_FALSE(steps[c3].channels_last_out);  // a graph output
  ASSERT_TRUE(s->Run().ok());
  ASSERT_TRUE(ref->Run().ok());
  EXPECT_EQ(testing::CompareFloat(*s->Output("y"), *ref->Output("y")), "");
}

// A value that a Reshape also reads stays NCHW: the Reshape sees its bytes.
TEST(LayoutPass, ValueReadByReshapeStaysNchw) {
  ModelBuilder b;
  b.Input("x", {1, 4, 8, 8});
  b.Init("w1", {4, 4, 3, 3}, testing::RandomFloats(144, 6));
  b.Init("w2", {4, 4, 3, 3}, testing::RandomFloats(144, 7));
  b.InitI64("flat", {2}, {1, -1});
  Conv3x3(b, "x", "w1", "c1", "conv1");
  Conv3x3(b, "c1", "w2", "y", "conv2");
  b.Node("Reshape", {"c1", "flat"}, {"f"}, "reshape");
  b.Output("y", {1, 4, 8, 8});
  b.Output("f", {1, 256});
  std::unique_ptr<Session> s = LoadNchw(b.Save("layout_reshape.onnx"));
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Run().ok());
  P::AssignChannelsLast(static_cast<SessionImpl&>(*s));
  EXPECT_FALSE(s->Steps()[StepOf(*s, "conv1")].channels_last_out);
  EXPECT_FALSE(s->Steps()[StepOf(*s, "conv2")].channels_last_in);
}

// The FPN pattern: conv -> Resize (2x) -> Add(lateral conv) -> conv. The Resize follows its
// input's layout, so the upsampled map, the Add and both convolutions' activations stay
// channels-last, and every mode computes what the all-NCHW run computes.
TEST(LayoutPass, ResizeBetweenConvolutionsFollowsTheRegion) {
  struct Case {
    const char* mode;
    const char* coord;
  };
  // 5 channels: NHWC; 8 channels: nChw8c when that is forced (region_layout.h).
  for (RegionLayout forced : {RegionLayout::kNhwc, RegionLayout::kNChw8c})
    for (int64_t ch : {5, 8})
      for (const Case& c : {Case{"nearest", "asymmetric"}, Case{"linear", "half_pixel"},
                            Case{"linear", "align_corners"}, Case{"cubic", "half_pixel"}}) {
        SCOPED_TRACE(std::string(c.mode) + " " + c.coord + " " + std::to_string(ch) + " channels " +
                     RegionLayoutName(forced));
        SetRegionLayoutForTesting(forced);
        ModelBuilder b;
        b.Input("x", {2, ch, 4, 6});
        b.Input("lat", {2, ch, 8, 12});
        for (const char* w : {"w1", "w2", "w3"})
          b.Init(w, {ch, ch, 3, 3}, testing::RandomFloats(static_cast<size_t>(ch * ch * 9), 9));
        b.Init("roi", {0}, {});
        b.Init("scales", {4}, {1, 1, 2, 2});
        Conv3x3(b, "x", "w1", "c1", "conv1");
        Conv3x3(b, "lat", "w2", "c2", "conv2");
        auto* rs = b.Node("Resize", {"c1", "roi", "scales"}, {"up"}, "resize");
        ModelBuilder::StringAttr(rs, "mode", c.mode);
        ModelBuilder::StringAttr(rs, "coordinate_transformation_mode", c.coord);
        b.Node("Add", {"up", "c2"}, {"a"}, "add");
        Conv3x3(b, "a", "w3", "y", "conv3");
        b.Output("y", {2, ch, 8, 12});
        const std::string path = b.Save(std::string("layout_resize_") + c.mode + c.coord +
                                        std::to_string(ch) + RegionLayoutName(forced) + ".onnx");
        Planned p = LoadAndAssign(path);
        ASSERT_TRUE(p.ref && p.s);
        std::unique_ptr<Session>& ref = p.ref;
        std::unique_ptr<Session>& s = p.s;
        const auto& steps = s->Steps();
        const int r = StepOf(*s, "resize");
        ASSERT_GE(r, 0);
        EXPECT_TRUE(steps[r].channels_last_in && steps[r].channels_last_out);
        EXPECT_EQ(steps[r].layout_in, ch == 8 ? RegionLayoutName(forced) : "NHWC");
        EXPECT_TRUE(steps[StepOf(*s, "conv1")].channels_last_out);
        EXPECT_TRUE(steps[StepOf(*s, "conv3")].channels_last_in);
        ASSERT_TRUE(s->Run().ok());
        ASSERT_TRUE(ref->Run().ok());
        // The convolutions around the resize may round differently per layout on other CPUs.
        EXPECT_EQ(testing::CompareFloat(*s->Output("y"), *ref->Output("y"), 1e-5f, 1e-5f), "");
        SetRegionLayoutForTesting(std::nullopt);
      }
}

// An FPN merge: two conv branches, one upsampled, concatenated over the channels, then a conv.
// The Concat joins the region when every input's channel count gets the output's layout (8 + 8
// -> 16 under nChw8c, 5 + 3 -> 8 under NHWC), and stays NCHW when they would differ (8 + 4 ->
// 12 under a forced nChw8c: the 8-channel input would be blocked, the others NHWC).
TEST(LayoutPass, ConcatOverChannelsFollowsTheRegionWhenLayoutsAgree) {
  struct Case {
    RegionLayout forced;
    int64_t c1, c2;
    bool in_region;
  };
  for (const Case& c :
       {Case{RegionLayout::kNChw8c, 8, 8, true}, Case{RegionLayout::kNhwc, 8, 8, true},
        Case{RegionLayout::kNhwc, 5, 3, true}, Case{RegionLayout::kNChw8c, 8, 4, false}}) {
    SCOPED_TRACE(std::string(RegionLayoutName(c.forced)) + " " + std::to_string(c.c1) + "+" +
                 std::to_string(c.c2));
    SetRegionLayoutForTesting(c.forced);
    const int64_t co = c.c1 + c.c2;
    ModelBuilder b;
    b.Input("x", {2, 4, 8, 8});
    b.Init("w1", {c.c1, 4, 3, 3}, testing::RandomFloats(static_cast<size_t>(c.c1 * 36), 31));
    b.Init("w2", {c.c2, 4, 3, 3}, testing::RandomFloats(static_cast<size_t>(c.c2 * 36), 32));
    b.Init("w3", {6, co, 3, 3}, testing::RandomFloats(static_cast<size_t>(6 * co * 9), 33));
    b.Init("roi", {0}, {});
    b.Init("scales", {4}, {1, 1, 2, 2});
    auto* d = Conv3x3(b, "x", "w1", "a", "conv_a");
    ModelBuilder::IntsAttr(d, "strides", {2, 2});
    Conv3x3(b, "x", "w2", "bb", "conv_b");
    b.Node("Resize", {"a", "roi", "scales"}, {"up"}, "resize");
    auto* cat = b.Node("Concat", {"up", "bb"}, {"cat"}, "concat");
    auto* ax = cat->add_attribute();
    ax->set_name("axis");
    ax->set_type(onnx::AttributeProto::INT);
    ax->set_i(1);
    Conv3x3(b, "cat", "w3", "y", "conv_out");
    b.Output("y", {2, 6, 8, 8});
    const std::string path = b.Save("layout_concat_" + std::to_string(c.c1) + "_" +
                                    std::to_string(c.c2) + RegionLayoutName(c.forced) + ".onnx");
    Planned p = LoadAndAssign(path);
    ASSERT_TRUE(p.ref && p.s);
    std::unique_ptr<Session>& ref = p.ref;
    std::unique_ptr<Session>& s = p.s;
    const StepInfo& cs = s->Steps()[StepOf(*s, "concat")];
    EXPECT_EQ(cs.channels_last_in && cs.channels_last_out, c.in_region);
    EXPECT_EQ(s->Steps()[StepOf(*s, "conv_out")].channels_last_in, c.in_region);
    ASSERT_TRUE(s->Run().ok());
    ASSERT_TRUE(ref->Run().ok());
    EXPECT_EQ(testing::CompareFloat(*s->Output("y"), *ref->Output("y"), 1e-5f, 1e-5f), "");
    SetRegionLayoutForTesting(std::nullopt);
  }
}

// Pools inside a region, on NHWC and on nChw8c blocks: MaxPool 3x3 s2 with padding, AveragePool
// 3x3 s1 with padding counted and not counted, between convolutions; every variant computes what
// the all-NCHW run computes.
TEST(LayoutPass, PoolsBetweenConvolutionsMatchNchwInBothLayouts) {
  for (RegionLayout forced : {RegionLayout::kNhwc, RegionLayout::kNChw8c})
    for (int64_t ch : {5, 8, 16})
      for (int include_pad : {0, 1}) {
        SCOPED_TRACE(std::string(RegionLayoutName(forced)) + " " + std::to_string(ch) +
                     " channels, count_include_pad " + std::to_string(include_pad));
        SetRegionLayoutForTesting(forced);
        ModelBuilder b;
        b.Input("x", {2, 3, 11, 13});
        b.Init("w1", {ch, 3, 3, 3}, testing::RandomFloats(static_cast<size_t>(ch * 27), 41));
        b.Init("w2", {ch, ch, 3, 3}, testing::RandomFloats(static_cast<size_t>(ch * ch * 9), 42));
        b.Init("w3", {4, ch, 3, 3}, testing::RandomFloats(static_cast<size_t>(4 * ch * 9), 43));
        Conv3x3(b, "x", "w1", "c1", "conv1");
        auto* mp = b.Node("MaxPool", {"c1"}, {"m"}, "mpool");
        ModelBuilder::IntsAttr(mp, "kernel_shape", {3, 3});
        ModelBuilder::IntsAttr(mp, "strides", {2, 2});
        ModelBuilder::IntsAttr(mp, "pads", {1, 1, 1, 1});
        Conv3x3(b, "m", "w2", "c2", "conv2");
        auto* ap = b.Node("AveragePool", {"c2"}, {"a"}, "apool");
        ModelBuilder::IntsAttr(ap, "kernel_shape", {3, 3});
        ModelBuilder::IntsAttr(ap, "pads", {1, 1, 1, 1});
        auto* cip = ap->add_attribute();
        cip->set_name("count_include_pad");
        cip->set_type(onnx::AttributeProto::INT);
        cip->set_i(include_pad);
        Conv3x3(b, "a", "w3", "y", "conv3");
        b.Output("y", {2, 4, 6, 7});
        const std::string path =
            b.Save("layout_pools_" + std::to_string(ch) + "_" + std::to_string(include_pad) +
                   RegionLayoutName(forced) + ".onnx");
        Planned p = LoadAndAssign(path);
        ASSERT_TRUE(p.ref && p.s);
        std::unique_ptr<Session>& ref = p.ref;
        std::unique_ptr<Session>& s = p.s;
        for (const char* pool : {"mpool", "apool"}) {
          const StepInfo& st = s->Steps()[StepOf(*s, pool)];
          EXPECT_TRUE(st.channels_last_in && st.channels_last_out) << pool;
          EXPECT_EQ(st.layout_in, ch % 8 == 0 ? RegionLayoutName(forced) : "NHWC") << pool;
        }
        ASSERT_TRUE(s->Run().ok());
        ASSERT_TRUE(ref->Run().ok());
        // Three convolutions of up to 144-term sums: rounding differs per layout (a wrong tap or
        // channel would be off by whole units).
        EXPECT_EQ(testing::CompareFloat(*s->Output("y"), *ref->Output("y"), 1e-4f, 1e-4f), "");
        SetRegionLayoutForTesting(std::nullopt);
      }
}
}  // namespace
}  // namespace opscope::engine
