// The depthwise stencils (conv_depthwise.h): compiled three times (baseline, AVX2+FMA,
// AVX-512) from one always-inline body, picked at run time.
#include "engine/ops/conv_depthwise.h"

#include <algorithm>

#include "engine/ops/common.h"

namespace opscope::engine {
namespace {

// Row-by-row path: one output plane y = bias + stencil(x, w). Out-of-range input rows point at
// a shared zero row, so the interior columns are one branch-free loop the compiler vectorizes
// and only the few border columns check bounds. K and S fix a square kernel and equal strides
// at compile time (0 = take them from `g` at run time, for the less common shapes).
template <int K, int S>
[[gnu::always_inline]] inline void DepthwisePlaneRows(const float* x, const float* w, float bias,
                                                      const float* zeros, const DwPlaneGeo& g,
                                                      float* y) {
  const int64_t KH = K ? K : g.KH, KW = K ? K : g.KW;
  const int64_t SH = S ? S : g.SH, SW = S ? S : g.SW;
  const int64_t W = g.W, OW = g.OW, pl = g.pl;
  // Interior columns: every tap column ow*SW - pl + kw lies in [0, W).
  int64_t lo = std::min<int64_t>((pl + SW - 1) / SW, OW);
  int64_t hi = W - KW + pl >= 0 ? (W - KW + pl) / SW + 1 : 0;
  hi = std::max(lo, std::min(hi, OW));
  // Local copy of the taps: stores to y cannot alias it, so the interior loop needs no
  // run-time alias checks against w.
  float wl[kMaxDepthwiseKernel * kMaxDepthwiseKernel];
  for (int64_t i = 0; i < KH * KW; ++i) wl[i] = w[i];
  const float* rows[kMaxDepthwiseKernel];
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const int64_t ih0 = oh * SH - g.pt;
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t ih = ih0 + kh;
      rows[kh] = ih >= 0 && ih < g.H ? x + ih * W : zeros;
    }
    float* yr = y + oh * OW;
    auto border = [&](int64_t ow) {
      float acc = bias;
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t iw = ow * SW - pl + kw;
          if (iw >= 0 && iw < W) acc += wl[kh * KW + kw] * rows[kh][iw];
        }
      yr[ow] = acc;
    };
    for (int64_t ow = 0; ow < lo; ++ow) border(ow);
    for (int64_t ow = lo; ow < hi; ++ow) {
      const int64_t base = ow * SW - pl;
      float acc = bias;
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) acc += wl[kh * KW + kw] * rows[kh][base + kw];
      yr[ow] = acc;
    }
    for (int64_t ow = hi; ow < OW; ++ow) border(ow);
  }
}

// Flat path (unit strides, narrow planes): the plane is copied into `stage` with its padding
// made explicit (the caller zeroes `stage` once per call; only input positions are written, so
// the padding stays zero from plane to plane), then the stencil runs as one loop over the whole
// plane with the padded width Wp as the row pitch: output (oh, ow) lands at obuf[oh * Wp + ow]
// and the KW - 1 columns in between are computed and dropped. A 7x7 plane is then 8 full
// vectors instead of 7 rows of 5 interior columns plus borders. The copies are plain loops (no
// memcpy calls: the rows are often 7 or 14 floats).
template <int KK>
[[gnu::always_inline]] inline void DepthwisePlaneFlat(const float* x, const float* w, float bias,
                                                      const DwPlaneGeo& g, float* stage,
                                                      float* obuf, float* y) {
  const int64_t Hp = g.Hp(), Wp = g.Wp();
  const int64_t r0 = std::min(g.pt, Hp), r1 = std::max(r0, std::min(Hp, g.pt + g.H));
  const int64_t c0 = std::min(g.pl, Wp), c1 = std::max(c0, std::min(Wp, g.pl + g.W));
  for (int64_t r = r0; r < r1; ++r) {
    const float* __restrict xr = x + (r - g.pt) * g.W - g.pl;
    float* __restrict dst = stage + r * Wp;
    for (int64_t c = c0; c < c1; ++c) dst[c] = xr[c];
  }
  const int64_t taps = KK ? KK : g.KH * g.KW, n = g.FlatOutputs();
  float wl[kMaxDepthwiseKernel * kMaxDepthwiseKernel];
  const float* tap[kMaxDepthwiseKernel * kMaxDepthwiseKernel];
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      wl[kh * g.KW + kw] = w[kh * g.KW + kw];
      tap[kh * g.KW + kw] = stage + kh * Wp + kw;
    }
  if constexpr (KK > 0) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) {
      float acc = bias;
      for (int t = 0; t < KK; ++t) acc += wl[t] * tap[t][i];
      obuf[i] = acc;
    }
  } else {
    std::fill(obuf, obuf + n, bias);
    for (int64_t t = 0; t < taps; ++t) {
      const float* __restrict in = tap[t];
      const float wt = wl[t];
#pragma GCC ivdep
      for (int64_t i = 0; i < n; ++i) obuf[i] += wt * in[i];
    }
  }
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* __restrict src = obuf + oh * Wp;
    float* __restrict dst = y + oh * g.OW;
    for (int64_t ow = 0; ow < g.OW; ++ow) dst[ow] = src[ow];
  }
}

