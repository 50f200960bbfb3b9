// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool: hand-written direct loops.
//
// Pooling is memory-bound, and ONNX's corner cases (ceil_mode windows that run past the padded
// edge, count_include_pad on those windows, dilations, the Indices output with storage_order)
// are easier to get exactly right here than through oneDNN's pooling descriptor. 1-D and 2-D
// pools are treated as 3-D with leading size-1 spatial dims. Each (n, c) plane is independent and
// planes are spread over the pool with ParallelFor. Max and average pools are separable: they
// reduce along W, then H, then D (kd + kh + kw taps per output instead of their product), with
// per-tap output ranges precomputed so the inner loops are branch-free and vectorise. MaxPool
// with the Indices output runs a direct loop that tracks the argmax.
//
// Output size (per spatial dim, dk = (k - 1) * dilation + 1, span = in + pad_begin + pad_end - dk):
//   NOTSET:       span / stride + 1, the division truncating toward zero, or rounding up for a
//                 positive span with ceil_mode; with ceil_mode the last window must start inside
//                 the input or the begin padding (as PyTorch and ONNX Runtime do), otherwise it
//                 is dropped. An input smaller than the kernel is not an error: span < 0 gives
//                 one window that overhangs the input (span > -stride) or an empty output, and
//                 only a negative size fails (what ONNX shape inference and ONNX Runtime do).
//   VALID:        the same with no padding.
//   SAME_UPPER/LOWER: ceil(in / stride); total padding max(0, (out - 1) * stride + dk - in),
//                 the odd unit at the end (UPPER) or the beginning (LOWER).
// Windows are clipped to the input. AveragePool divides by the number of taps inside the input
// (count_include_pad = 0), or with count_include_pad = 1 by the whole kernel (k taps per dim,
// also for a window that overhangs an input smaller than the kernel), except that with
// ceil_mode the taps past the padded extent [-pad_begin, in + pad_end) never count. These are
// ONNX Runtime's divisors (pool_test.cc pins them with values from ONNX Runtime 1.30).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "engine/ops/common.h"
#include "engine/ops/region_layout.h"

