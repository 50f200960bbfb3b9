// An inference program as users write them: pre-processing (bilinear resize of a camera frame
// and per-channel normalisation), the "network" (a few fully connected layers as matmuls) and
// post-processing (sort detections by score, greedy non-maximum suppression). Each stage is
// annotated with opscope's header; with the NVTX v3 headers available the network is also marked
// with NVTX, the way CUDA programs usually are.
//
//   opscope run -r 3 -- ./pipeline_example [frames] [--fast-preprocess]
//
// By construction the pre-processing does the most work (a naive per-pixel resize of a large
// frame, recomputing the interpolation weights for every pixel and channel), which is what
// `opscope run` should reveal; --fast-preprocess uses a precomputed-weights resize instead, so
// `opscope diff` can show the pipeline before and after removing the bottleneck.
#include <opscope/annotate.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef OPSCOPE_EXAMPLE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace {

constexpr int kSrcW = 1920, kSrcH = 1080, kDstW = 320, kDstH = 320, kC = 3;

struct Box {
  float x0, y0, x1, y1, score;
};

std::vector<float> MakeFrame(unsigned seed) {
  std::vector<float> img(static_cast<size_t>(kSrcW) * kSrcH * kC);
  unsigned s = seed;
  for (auto& v : img) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 24);
  }
  return img;
}

// Naive: the source coordinates and weights are recomputed for every pixel and channel, with a
// supersampling loop (4x4 taps) that a real program would not need.
void ResizeNaive(const std::vector<float>& src, std::vector<float>* dst) {
  OPSCOPE_RANGE("resize");
  const float sx = static_cast<float>(kSrcW) / kDstW, sy = static_cast<float>(kSrcH) / kDstH;
  for (int c = 0; c < kC; ++c)
    for (int y = 0; y < kDstH; ++y)
      for (int x = 0; x < kDstW; ++x) {
        float acc = 0;
        for (int ty = 0; ty < 4; ++ty)
          for (int tx = 0; tx < 4; ++tx) {
            float fx = (x + (tx + 0.5f) / 4) * sx - 0.5f, fy = (y + (ty + 0.5f) / 4) * sy - 0.5f;
            int x0 = std::clamp(static_cast<int>(std::floor(fx)), 0, kSrcW - 2);
            int y0 = std::clamp(static_cast<int>(std::floor(fy)), 0, kSrcH - 2);
            float ax = std::clamp(fx - x0, 0.f, 1.f), ay = std::clamp(fy - y0, 0.f, 1.f);
            auto at = [&](int yy, int xx) {
              return src[(static_cast<size_t>(yy) * kSrcW + xx) * kC + c];
            };
            acc += (1 - ay) * ((1 - ax) * at(y0, x0) + ax * at(y0, x0 + 1)) +
                   ay * ((1 - ax) * at(y0 + 1, x0) + ax * at(y0 + 1, x0 + 1));
          }
        (*dst)[(static_cast<size_t>(c) * kDstH + y) * kDstW + x] = acc / 16;
      }
}

// Fast: one bilinear tap per pixel with weights computed once per row/column.
void ResizeFast(const std::vector<float>& src, std::vector<float>* dst) {
  OPSCOPE_RANGE("resize");
  const float sx = static_cast<float>(kSrcW) / kDstW, sy = static_cast<float>(kSrcH) / kDstH;
  std::vector<int> xi(kDstW);
  std::vector<float> xa(kDstW);
  for (int x = 0; x < kDstW; ++x) {
    float fx = (x + 0.5f) * sx - 0.5f;
    xi[x] = std::clamp(static_cast<int>(fx), 0, kSrcW - 2);
    xa[x] = std::clamp(fx - xi[x], 0.f, 1.f);
  }
  for (int y = 0; y < kDstH; ++y) {
    float fy = (y + 0.5f) * sy - 0.5f;
    int y0 = std::clamp(static_cast<int>(fy), 0, kSrcH - 2);
    float ay = std::clamp(fy - y0, 0.f, 1.f);
    const float* r0 = &src[static_cast<size_t>(y0) * kSrcW * kC];
    const float* r1 = r0 + static_cast<size_t>(kSrcW) * kC;
    for (int x = 0; x < kDstW; ++x)
      for (int c = 0; c < kC; ++c) {
        int i = xi[x] * kC + c;
        float a = xa[x];
        float v =
            (1 - ay) * ((1 - a) * r0[i] + a * r0[i + kC]) + ay * ((1 - a) * r1[i] + a * r1[i + kC]);
        (*dst)[(static_cast<size_t>(c) * kDstH + y) * kDstW + x] = v;
      }
  }
}

