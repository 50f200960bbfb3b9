// Decoding the kernel's ring records (sampler.h): PERF_RECORD_SAMPLE as the attr laid it out,
// and MMAP2/COMM/FORK/EXIT/LOST into raw events of the record file.
#include <cstring>

#include "collect/sampler.h"

namespace opscope::collect {
namespace {

const char* CStr(const char* p, const char* end) {
  // Ensures the string is terminated inside the record.
  for (const char* q = p; q < end; ++q)
    if (*q == '\0') return p;
  return nullptr;
}

}  // namespace

bool ParseSample(const perf_event_header* rec, const perf_event_attr& attr, RawSample* out) {
  const char* p = reinterpret_cast<const char*>(rec) + sizeof(perf_event_header);
  const char* end = reinterpret_cast<const char*>(rec) + rec->size;
  auto u64 = [&](uint64_t* v) {
    if (end - p < 8) return false;
    std::memcpy(v, p, 8);
    p += 8;
    return true;
  };
  uint64_t v = 0, ip = 0;
  const uint64_t st = attr.sample_type;
  out->ips.clear();
  out->regs.clear();
  out->stack.clear();
  if (st & PERF_SAMPLE_IDENTIFIER && !u64(&v)) return false;
  if (st & PERF_SAMPLE_IP && !u64(&ip)) return false;
  if (st & PERF_SAMPLE_TID) {
    if (!u64(&v)) return false;
    out->pid = static_cast<int32_t>(v & 0xffffffff);
    out->tid = static_cast<int32_t>(v >> 32);
  }
  if (st & PERF_SAMPLE_TIME) {
    if (!u64(&v)) return false;
    out->time_ns = static_cast<int64_t>(v);
  }
  if (st & PERF_SAMPLE_ADDR && !u64(&v)) return false;
  if (st & PERF_SAMPLE_ID && !u64(&v)) return false;
  if (st & PERF_SAMPLE_STREAM_ID && !u64(&v)) return false;
  if (st & PERF_SAMPLE_CPU && !u64(&v)) return false;
  out->period = 1;
  if (st & PERF_SAMPLE_PERIOD && !u64(&out->period)) return false;
  if (st & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr = 0;
    if (!u64(&nr) || nr > static_cast<uint64_t>(end - p) / 8) return false;
    for (uint64_t i = 0; i < nr; ++i) {
      u64(&v);
      if (v >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) continue;  // context markers
      out->ips.push_back(v);
    }
  }
  if (out->ips.empty()) out->ips.push_back(ip);
  if (st & PERF_SAMPLE_REGS_USER) {
    uint64_t abi = 0;
    if (!u64(&abi)) return false;
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
      int n = __builtin_popcountll(attr.sample_regs_user);
      out->regs.resize(static_cast<size_t>(n));
      for (auto& r : out->regs)
        if (!u64(&r)) return false;
    }
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    uint64_t size = 0;
    if (!u64(&size)) return false;
    if (size) {
      if (size > static_cast<uint64_t>(end - p)) return false;
      const char* data = p;
      p += size;
      uint64_t dyn = 0;
      if (!u64(&dyn)) return false;
      out->stack.assign(data, std::min(dyn, size));
    }
  }
  return true;
}

bool DecodePerfRecord(const perf_event_header* rec, const perf_event_attr& attr, EventBatch* batch,
                      uint64_t* samples, uint64_t* lost) {
  const char* p = reinterpret_cast<const char*>(rec) + sizeof(perf_event_header);
  const char* end = reinterpret_cast<const char*>(rec) + rec->size;
  // With sample_id_all, non-sample records end with {pid, tid, time} (TID then TIME).
  auto trailer_time = [&]() -> int64_t {
    if (end - p < 16) return 0;
    uint64_t t;
    std::memcpy(&t, end - 8, 8);
    return static_cast<int64_t>(t);
  };
  switch (rec->type) {
    case PERF_RECORD_SAMPLE: {
      thread_local RawSample s;
      if (!ParseSample(rec, attr, &s)) return false;
      batch->AddSample(s);
      ++*samples;
      return true;
    }
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2: {
      struct {
        uint32_t pid, tid;
        uint64_t addr, len, pgoff;
      } h;
      // MMAP2 adds {maj, min, ino, ino_generation} (24 bytes) and {prot, flags} before the name.
      size_t fixed = sizeof h + (rec->type == PERF_RECORD_MMAP2 ? 32 : 0);
      if (end - p < static_cast<ptrdiff_t>(fixed)) return false;
      std::memcpy(&h, p, sizeof h);
      if (rec->type == PERF_RECORD_MMAP2) {
        uint32_t prot;
        std::memcpy(&prot, p + sizeof h + 24, 4);
        if (!(prot & 4 /*PROT_EXEC*/)) return false;
      }
      const char* name = CStr(p + fixed, end);
      if (!name) return false;
      RawMmap m{static_cast<int32_t>(h.pid),
                static_cast<int32_t>(h.tid),
                trailer_time(),
                h.addr,
                h.len,
                h.pgoff,
                name};
      batch->AddMmap(m);
      return true;
    }
    case PERF_RECORD_COMM: {
      if (end - p < 8) return false;
      uint32_t ids[2];
      std::memcpy(ids, p, 8);
      const char* name = CStr(p + 8, end);
      if (!name) return false;
      RawComm c{static_cast<int32_t>(ids[0]), static_cast<int32_t>(ids[1]), trailer_time(),
                (rec->misc & PERF_RECORD_MISC_COMM_EXEC) != 0, name};
      batch->AddComm(c);
      return true;
    }
    case PERF_RECORD_FORK: {
      if (end - p < 24) return false;
      uint32_t ids[4];
      uint64_t t;
      std::memcpy(ids, p, 16);
      std::memcpy(&t, p + 16, 8);
      batch->AddFork({static_cast<int32_t>(ids[0]), static_cast<int32_t>(ids[1]),
                      static_cast<int32_t>(ids[2]), static_cast<int32_t>(ids[3]),
                      static_cast<int64_t>(t)});
      return true;
    }
    case PERF_RECORD_LOST: {
      if (end - p < 16) return false;
      uint64_t n;
      std::memcpy(&n, p + 8, 8);
      *lost += n;
      batch->AddLost(n);
      return true;
    }
    case 13: {  // PERF_RECORD_LOST_SAMPLES
      if (end - p < 8) return false;
      uint64_t n;
      std::memcpy(&n, p, 8);
      *lost += n;
      batch->AddLost(n);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace opscope::collect