namespace opscope::engine {
namespace {

struct PoolAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel, strides, dilations, pads;
  bool ceil_mode = false, count_include_pad = false;
  int64_t storage_order = 0;
};

Status ReadPoolAttrs(const Node& n, PoolAttrs* a) {
  a->auto_pad = n.attrs.String("auto_pad", "NOTSET");
  if (a->auto_pad != "NOTSET" && a->auto_pad != "SAME_UPPER" && a->auto_pad != "SAME_LOWER" &&
      a->auto_pad != "VALID")
    return NodeError(
        n, "auto_pad '" + a->auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  a->kernel = n.attrs.Ints("kernel_shape");
  if (a->kernel.empty()) return NodeError(n, "attribute kernel_shape is required");
  if (a->kernel.size() > 3)
    return NodeError(n, "pooling over " + std::to_string(a->kernel.size()) +
                            " spatial dims is not supported (1 to 3)");
  size_t sp = a->kernel.size();
  a->strides = n.attrs.Ints("strides");
  if (a->strides.empty()) a->strides.assign(sp, 1);
  a->dilations = n.attrs.Ints("dilations");
  if (a->dilations.empty()) a->dilations.assign(sp, 1);
  a->pads = n.attrs.Ints("pads");
  if (a->pads.empty()) a->pads.assign(2 * sp, 0);
  if (a->strides.size() != sp || a->dilations.size() != sp || a->pads.size() != 2 * sp)
    return NodeError(n, "strides/dilations/pads do not match kernel_shape's " + std::to_string(sp) +
                            " spatial dims");
  for (size_t i = 0; i < sp; ++i) {
    if (a->kernel[i] < 1 || a->strides[i] < 1 || a->dilations[i] < 1)
      return NodeError(n, "kernel_shape, strides and dilations must be >= 1");
    if (a->pads[i] < 0 || a->pads[i + sp] < 0) return NodeError(n, "pads must be >= 0");
  }
  a->ceil_mode = n.attrs.Int("ceil_mode", 0) != 0;
  a->count_include_pad = n.attrs.Int("count_include_pad", 0) != 0;
  a->storage_order = n.attrs.Int("storage_order", 0);
  if (a->storage_order != 0 && a->storage_order != 1)
    return NodeError(n, "storage_order must be 0 or 1");
  return Status();
}

// Geometry padded to 3 spatial dims.
struct PoolGeo {
  int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], out[3];
};

Status ResolvePool(const Node& n, const PoolAttrs& a, const Tensor& x, PoolGeo* g) {
  size_t sp = a.kernel.size();
  if (static_cast<size_t>(x.rank()) != sp + 2)
    return NodeError(n, "input has rank " + std::to_string(x.rank()) + " but kernel_shape has " +
                            std::to_string(sp) + " dims (expected rank " + std::to_string(sp + 2) +
                            ")");
  size_t off = 3 - sp;
  for (size_t i = 0; i < 3; ++i) {
    g->in[i] = g->k[i] = g->s[i] = g->d[i] = g->out[i] = 1;
    g->pb[i] = g->pe[i] = 0;
  }
  for (size_t j = 0; j < sp; ++j) {
    size_t i = j + off;
    int64_t in = x.dim(static_cast<int>(j) + 2), k = a.kernel[j], s = a.strides[j],
            d = a.dilations[j];
    // Bounded before the arithmetic below, which would overflow (as ConvGeometry does).
    if (in > kMaxGeometrySize || k > kMaxGeometrySize || d > kMaxGeometrySize)
      return NodeError(n, "spatial dim " + std::to_string(j) + ": input " + std::to_string(in) +
                              ", kernel " + std::to_string(k) + ", dilation " + std::to_string(d) +
                              " out of range");
    int64_t dk = (k - 1) * d + 1, pb = 0, pe = 0, out;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + dk - in);
      pb = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else {
      bool valid = a.auto_pad == "VALID";
      pb = valid ? 0 : a.pads[j];
      pe = valid ? 0 : a.pads[j + sp];
      int64_t span = in + pb + pe - dk;
      // C++ division truncates toward zero, which is also the ceiling of a negative quotient.
      bool up = a.ceil_mode && !valid && span > 0 && span % s != 0;
      out = span / s + (up ? 1 : 0) + 1;
      if (a.ceil_mode && !valid && out > 0 && (out - 1) * s >= in + pb) --out;
      if (out < 0)
        return NodeError(n, "spatial dim " + std::to_string(j) + ": the dilated kernel (" +
                                std::to_string(dk) + ") is larger than the padded input (" +
                                std::to_string(in + pb + pe) + ") by more than the stride (" +
                                std::to_string(s) + "), so the output size would be negative");
    }
    if (pb >= dk || pe >= dk) return NodeError(n, "pads must be smaller than the (dilated) kernel");
    g->in[i] = in, g->k[i] = k, g->s[i] = s, g->d[i] = d, g->pb[i] = pb, g->pe[i] = pe;
    g->out[i] = out;
  }
  return Status();
}

// Valid taps [lo, hi) of a window starting at `start` (may be negative) over [0, in).
inline void TapRange(int64_t start, int64_t k, int64_t d, int64_t in, int64_t* lo, int64_t* hi) {
  *lo = start >= 0 ? 0 : (-start + d - 1) / d;
  int64_t last = in - 1 - start;  // largest offset still inside
  *hi = last < 0 ? 0 : std::min(k, last / d + 1);
  if (*hi < *lo) *hi = *lo;
}

std::vector<int64_t> OutShape(const Tensor& x, const PoolGeo& g, size_t sp) {
  std::vector<int64_t> s = {x.dim(0), x.dim(1)};
  for (size_t i = 3 - sp; i < 3; ++i) s.push_back(g.out[i]);
  return s;
}