void Normalize(std::vector<float>* t) {
  OPSCOPE_RANGE("normalize");
  const float mean[kC] = {123.7f, 116.3f, 103.5f}, inv_std[kC] = {1 / 58.4f, 1 / 57.1f, 1 / 57.4f};
  size_t plane = static_cast<size_t>(kDstH) * kDstW;
  for (int c = 0; c < kC; ++c)
    for (size_t i = 0; i < plane; ++i)
      (*t)[c * plane + i] = ((*t)[c * plane + i] - mean[c]) * inv_std[c];
}

// y[n] = relu(W[n][k] · x[k]) for a few layers.
std::vector<float> Network(const std::vector<float>& input,
                           const std::vector<std::vector<float>>& weights,
                           const std::vector<int>& dims) {
  OPSCOPE_RANGE("network");
#ifdef OPSCOPE_EXAMPLE_NVTX
  nvtxRangePushA("network/nvtx");
#endif
  std::vector<float> x(input.begin(), input.begin() + dims[0]);
  for (size_t l = 0; l + 1 < dims.size(); ++l) {
    OPSCOPE_RANGE("matmul");
    int k = dims[l], n = dims[l + 1];
    std::vector<float> y(n, 0.f);
    const float* w = weights[l].data();
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int i = 0; i < k; ++i) acc += w[static_cast<size_t>(j) * k + i] * x[i];
      y[j] = std::max(acc, 0.f);
    }
    x.swap(y);
  }
#ifdef OPSCOPE_EXAMPLE_NVTX
  nvtxRangePop();
#endif
  return x;
}

std::vector<Box> PostProcess(const std::vector<float>& scores) {
  OPSCOPE_RANGE("post-processing");
  std::vector<Box> boxes;
  for (size_t i = 0; i < scores.size(); ++i) {
    float cx = static_cast<float>(i % 64) * 5, cy = static_cast<float>(i / 64) * 5;
    boxes.push_back({cx, cy, cx + 12, cy + 12, scores[i]});
  }
  std::sort(boxes.begin(), boxes.end(),
            [](const Box& a, const Box& b) { return a.score > b.score; });
  std::vector<Box> keep;
  for (const Box& b : boxes) {
    bool ok = true;
    for (const Box& k : keep) {
      float iw = std::min(b.x1, k.x1) - std::max(b.x0, k.x0),
            ih = std::min(b.y1, k.y1) - std::max(b.y0, k.y0);
      if (iw > 0 && ih > 0 && iw * ih > 0.5f * 144) {
        ok = false;
        break;
      }
    }
    if (ok) keep.push_back(b);
  }
  return keep;
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 2;
  bool fast = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fast-preprocess") == 0)
      fast = true;
    else if ((frames = std::atoi(argv[i])) <= 0) {
      std::fprintf(stderr, "usage: %s [frames>0] [--fast-preprocess]\n", argv[0]);
      return 2;
    }
  }
  const std::vector<int> dims = {4096, 1024, 1024, 1024};
  std::vector<std::vector<float>> weights;
  for (size_t l = 0; l + 1 < dims.size(); ++l) {
    std::vector<float> w(static_cast<size_t>(dims[l]) * dims[l + 1]);
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = static_cast<float>((i * 2654435761u) % 1000) / 1e6f - 5e-4f;
    weights.push_back(std::move(w));
  }
  double checksum = 0;
  size_t kept = 0;
  for (int f = 0; f < frames; ++f) {
    std::vector<float> frame = MakeFrame(f + 1);
    std::vector<float> tensor(static_cast<size_t>(kC) * kDstH * kDstW);
    {
      OPSCOPE_RANGE("pre-processing");
      if (fast)
        ResizeFast(frame, &tensor);
      else
        ResizeNaive(frame, &tensor);
      Normalize(&tensor);
    }
    std::vector<float> out = Network(tensor, weights, dims);
    std::vector<Box> boxes = PostProcess(out);
    kept += boxes.size();
    for (float v : out) checksum += v;
  }
  std::printf("frames %d, kept %zu boxes, checksum %g\n", frames, kept, checksum);
  return 0;
}
