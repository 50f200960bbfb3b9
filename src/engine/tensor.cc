#include "opscope/tensor.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

#include "base/strings.h"
#include "engine/kernel.h"
#include "engine/memory_limit.h"

namespace opscope::engine {
namespace {

std::atomic<size_t> g_live_bytes{0};
std::atomic<size_t> g_limit_override{0};

// Physical RAM, or the cgroup v2 limit of this process when it is set and smaller.
size_t MachineMemory() {
  static const size_t bytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t ram = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page)
                                       : size_t{1} << 36;
    std::ifstream f("/sys/fs/cgroup/memory.max");
    unsigned long long cg = 0;
    if (f >> cg && cg > 0 && cg < ram) ram = static_cast<size_t>(cg);
    return ram;
  }();
  return bytes;
}

std::string Gib(size_t bytes) { return HumanBytes(static_cast<double>(bytes)); }

// MemAvailable from /proc/meminfo (bytes), 0 when unknown.
size_t AvailableMemory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  unsigned long long kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return static_cast<size_t>(kb) * 1024;
  return 0;
}

// Allocations at least this large are also checked against the memory available now: zero-
// filling them is what would push the machine into the out-of-memory killer.
constexpr size_t kCheckAvailableBytes = size_t{256} << 20;

}  // namespace

void SetTensorMemoryLimit(size_t bytes) { g_limit_override = bytes; }

size_t TensorMemoryLimit() {
  size_t o = g_limit_override.load();
  return o > 0 ? o : MachineMemory();
}

size_t LiveTensorBytes() { return g_live_bytes.load(); }

std::string TensorMemoryError(size_t bytes) {
  const size_t limit = TensorMemoryLimit(), live = LiveTensorBytes();
  const std::string of =
      g_limit_override.load() > 0 ? " (the tensor memory limit)" : " (this machine's memory)";
  if (bytes <= limit && live <= limit - bytes) {
    if (g_limit_override.load() > 0 || bytes < kCheckAvailableBytes) return "";
    const size_t avail = AvailableMemory();
    if (avail == 0 || bytes <= avail) return "";
    return "would need " + Gib(bytes) + ", more than the " + Gib(avail) +
           " of memory available on this machine now (MemAvailable)";
  }
  if (bytes > limit) return "would need " + Gib(bytes) + ", more than the " + Gib(limit) + of;
  return "would need " + Gib(bytes) + " with " + Gib(live) +
         " held by other tensors, more than the " + Gib(limit) + of;
}

const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kInt64:
      return "int64";
    case DataType::kInt32:
      return "int32";
    case DataType::kBool:
      return "bool";
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kFloat64:
      return "float64";
    case DataType::kFloat16:
      return "float16";
  }
  return "?";
}

size_t DataTypeSize(DataType t) {
  switch (t) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
    case DataType::kFloat64:
      return 8;
    case DataType::kBool:
    case DataType::kUint8:
    case DataType::kInt8:
      return 1;
    case DataType::kFloat16:
      return 2;
  }
  return 1;
}

bool CheckedNumel(const std::vector<int64_t>& shape, int64_t* numel) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(n, d, &n)) return false;
  }
  *numel = n;
  return true;
}

// For shapes of memory that exists (borrowed, reshaped, described): they cannot overflow, so an
// impossible shape saturates rather than wrapping around.
static int64_t NumelOf(const std::vector<int64_t>& s) {
  int64_t n = 0;
  return CheckedNumel(s, &n) ? n : INT64_MAX;
}

Tensor::Tensor(DataType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  size_t bytes = 0;
  if (!CheckedNumel(shape_, &numel_) ||
      __builtin_mul_overflow(static_cast<size_t>(numel_), DataTypeSize(dtype_), &bytes) ||
      bytes > SIZE_MAX - 64)
    throw std::bad_alloc();
  size_t alloc = ((bytes + 63) / 64) * 64;
  if (alloc == 0) alloc = 64;
  // Reserved before the allocation, so concurrent allocations cannot both pass the check.
  const size_t limit = TensorMemoryLimit();
  size_t live = g_live_bytes.load();
  do {
    if (alloc > limit || live > limit - alloc) throw std::bad_alloc();
  } while (!g_live_bytes.compare_exchange_weak(live, live + alloc));
  void* p = std::aligned_alloc(64, alloc);
  if (!p) {
    g_live_bytes -= alloc;
    throw std::bad_alloc();
  }
  std::memset(p, 0, alloc);
  owner_ = std::shared_ptr<void>(p, [alloc](void* q) {
    std::free(q);
    g_live_bytes -= alloc;
  });
  data_ = p;
}

Tensor Tensor::Borrow(DataType dtype, std::vector<int64_t> shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = NumelOf(t.shape_);
  t.data_ = data;
  return t;
}

void Tensor::Reshape(std::vector<int64_t> shape) {
  shape_ = std::move(shape);
  numel_ = NumelOf(shape_);
}

int64_t TensorDesc::numel() const { return NumelOf(shape); }
double TensorDesc::nbytes() const { return static_cast<double>(numel()) * DataTypeSize(dtype); }

double CompulsoryBytes(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) {
  double b = 0;
  for (const auto& d : in) b += d.nbytes();
  for (const auto& d : out) b += d.nbytes();
  return b;
}

}  // namespace opscope::engine