// Direct max pooling that also records the argmax (the Indices output).
template <typename T>
void MaxPoolWithIndices(const PoolGeo& g, const T* x, T* y, int64_t* idx, int64_t planes,
                        bool col_major) {
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  ParallelFor(planes, out_plane * g.k[0] * g.k[1] * g.k[2], [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* xp = x + p * in_plane;
      T* yp = y + p * out_plane;
      int64_t* ip = idx ? idx + p * out_plane : nullptr;
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
        int64_t s0 = o0 * g.s[0] - g.pb[0], l0, h0;
        TapRange(s0, g.k[0], g.d[0], g.in[0], &l0, &h0);
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
          int64_t s1 = o1 * g.s[1] - g.pb[1], l1, h1;
          TapRange(s1, g.k[1], g.d[1], g.in[1], &l1, &h1);
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            int64_t s2 = o2 * g.s[2] - g.pb[2], l2, h2;
            TapRange(s2, g.k[2], g.d[2], g.in[2], &l2, &h2);
            T best = std::numeric_limits<T>::lowest();
            if constexpr (std::numeric_limits<T>::has_infinity)
              best = -std::numeric_limits<T>::infinity();
            int64_t best_at = -1;
            for (int64_t k0 = l0; k0 < h0; ++k0) {
              int64_t i0 = s0 + k0 * g.d[0];
              for (int64_t k1 = l1; k1 < h1; ++k1) {
                int64_t i1 = s1 + k1 * g.d[1];
                const T* row = xp + (i0 * g.in[1] + i1) * g.in[2];
                for (int64_t k2 = l2; k2 < h2; ++k2) {
                  int64_t i2 = s2 + k2 * g.d[2];
                  T v = row[i2];
                  if (best_at < 0 || v > best) {
                    best = v;
                    best_at = (i0 * g.in[1] + i1) * g.in[2] + i2;
                  }
                }
              }
            }
            int64_t o = (o0 * g.out[1] + o1) * g.out[2] + o2;
            yp[o] = best;
            {
              if (best_at < 0) {
                ip[o] = 0;
              } else {
                int64_t i2 = best_at % g.in[2], i1 = (best_at / g.in[2]) % g.in[1],
                        i0 = best_at / (g.in[1] * g.in[2]);
                int64_t local = col_major ? i0 + i1 * g.in[0] + i2 * g.in[0] * g.in[1] : best_at;
                ip[o] = p * in_plane + local;
              }
            }
          }
        }
      }
    }
  });
}

// Separable pooling (no Indices): max and sum are reduced one spatial dim at a time, D then H
// over whole contiguous rows (loops the compiler vectorises), then W, the strided one, last and
// straight into the output, so per output row the W taps read one row that is already reduced
// over D and H. For each kernel tap the range of outputs for which the tap is inside the input
// is computed once, so every inner loop is branch-free. A dim whose window has one valid tap
// reads the input row in place instead of copying it. Work per output drops from kd*kh*kw to
// kd+kh+kw taps; stride-2 W taps of float pools (the common 2x2 and 3x3 s2) run as AVX2
// de-interleaving loads where the CPU has them.
struct TapSpan {
  int64_t offset, lo, hi;  // input index = o * stride + offset, valid for o in [lo, hi)
};

std::vector<TapSpan> TapSpans(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d,
                              int64_t pb) {
  std::vector<TapSpan> spans;
  for (int64_t t = 0; t < k; ++t) {
    int64_t off = t * d - pb;
    // o * s + off >= 0  and  o * s + off <= in - 1
    int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t hi = in - 1 - off < 0 ? 0 : std::min(out, (in - 1 - off) / s + 1);
    if (hi > lo) spans.push_back({off, lo, hi});
  }
  return spans;
}

template <typename T, bool kMax>
inline void FoldRow(T* acc, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kMax)
      acc[i] = src[i] > acc[i] ? src[i] : acc[i];
    else
      acc[i] += src[i];
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// acc[o] = op(src[2 o], acc[o]) for o from lo while 8 outputs fit before hi and the 16 loaded
// floats stay at or below src[last]; returns the first o left for the scalar loop. Same order of
// operations as the scalar loop, so results are identical (max keeps acc on NaN, like `v > a`).
template <bool kMax>
[[gnu::target("avx2")]] int64_t Stride2TapAvx2(const float* src, float* acc, int64_t lo, int64_t hi,
                                               int64_t last) {
  int64_t o = lo;
  for (; o + 8 <= hi && 2 * o + 15 <= last; o += 8) {
    const __m256 a = _mm256_loadu_ps(src + 2 * o), b = _mm256_loadu_ps(src + 2 * o + 8);
    // a0 a2 b0 b2 | a4 a6 b4 b6, then the 64-bit pairs reordered to a0 a2 a4 a6 b0 b2 b4 b6.
    __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), _MM_SHUFFLE(3, 1, 2, 0)));
    const __m256 c = _mm256_loadu_ps(acc + o);
    _mm256_storeu_ps(acc + o, kMax ? _mm256_max_ps(ev, c) : _mm256_add_ps(c, ev));
  }
  return o;
}
#endif