// Picks the path and the compile-time specialisation for the common 3x3 and 5x5 shapes.
[[gnu::always_inline]] inline void DepthwisePlaneAny(const float* x, const float* w, float bias,
                                                     const float* zeros, const DwPlaneGeo& g,
                                                     float* stage, float* obuf, float* y) {
  const int64_t s = g.SH == g.SW ? g.SH : 0;
  if (g.Flat()) {
    if (g.KH == 3 && g.KW == 3) {
      DepthwisePlaneFlat<9>(x, w, bias, g, stage, obuf, y);
    } else if (g.KH == 5 && g.KW == 5) {
      DepthwisePlaneFlat<25>(x, w, bias, g, stage, obuf, y);
    } else {
      DepthwisePlaneFlat<0>(x, w, bias, g, stage, obuf, y);
    }
  } else if (g.KH == 3 && g.KW == 3 && s == 1) {
    DepthwisePlaneRows<3, 1>(x, w, bias, zeros, g, y);
  } else if (g.KH == 3 && g.KW == 3 && s == 2) {
    DepthwisePlaneRows<3, 2>(x, w, bias, zeros, g, y);
  } else if (g.KH == 5 && g.KW == 5 && s == 1) {
    DepthwisePlaneRows<5, 1>(x, w, bias, zeros, g, y);
  } else if (g.KH == 5 && g.KW == 5 && s == 2) {
    DepthwisePlaneRows<5, 2>(x, w, bias, zeros, g, y);
  } else {
    DepthwisePlaneRows<0, 0>(x, w, bias, zeros, g, y);
  }
}

// The engine is built for baseline x86-64 (SSE2); the stencils are compiled again for AVX2+FMA
// and for AVX-512 and picked at run time. The row-by-row path gains from 16 lanes (1.2x on
// 112x112 and 56x56 planes); the flat path's planes are too small for them (7x7 and 14x14 got
// 1.15-1.35x slower with AVX-512 than with AVX2), so it stays on AVX2.
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2,fma")]] void DepthwisePlaneAvx2(const float* x, const float* w, float bias,
                                                    const float* zeros, const DwPlaneGeo& g,
                                                    float* stage, float* obuf, float* y) {
  DepthwisePlaneAny(x, w, bias, zeros, g, stage, obuf, y);
}
[[gnu::target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]] void DepthwisePlaneAvx512(
    const float* x, const float* w, float bias, const float* zeros, const DwPlaneGeo& g,
    float* stage, float* obuf, float* y) {
  DepthwisePlaneAny(x, w, bias, zeros, g, stage, obuf, y);
}
#endif

void DepthwisePlaneBaseline(const float* x, const float* w, float bias, const float* zeros,
                            const DwPlaneGeo& g, float* stage, float* obuf, float* y) {
  DepthwisePlaneAny(x, w, bias, zeros, g, stage, obuf, y);
}

}  // namespace

DepthwisePlaneFn SelectDepthwisePlane(bool flat) {
#if defined(__x86_64__) && defined(__GNUC__)
  const Isa isa = BestIsa();
  if (isa == Isa::kAvx512 && !flat) return DepthwisePlaneAvx512;
  if (isa != Isa::kBaseline) return DepthwisePlaneAvx2;
#endif
  return DepthwisePlaneBaseline;
}

}  // namespace opscope::engine