// out[o] for o in [0, ow): the W taps of `row` (in_w values) folded, starting from `init`.
template <typename T, bool kMax>
void PoolRowW(const std::vector<TapSpan>& sw, int64_t s, const T* row, int64_t in_w, T* out,
              int64_t ow, T init, bool avx2) {
  std::fill(out, out + ow, init);
  for (const TapSpan& t : sw) {
    const T* src = row + t.offset;
    int64_t o = t.lo;
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (std::is_same_v<T, float>)
      if (avx2 && s == 2) o = Stride2TapAvx2<kMax>(src, out, t.lo, t.hi, in_w - 1 - t.offset);
#endif
    (void)avx2;
    (void)in_w;
    for (; o < t.hi; ++o) {
      const T v = src[o * s];
      if constexpr (kMax)
        out[o] = v > out[o] ? v : out[o];
      else
        out[o] += v;
    }
  }
}

// Folds the taps of one output position `o` along a dim into `acc` (n values per input index,
// rows `stride` apart starting at `base`); with a single valid tap returns the input row itself.
template <typename T, bool kMax>
const T* PoolRows(const std::vector<TapSpan>& spans, int64_t o, int64_t s, const T* base,
                  int64_t stride, int64_t n, T* acc, T init) {
  const TapSpan* only = nullptr;
  int count = 0;
  for (const TapSpan& t : spans)
    if (o >= t.lo && o < t.hi) only = &t, ++count;
  if (count == 1) return base + (o * s + only->offset) * stride;
  std::fill(acc, acc + n, init);
  for (const TapSpan& t : spans)
    if (o >= t.lo && o < t.hi) FoldRow<T, kMax>(acc, base + (o * s + t.offset) * stride, n);
  return acc;
}

template <typename T, bool kMax>
void SeparablePoolPlanes(const PoolGeo& g, const T* x, T* y, int64_t planes, const float* divisor) {
  const int64_t ih = g.in[1], iw = g.in[2];
  const int64_t in_plane = g.in[0] * ih * iw;
  const int64_t od = g.out[0], oh = g.out[1], ow = g.out[2];
  const int64_t out_plane = od * oh * ow;
  std::vector<TapSpan> sw = TapSpans(iw, ow, g.k[2], g.s[2], g.d[2], g.pb[2]);
  std::vector<TapSpan> sh = TapSpans(ih, oh, g.k[1], g.s[1], g.d[1], g.pb[1]);
  std::vector<TapSpan> sd = TapSpans(g.in[0], od, g.k[0], g.s[0], g.d[0], g.pb[0]);
  T init = T(0);
  if constexpr (kMax) {
    init = std::numeric_limits<T>::lowest();
    if constexpr (std::numeric_limits<T>::has_infinity) init = -std::numeric_limits<T>::infinity();
  }
  const bool avx2 = BestIsa() >= Isa::kAvx2;
  ParallelFor(planes, out_plane * (g.k[0] + g.k[1] + g.k[2]), [&](int64_t p0, int64_t p1) {
    std::vector<T> td(static_cast<size_t>(ih * iw));  // one D-reduced [H][W] slab
    std::vector<T> th(static_cast<size_t>(iw));       // one D- and H-reduced row
    for (int64_t p = p0; p < p1; ++p) {
      const T* xp = x + p * in_plane;
      T* yp = y + p * out_plane;
      for (int64_t d = 0; d < od; ++d) {
        const T* slab = PoolRows<T, kMax>(sd, d, g.s[0], xp, ih * iw, ih * iw, td.data(), init);
        for (int64_t h = 0; h < oh; ++h) {
          const T* row = PoolRows<T, kMax>(sh, h, g.s[1], slab, iw, iw, th.data(), init);
          T* out = yp + (d * oh + h) * ow;
          if (sh.empty() || sd.empty()) {  // no valid tap along D or H: nothing inside
            std::fill(out, out + ow, init);
          } else {
            PoolRowW<T, kMax>(sw, g.s[2], row, iw, out, ow, init, avx2);
          }
          if constexpr (!kMax) {
            const float* dv = divisor + (d * oh + h) * ow;
            for (int64_t i = 0; i < ow; ++i) out[i] = dv[i] > 0 ? out[i] / dv[i] : T(0);
          }
        }
      }
    }
  });
}

// Divisor of every output position of an average pool (product of per-dim tap counts).
std::vector<float> AvgDivisors(const PoolGeo& g, bool include_pad, bool ceil_mode) {
  std::vector<int64_t> c[3];
  for (int dim = 0; dim < 3; ++dim)
    for (int64_t o = 0; o < g.out[dim]; ++o) {
      int64_t start = o * g.s[dim] - g.pb[dim], lo = 0, hi = g.k[dim];
      if (include_pad) {
        if (ceil_mode)
          TapRange(start + g.pb[dim], g.k[dim], g.d[dim], g.in[dim] + g.pb[dim] + g.pe[dim], &lo,
                   &hi);
      } else {
        TapRange(start, g.k[dim], g.d[dim], g.in[dim], &lo, &hi);
      }
      c[dim].push_back(hi - lo);
    }
  std::vector<float> dv;
  dv.reserve(static_cast<size_t>(g.out[0] * g.out[1] * g.out[2]));
  for (int64_t a : c[0])
    for (int64_t b : c[1])
      for (int64_t e : c[2]) dv.push_back(static_cast<float>(a * b * e));
  return dv;
}

template <typename T>
void MaxPoolDispatch(const PoolGeo& g, const T* x, T* y, int64_t* idx, int64_t planes,
                     bool col_major) {
  if (idx) {
    MaxPoolWithIndices(g, x, y, idx, planes, col_major);
  } else {
    SeparablePoolPlanes<T, true>(g, x, y, planes, nullptr);
  }
}

// Channels-last 2-D pooling (float, no Indices): the session keeps the activations of a
// convolution region NHWC in memory under the logical NCHW shape (SessionImpl::
// AssignChannelsLast), and a pool inside the region reads and writes that layout, so the
// convolutions around it need no reorders. Each output pixel folds its valid taps over the C
// contiguous channels (a loop the compiler vectorises); pixels are spread over the pool.
// kC > 0: C is that constant (8: nChw8c blocks, whose fixed-size channel loops become single
// vector operations instead of a loop per tap).
template <bool kMax, int kC = 0>
void PoolNhwc(const PoolGeo& g, const float* x, float* y, int64_t N, int64_t c_runtime,
              const float* divisor) {
  const int64_t C = kC > 0 ? kC : c_runtime;
  const int64_t ih = g.in[1], iw = g.in[2], oh = g.out[1], ow = g.out[2];
  const float init = kMax ? -std::numeric_limits<float>::infinity() : 0.f;
  // One output row (image, h) per task: its H taps once, then each pixel's W taps.
  ParallelFor(N * oh, ow * C * g.k[1] * g.k[2], [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t n = row / oh, h = row % oh;
      int64_t hlo, hhi;
      TapRange(h * g.s[1] - g.pb[1], g.k[1], g.d[1], ih, &hlo, &hhi);
      for (int64_t w = 0; w < ow; ++w) {
        int64_t wlo, whi;
        TapRange(w * g.s[2] - g.pb[2], g.k[2], g.d[2], iw, &wlo, &whi);
        float* out = y + (row * ow + w) * C;
        const int64_t h0 = h * g.s[1] - g.pb[1];  // the first tap's row (negative in padding)
        // With a fixed C the accumulator is a local array the compiler keeps in registers (one
        // AVX vector for 8 channels); otherwise the output pixel itself.
        float local[kC > 0 ? kC : 1];
        float* acc = kC > 0 ? local : out;
        std::fill(acc, acc + C, init);
        for (int64_t th = hlo; th < hhi; ++th) {
          const float* src_row = x + (n * ih + h0 + th * g.d[1]) * iw * C;
          for (int64_t tw = wlo; tw < whi; ++tw) {
            const float* src = src_row + (w * g.s[2] - g.pb[2] + tw * g.d[2]) * C;
            for (int64_t c = 0; c < C; ++c) {
              if constexpr (kMax)
                acc[c] = src[c] > acc[c] ? src[c] : acc[c];
              else
                acc[c] += src[c];
            }
          }
        }
        const float dv = kMax ? 1.f : divisor[h * ow + w];
        for (int64_t c = 0; c < C; ++c) out[c] = kMax ? acc[c] : dv > 0 ? acc[c] / dv : 0.f;
      }
    }
  });
}

// Global pools over channels-last images: each image's n pixels folded over its C contiguous
// channels, the mean in double. kC > 0: C is that constant (8: nChw8c blocks, whose fixed-size
// accumulators stay in registers).
template <int kC = 0>
void GlobalPoolNhwc(const float* x, float* y, int64_t N, int64_t c_runtime, int64_t n,
                    bool is_max) {
  const int64_t C = kC > 0 ? kC : c_runtime;
  ParallelFor(N, n * C, [&](int64_t n0, int64_t n1) {
    std::vector<double> acc_heap(kC > 0 ? 0 : static_cast<size_t>(C));
    std::vector<float> mx_heap(kC > 0 ? 0 : static_cast<size_t>(C));
    double acc_local[kC > 0 ? kC : 1];
    float mx_local[kC > 0 ? kC : 1];
    double* acc = kC > 0 ? acc_local : acc_heap.data();
    float* mx = kC > 0 ? mx_local : mx_heap.data();
    for (int64_t b = n0; b < n1; ++b) {
      const float* xb = x + b * n * C;
      if (is_max) {
        std::fill(mx, mx + C, -std::numeric_limits<float>::infinity());
        for (int64_t i = 0; i < n; ++i)
          for (int64_t c = 0; c < C; ++c) mx[c] = std::max(mx[c], xb[i * C + c]);
        for (int64_t c = 0; c < C; ++c) y[b * C + c] = mx[c];
      } else {
        std::fill(acc, acc + C, 0.0);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t c = 0; c < C; ++c) acc[c] += xb[i * C + c];
        for (int64_t c = 0; c < C; ++c)
          y[b * C + c] = n ? static_cast<float>(acc[c] / static_cast<double>(n)) : 0.f;
      }
    }
  });
}

class PoolKernel : public Kernel {
 public:
  PoolKernel(const Node& node, PoolAttrs a, bool max) : node_(node), a_(std::move(a)), max_(max) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input X is required");
    PoolGeo g;
    OPSCOPE_RETURN_IF_ERROR(ResolvePool(node_, a_, *x, &g));
    std::vector<int64_t> out = OutShape(*x, g, a_.kernel.size());
    const int64_t planes = x->dim(0) * x->dim(1);
    if (channels_last_) {  // planned only for 2-D float pools without Indices (see above)
      if (x->dtype() != DataType::kFloat32 || x->rank() != 4 ||
          (ctx.num_outputs() > 1 && ctx.output_wanted(1)))
        return NodeError(node_, "channels-last activations are only planned for 2-D float pools");
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, out));
      if (y->numel() == 0) return Status();
      // nChw8c is N * C/8 NHWC images of 8 channels (region_layout.h).
      const bool blocked = RegionLayoutFor(x->dim(1)) == RegionLayout::kNChw8c;
      const int64_t images = blocked ? x->dim(0) * x->dim(1) / 8 : x->dim(0);
      const int64_t channels = blocked ? 8 : x->dim(1);
      if (max_) {
        (blocked ? PoolNhwc<true, 8> : PoolNhwc<true>)(g, x->data<float>(), y->data<float>(),
                                                       images, channels, nullptr);
      } else {
        std::vector<float> dv = AvgDivisors(g, a_.count_include_pad, a_.ceil_mode);
        (blocked ? PoolNhwc<false, 8> : PoolNhwc<false>)(g, x->data<float>(), y->data<float>(),
                                                         images, channels, dv.data());
      }
      return Status();
    }
    if (!max_) {
      if (x->dtype() != DataType::kFloat32)
        return NodeError(node_,
                         std::string("only float32 is supported, got ") + DataTypeName(x->dtype()));
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, out));
      if (y->numel() == 0) return Status();
      std::vector<float> dv = AvgDivisors(g, a_.count_include_pad, a_.ceil_mode);
      SeparablePoolPlanes<float, false>(g, x->data<float>(), y->data<float>(), planes, dv.data());
      return Status();
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), out));
    int64_t* idx = nullptr;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * it, ctx.Output(1, DataType::kInt64, out));
      idx = it->data<int64_t>();
    }
    if (y->numel() == 0) return Status();
    bool cm = a_.storage_order == 1;
    switch (x->dtype()) {
      case DataType::kFloat32:
        MaxPoolDispatch(g, x->data<float>(), y->data<float>(), idx, planes, cm);
        break;
      case DataType::kUint8:
        MaxPoolDispatch(g, x->data<uint8_t>(), y->data<uint8_t>(), idx, planes, cm);
        break;
      case DataType::kInt8:
        MaxPoolDispatch(g, x->data<int8_t>(), y->data<int8_t>(), idx, planes, cm);
        break;
      case DataType::kFloat64:
        MaxPoolDispatch(g, x->data<double>(), y->data<double>(), idx, planes, cm);
        break;
      default:
        return NodeError(node_, std::string("unsupported input type ") + DataTypeName(x->dtype()));
    }
    return Status();
  }

  // Inside a channels-last region both X and Y are NHWC or nChw8c; 2-D pools only (the session asks
  // only for float pools without the Indices output).
  bool SetChannelsLast(bool input, bool output) override {
    if (input != output || (input && a_.kernel.size() != 2)) return false;
    channels_last_ = input;
    return true;
  }

  // FLOPs: one comparison or add per kernel tap per output element (output elements * kernel
  // size; the average's division is not counted). Bytes: input + outputs.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (out.empty()) return c;
    c.flops = static_cast<double>(out[0].numel()) * static_cast<double>(Numel(a_.kernel));
    return c;
  }

 private:
  Node node_;
  PoolAttrs a_;
  bool max_;
  bool channels_last_ = false;
};

class GlobalPoolKernel : public Kernel {
 public:
  GlobalPoolKernel(const Node& node, bool max) : node_(node), max_(max) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input X is required");
    if (x->dtype() != DataType::kFloat32)
      return NodeError(node_,
                       std::string("only float32 is supported, got ") + DataTypeName(x->dtype()));
    if (x->rank() < 3)
      return NodeError(node_, "input has rank " + std::to_string(x->rank()) +
                                  ", expected N x C x spatial... (rank >= 3)");
    std::vector<int64_t> out(x->shape().size(), 1);
    out[0] = x->dim(0);
    out[1] = x->dim(1);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, out));
    const int64_t planes = x->dim(0) * x->dim(1);
    if (planes == 0) return Status();
    const int64_t n = x->numel() / planes;
    const float* px = x->data<float>();
    float* py = y->data<float>();
    bool is_max = max_;
    if (channels_last_) {
      // X is NHWC in memory (a channels-last region's activation; the [N, C, 1, 1] output has
      // the same bytes in either order): fold the pixels of each image over contiguous channels,
      // in double for the mean as below. nChw8c is N * C/8 such images of 8 channels, whose
      // [N * C/8, 8] results are the [N, C] output in order.
      const bool blocked = RegionLayoutFor(x->dim(1)) == RegionLayout::kNChw8c;
      const int64_t N = blocked ? x->dim(0) * x->dim(1) / 8 : x->dim(0);
      const int64_t C = blocked ? 8 : x->dim(1);
      (blocked ? GlobalPoolNhwc<8> : GlobalPoolNhwc<>)(px, py, N, C, n, is_max);
      return Status();
    }
    ParallelFor(planes, n, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* v = px + p * n;
        if (is_max) {
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t i = 0; i < n; ++i) m = std::max(m, v[i]);
          py[p] = m;
        } else {
          // Independent lanes so the sum vectorises without reassociation.
          double acc[8] = {}, s = 0;
          int64_t i = 0;
          for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; ++j) acc[j] += v[i + j];
          for (; i < n; ++i) s += v[i];
          for (double a : acc) s += a;
          py[p] = n ? static_cast<float>(s / static_cast<double>(n)) : 0.f;
        }
      }
    });
    return Status();
  }

  // Inside a channels-last region X may be NHWC (input only: the [N, C, 1, 1] output is the
  // same in either order, and the session keeps it NCHW); 4-D inputs only.
  bool SetChannelsLast(bool input, bool output) override {
    if (output) return false;
    channels_last_ = input;
    return true;
  }

  // FLOPs: one add or comparison per input element.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!in.empty()) c.flops = static_cast<double>(in[0].numel());
    return c;
  }

 private:
  Node node_;
  bool max_;
  bool channels_last_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_MaxPool(const Node& node) {
  PoolAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadPoolAttrs(node, &a));
  return std::unique_ptr<Kernel>(new PoolKernel(node, std::move(a), true));
}

StatusOr<std::unique_ptr<Kernel>> Create_AveragePool(const Node& node) {
  PoolAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadPoolAttrs(node, &a));
  return std::unique_ptr<Kernel>(new PoolKernel(node, std::move(a), false));
}

StatusOr<std::unique_ptr<Kernel>> Create_GlobalAveragePool(const Node& node) {
  return std::unique_ptr<Kernel>(new GlobalPoolKernel(node, false));
}

StatusOr<std::unique_ptr<Kernel>> Create_GlobalMaxPool(const Node& node) {
  return std::unique_ptr<Kernel>(new GlobalPoolKernel(node, true));
}

}  // namespace opscope::engine
