#include "collect/record_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/files.h"
#include "base/strings.h"
#include "profile/json_text.h"

namespace opscope::collect {
namespace {

enum EventTag : uint8_t { kTagSample = 1, kTagMmap = 2, kTagComm = 3, kTagFork = 4, kTagLost = 5 };

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void PutZigzag(std::string& out, int64_t v) {
  PutVarint(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
void PutString(std::string& out, std::string_view s) {
  PutVarint(out, s.size());
  out.append(s);
}
void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// Bounds-checked cursor: every read fails softly (ok() turns false) instead of overrunning.
class Cursor {
 public:
  explicit Cursor(std::string_view b) : b_(b) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ >= b_.size(); }
  size_t pos() const { return pos_; }
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= b_.size()) return Fail();
      uint8_t c = static_cast<uint8_t>(b_[pos_++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    return Fail();
  }
  int64_t Zigzag() {
    uint64_t u = Varint();
    return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  uint8_t Byte() {
    if (pos_ >= b_.size()) return static_cast<uint8_t>(Fail());
    return static_cast<uint8_t>(b_[pos_++]);
  }
  std::string_view Bytes(uint64_t n) {
    if (n > b_.size() - pos_) {
      Fail();
      return {};
    }
    std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string String() { return std::string(Bytes(Varint())); }
  double Double() {
    std::string_view s = Bytes(8);
    double d = 0;
    if (s.size() == 8) std::memcpy(&d, s.data(), 8);
    return d;
  }
  // A count of items each at least `min_bytes` long: rejects counts the remaining bytes cannot
  // hold, so a corrupt count cannot make us allocate gigabytes.
  uint64_t Count(size_t min_bytes) {
    uint64_t n = Varint();
    if (ok_ && n > (b_.size() - pos_) / std::max<size_t>(min_bytes, 1)) return Fail();
    return n;
  }

 private:
  uint64_t Fail() {
    ok_ = false;
    pos_ = b_.size();
    return 0;
  }
  std::string_view b_;
  size_t pos_ = 0;
  bool ok_ = true;
};

uint32_t ReadU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

nlohmann::json MetaToJson(const RecordMeta& m) {
  return {{"event", m.event},
          {"unit", m.unit},
          {"call_graph", CallGraphName(m.call_graph)},
          {"frequency_hz", m.frequency_hz},
          {"regs_mask", m.regs_mask},
          {"stack_bytes", m.stack_bytes},
          {"command", m.command},
          {"pid", m.pid},
          {"degradations", m.degradations},
          {"host", m.host},
          {"kernel", m.kernel},
          {"arch", m.arch},
          {"cpu_model", m.cpu_model},
          {"created", m.created},
          {"logical_cpus", m.logical_cpus},
          {"uid", m.uid}};
}

template <typename T>
void Get(const nlohmann::json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) it->get_to(out);
}

}  // namespace

const char* CallGraphName(CallGraph cg) { return cg == CallGraph::kDwarf ? "dwarf" : "fp"; }

void EventBatch::AddSample(const RawSample& s) {
  bytes_.push_back(static_cast<char>(kTagSample));
  PutVarint(bytes_, static_cast<uint32_t>(s.pid));
  PutVarint(bytes_, static_cast<uint32_t>(s.tid));
  PutVarint(bytes_, static_cast<uint64_t>(s.time_ns));
  PutVarint(bytes_, s.period);
  PutVarint(bytes_, s.ips.size());
  for (uint64_t ip : s.ips) PutVarint(bytes_, ip);
  PutVarint(bytes_, s.regs.size());
  for (uint64_t r : s.regs) PutVarint(bytes_, r);
  PutString(bytes_, s.stack);
}
void EventBatch::AddMmap(const RawMmap& m) {
  bytes_.push_back(static_cast<char>(kTagMmap));
  PutVarint(bytes_, static_cast<uint32_t>(m.pid));
  PutVarint(bytes_, static_cast<uint32_t>(m.tid));
  PutVarint(bytes_, static_cast<uint64_t>(m.time_ns));
  PutVarint(bytes_, m.start);
  PutVarint(bytes_, m.len);
  PutVarint(bytes_, m.pgoff);
  PutString(bytes_, m.filename);
}
void EventBatch::AddComm(const RawComm& c) {
  bytes_.push_back(static_cast<char>(kTagComm));
  PutVarint(bytes_, static_cast<uint32_t>(c.pid));
  PutVarint(bytes_, static_cast<uint32_t>(c.tid));
  PutVarint(bytes_, static_cast<uint64_t>(c.time_ns));
  bytes_.push_back(c.exec ? 1 : 0);
  PutString(bytes_, c.comm);
}
void EventBatch::AddFork(const RawFork& f) {
  bytes_.push_back(static_cast<char>(kTagFork));
  PutVarint(bytes_, static_cast<uint32_t>(f.pid));
  PutVarint(bytes_, static_cast<uint32_t>(f.ppid));
  PutVarint(bytes_, static_cast<uint32_t>(f.tid));
  PutVarint(bytes_, static_cast<uint32_t>(f.ptid));
  PutVarint(bytes_, static_cast<uint64_t>(f.time_ns));
}
void EventBatch::AddLost(uint64_t n) {
  bytes_.push_back(static_cast<char>(kTagLost));
  PutVarint(bytes_, n);
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Why a write failed, in words a user can act on.
Status WriteFailure(const std::string& path, int err, const std::string& what) {
  if (err == ENOSPC || err == EDQUOT)
    return ResourceExhausted(path + ": " + what + ": the disk is full (" + std::strerror(err) +
                             ")");
  if (err == EFBIG)
    return ResourceExhausted(path + ": " + what + ": the file size limit was reached (" +
                             std::strerror(err) + "; see `ulimit -f`)");
  return Internal(path + ": " + what + ": " + std::strerror(err));
}

// write(2) of all of `data`; errno is kept on failure (a short write counts as failure).
bool WriteAll(int fd, const char* data, size_t n, int* err) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = ::write(fd, data + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *err = w < 0 ? errno : ENOSPC;
      return false;
    }
    off += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Create(const std::string& path) {
  OPSCOPE_RETURN_IF_ERROR(CheckWritable(path));
  // A file size limit must show as EFBIG on write, not end opscope (SIGXFSZ's default action).
  signal(SIGXFSZ, SIG_IGN);
  // Without O_TRUNC first, and O_NONBLOCK: a FIFO or device is refused (the file is cut back to
  // its last whole chunk on error, so it must be a regular file) before anything is truncated or
  // any open waits for a reader.
  const std::string not_regular =
      ": not a regular file (a FIFO or a device): a recording is written as a file it can cut "
      "back; give a file name";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENXIO) return InvalidArgument(path + not_regular);  // FIFO, no reader
  if (fd < 0) return PermissionDenied(path + ": cannot create: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + not_regular);
  }
  if (::ftruncate(fd, 0) != 0) {
    const int err = errno;
    ::close(fd);
    return PermissionDenied(path + ": cannot truncate: " + std::strerror(err));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  auto w = std::unique_ptr<RecordWriter>(new RecordWriter);
  w->fd_ = fd;
  w->path_ = path;
  int err = 0;
  if (!WriteAll(fd, kRecordMagic, sizeof kRecordMagic, &err)) {
    w->Discard();
    return WriteFailure(path, err, "nothing could be written");
  }
  w->committed_ = sizeof kRecordMagic;
  return w;
}

void RecordWriter::Discard() {
  if (fd_ < 0) return;
  struct stat st {};
  const bool regular = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd_);
  fd_ = -1;
  if (regular) ::unlink(path_.c_str());
}

std::string MakeChunk(ChunkType type, std::string_view payload) {
  std::string buf;
  buf.reserve(12 + payload.size());
  PutU32(buf, static_cast<uint32_t>(type));
  PutU32(buf, static_cast<uint32_t>(payload.size()));
  PutU32(buf, static_cast<uint32_t>(
                  crc32(0, reinterpret_cast<const Bytef*>(payload.data()), payload.size())));
  buf.append(payload);
  return buf;
}

std::string MetaChunkPayload(const RecordMeta& meta) { return profile::DumpJson(MetaToJson(meta)); }

Status RecordWriter::WriteChunk(ChunkType type, std::string_view payload) {
  if (!failure_.ok()) return failure_;
  if (fd_ < 0) return Internal(path_ + ": writer is closed");
  std::string buf = MakeChunk(type, payload);
  int err = 0;
  if (!WriteAll(fd_, buf.data(), buf.size(), &err)) {
    // Cut the piece of the chunk that did get written: the file ends on a whole chunk.
    if (::ftruncate(fd_, static_cast<off_t>(committed_)) == 0)
      ::lseek(fd_, static_cast<off_t>(committed_), SEEK_SET);
    failure_ = WriteFailure(path_, err, "write failed");
    return failure_;
  }
  committed_ += buf.size();
  return Status::Ok();
}

Status RecordWriter::WriteMeta(const RecordMeta& meta) {
  return WriteChunk(ChunkType::kMeta, profile::DumpJson(MetaToJson(meta)));
}
Status RecordWriter::WriteEvents(const EventBatch& batch) {
  if (batch.empty()) return Status::Ok();
  return WriteChunk(ChunkType::kEvents, batch.bytes());
}
Status RecordWriter::WriteSymbolized(const profile::SampleSection& section) {
  return WriteChunk(ChunkType::kSymbolized, EncodeSampleSection(section));
}
Status RecordWriter::WriteEnd(const RecordEnd& end) {
  nlohmann::json j = {{"exit", end.exit},
                      {"exit_code", end.exit_code},
                      {"samples", end.samples},
                      {"lost", end.lost}};
  return WriteChunk(ChunkType::kEnd, profile::DumpJson(j));
}
Status RecordWriter::Close() {
  if (fd_ < 0) return Status::Ok();
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) return Internal(path_ + ": close failed: " + std::strerror(errno));
  return Status::Ok();
}

bool RecordReader::Sniff(std::string_view first_bytes) {
  return first_bytes.size() >= sizeof kRecordMagic &&
         std::memcmp(first_bytes.data(), kRecordMagic, sizeof kRecordMagic) == 0;
}

StatusOr<RecordReader> RecordReader::Open(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return PermissionDenied(path + ": cannot stat: " + std::strerror(err));
  }
  RecordReader r;
  size_t size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return Internal(path + ": cannot map: " + std::strerror(errno));
    }
    r.storage_ = std::shared_ptr<const void>(
        p, [size](const void* q) { munmap(const_cast<void*>(q), size); });
    r.bytes_ = std::string_view(static_cast<const char*>(p), size);
  }
  ::close(fd);
  r.origin_ = path;
  OPSCOPE_RETURN_IF_ERROR(r.Parse(path));
  return r;
}

StatusOr<RecordReader> RecordReader::FromBytes(std::string bytes, const std::string& origin) {
  RecordReader r;
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  r.bytes_ = *owned;
  r.storage_ = owned;
  r.origin_ = origin;
  OPSCOPE_RETURN_IF_ERROR(r.Parse(origin));
  return r;
}

namespace {

const char* ChunkName(uint32_t type) {
  switch (static_cast<ChunkType>(type)) {
    case ChunkType::kMeta:
      return "meta";
    case ChunkType::kEvents:
      return "events";
    case ChunkType::kSymbolized:
      return "symbol";
    case ChunkType::kEnd:
      return "end";
  }
  return "unknown";
}

bool CrcMatches(std::string_view payload, uint32_t crc) {
  return crc32(0, reinterpret_cast<const Bytef*>(payload.data()),
               static_cast<uInt>(payload.size())) == crc;
}

// CRC-32 of any byte range of a region in O(kStride + log n): zlib's CRC of a prefix is kept
// every kStride bytes (extended on demand), and crc(B) for A|B follows from crc(A) and crc(A|B)
// (crc(A|B) = shift_|B|(crc(A)) ^ crc(B), the identity behind crc32_combine). A resync tries a
// candidate chunk at nearly every offset after the damage, each with a length up to the rest of
// the file: checksumming each candidate directly was quadratic (the record_file fuzzer ran ~840
// inputs/s, and a damaged multi-gigabyte recording would never finish).
class RangeCrc {
 public:
  RangeCrc(std::string_view bytes, size_t base) : bytes_(bytes), base_(base) {
    prefix_.push_back(static_cast<uint32_t>(crc32(0, nullptr, 0)));
  }
  // CRC of bytes [start, start + len); base <= start, start + len <= size.
  uint32_t Of(size_t start, size_t len) {
    const uLong a = Prefix(start), ab = Prefix(start + len);
    return static_cast<uint32_t>(ab ^ crc32_combine(a, 0, static_cast<z_off_t>(len)));
  }

 private:
  static constexpr size_t kStride = 64;  // the table is 1/16 of the region scanned
  uLong Prefix(size_t end) {             // CRC of [base, end)
    const size_t rel = end - base_, i = rel / kStride;
    while (prefix_.size() <= i) {
      const size_t at = base_ + (prefix_.size() - 1) * kStride;
      prefix_.push_back(static_cast<uint32_t>(crc32(prefix_.back(), Ptr(at), kStride)));
    }
    return crc32(prefix_[i], Ptr(base_ + i * kStride), static_cast<uInt>(rel - i * kStride));
  }
  const Bytef* Ptr(size_t at) const { return reinterpret_cast<const Bytef*>(bytes_.data() + at); }
  std::string_view bytes_;
  size_t base_;
  std::vector<uint32_t> prefix_;  // prefix_[i]: CRC of [base, base + i * kStride)
};

// The first offset at or after `from` where a whole chunk of a known type starts and passes its
// checksum, or npos. Used after a damaged chunk: the chunks after the damage are still good.
size_t NextValidChunk(std::string_view bytes, size_t from, std::unique_ptr<RangeCrc>& crc) {
  if (!crc) crc = std::make_unique<RangeCrc>(bytes, from);
  for (size_t p = from; p + 12 <= bytes.size(); ++p) {
    uint32_t type = ReadU32(&bytes[p]);
    if (type < static_cast<uint32_t>(ChunkType::kMeta) ||
        type > static_cast<uint32_t>(ChunkType::kEnd))
      continue;
    uint32_t len = ReadU32(&bytes[p + 4]);
    if (len > bytes.size() - p - 12) continue;
    if (crc->Of(p + 12, len) == ReadU32(&bytes[p + 8])) return p;
  }
  return std::string_view::npos;
}

}  // namespace

Status RecordReader::Parse(const std::string& origin) {
  if (!Sniff(bytes_)) {
    if (bytes_.size() < sizeof kRecordMagic &&
        std::string_view(kRecordMagic, bytes_.size()) == bytes_ && !bytes_.empty())
      return DataLoss(origin + ": record file truncated inside its header (nothing was recorded)");
    return Unsupported(origin + ": not an opscope record file (bad magic)");
  }
  size_t pos = sizeof kRecordMagic;
  bool have_meta = false;
  std::string meta_damage;  // why the meta chunk could not be read, if it was there but damaged
  std::unique_ptr<RangeCrc> resync_crc;  // built at the first damage, reused by later ones
  while (pos < bytes_.size()) {
    if (bytes_.size() - pos < 12) {
      drop_reason_ = "truncated chunk header";
      break;
    }
    uint32_t type = ReadU32(&bytes_[pos]);
    uint32_t len = ReadU32(&bytes_[pos + 4]);
    uint32_t crc = ReadU32(&bytes_[pos + 8]);
    const bool fits = len <= bytes_.size() - pos - 12;
    std::string_view payload = fits ? bytes_.substr(pos + 12, len) : std::string_view();
    // Event chunks (nearly all the bytes) are checked when visited, so reporting a finished
    // recording does not read them at all.
    const bool crc_ok =
        fits && (static_cast<ChunkType>(type) == ChunkType::kEvents || CrcMatches(payload, crc));
    if (!fits || !crc_ok) {
      // Either the recording was cut short here (nothing valid follows) or these bytes were
      // damaged after they were written (a valid chunk follows): read on from that chunk.
      size_t next = NextValidChunk(bytes_, pos + 1, resync_crc);
      std::string what =
          fits ? fmt::format("a {} chunk fails its checksum", ChunkName(type))
               : fmt::format("a chunk header gives a length ({} bytes) past the end of the file",
                             len);
      if (pos == sizeof kRecordMagic) meta_damage = what;
      if (next == std::string_view::npos) {
        drop_reason_ = fits ? "chunk checksum mismatch (corrupt file)"
                            : "truncated chunk (the recording was cut short)";
        break;
      }
      problems_.push_back(
          fmt::format("corrupt record file: at byte {}, {}; skipped {} bytes and read on "
                      "from the next valid chunk",
                      pos, what, next - pos));
      pos = next;
      continue;
    }
    switch (static_cast<ChunkType>(type)) {
      case ChunkType::kMeta: {
        auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object())
          return DataLoss(origin + ": record file header (meta chunk) is not valid JSON");
        try {
          std::string cg;
          Get(j, "event", meta_.event);
          Get(j, "unit", meta_.unit);
          Get(j, "call_graph", cg);
          meta_.call_graph = cg == "dwarf" ? CallGraph::kDwarf : CallGraph::kFramePointer;
          Get(j, "frequency_hz", meta_.frequency_hz);
          Get(j, "regs_mask", meta_.regs_mask);
          Get(j, "stack_bytes", meta_.stack_bytes);
          Get(j, "command", meta_.command);
          Get(j, "pid", meta_.pid);
          Get(j, "degradations", meta_.degradations);
          Get(j, "host", meta_.host);
          Get(j, "kernel", meta_.kernel);
          Get(j, "arch", meta_.arch);
          Get(j, "cpu_model", meta_.cpu_model);
          Get(j, "created", meta_.created);
          Get(j, "logical_cpus", meta_.logical_cpus);
          Get(j, "uid", meta_.uid);
        } catch (const std::exception& e) {
          return DataLoss(origin + ": record file meta chunk malformed: " + e.what());
        }
        have_meta = true;
        break;
      }
      case ChunkType::kEvents:
        event_chunks_.push_back({pos + 12, len, crc});
        break;
      case ChunkType::kSymbolized: {
        auto s = DecodeSampleSection(payload);
        if (s.ok()) {
          symbolized_ = std::move(*s);
        } else {
          symbolized_.reset();
          problems_.push_back(
              fmt::format("corrupt record file: the symbol chunk at byte {} cannot be "
                          "decoded ({}); the raw events are symbolized instead",
                          pos, s.status().message()));
        }
        break;
      }
      case ChunkType::kEnd: {
        auto j = nlohmann::json::parse(payload, nullptr, false);
        if (j.is_object()) {
          RecordEnd e;
          try {
            Get(j, "exit", e.exit);
            Get(j, "exit_code", e.exit_code);
            Get(j, "samples", e.samples);
            Get(j, "lost", e.lost);
          } catch (const std::exception&) {
          }
          end_ = e;
        }
        break;
      }
      default:
        break;  // unknown chunk types from a newer writer are skipped
    }
    pos += 12 + len;
  }
  bytes_dropped_ = bytes_.size() - pos;
  if (!have_meta) {
    const size_t after_magic = bytes_.size() - sizeof kRecordMagic;
    if (after_magic == 0)
      return DataLoss(origin +
                      ": record file truncated right after the magic (nothing was recorded)");
    if (after_magic < 12)
      return DataLoss(origin +
                      ": record file truncated inside its first chunk header (nothing was "
                      "recorded)");
    if (!symbolized_ && !meta_damage.empty())
      return DataLoss(origin + ": record file's meta chunk at byte 8 is unreadable (" +
                      meta_damage +
                      (problems_.empty() ? "): the file is corrupt, or was cut short inside it"
                                         : "): the file is corrupt") +
                      "; the events cannot be read without it");
    if (!symbolized_)
      return DataLoss(origin +
                      ": record file has no meta chunk (corrupt file: the first chunk after "
                      "the magic is a " +
                      ChunkName(ReadU32(&bytes_[sizeof kRecordMagic])) + " chunk)");
    problems_.push_back(
        "corrupt record file: its meta chunk is unreadable, so the command, host and "
        "sampling settings are unknown; the samples come from the symbol chunk");
  }
  return Status::Ok();
}

Status RecordReader::VisitEvents(const EventVisitor& v) const {
  RawSample s;
  std::vector<std::string> bad;  // one line per chunk that could not be read (whole or in part)
  for (const ChunkRef& ref : event_chunks_) {
    std::string_view payload = bytes_.substr(ref.offset, ref.length);
    const size_t at = ref.offset - 12;
    if (!CrcMatches(payload, ref.crc)) {
      bad.push_back(fmt::format("the events chunk at byte {} fails its checksum", at));
      continue;
    }
    Cursor c(payload);
    std::string chunk_error;
    while (!c.done() && c.ok() && chunk_error.empty()) {
      uint8_t tag = c.Byte();
      switch (tag) {
        case kTagSample: {
          s.pid = static_cast<int32_t>(c.Varint());
          s.tid = static_cast<int32_t>(c.Varint());
          s.time_ns = static_cast<int64_t>(c.Varint());
          s.period = c.Varint();
          uint64_t n = c.Count(1);
          s.ips.resize(n);
          for (auto& ip : s.ips) ip = c.Varint();
          n = c.Count(1);
          s.regs.resize(n);
          for (auto& r : s.regs) r = c.Varint();
          s.stack.assign(c.Bytes(c.Varint()));
          if (c.ok() && v.sample) v.sample(s);
          break;
        }
        case kTagMmap: {
          RawMmap m;
          m.pid = static_cast<int32_t>(c.Varint());
          m.tid = static_cast<int32_t>(c.Varint());
          m.time_ns = static_cast<int64_t>(c.Varint());
          m.start = c.Varint();
          m.len = c.Varint();
          m.pgoff = c.Varint();
          m.filename = c.String();
          if (c.ok() && v.mmap) v.mmap(m);
          break;
        }
        case kTagComm: {
          RawComm m;
          m.pid = static_cast<int32_t>(c.Varint());
          m.tid = static_cast<int32_t>(c.Varint());
          m.time_ns = static_cast<int64_t>(c.Varint());
          m.exec = c.Byte() != 0;
          m.comm = c.String();
          if (c.ok() && v.comm) v.comm(m);
          break;
        }
        case kTagFork: {
          RawFork f;
          f.pid = static_cast<int32_t>(c.Varint());
          f.ppid = static_cast<int32_t>(c.Varint());
          f.tid = static_cast<int32_t>(c.Varint());
          f.ptid = static_cast<int32_t>(c.Varint());
          f.time_ns = static_cast<int64_t>(c.Varint());
          if (c.ok() && v.fork) v.fork(f);
          break;
        }
        case kTagLost: {
          uint64_t n = c.Varint();
          if (c.ok() && v.lost) v.lost(n);
          break;
        }
        default:
          chunk_error = fmt::format("unknown event tag {}", tag);
      }
    }
    if (!c.ok()) chunk_error = "a malformed event";
    if (!chunk_error.empty())
      bad.push_back(
          fmt::format("the events chunk at byte {} has {}; the rest of that chunk is skipped", at,
                      chunk_error));
  }
  if (!bad.empty())
    return DataLoss(
        fmt::format("corrupt record file {}: {}; the other {} events chunk(s) were read", origin_,
                    Join(bad, "; "), event_chunks_.size() - bad.size()));
  return Status::Ok();
}

std::string EncodeSampleSection(const profile::SampleSection& s) {
  std::string out;
  std::vector<std::string_view> strings;
  std::unordered_map<std::string_view, uint64_t> ids;
  auto intern = [&](std::string_view str) {
    auto [it, inserted] = ids.emplace(str, strings.size());
    if (inserted) strings.push_back(str);
    return it->second;
  };
  std::string frames;
  PutVarint(frames, s.frames.size());
  for (const auto& f : s.frames) {
    PutVarint(frames, intern(f.function));
    PutVarint(frames, intern(f.module));
    PutVarint(frames, intern(f.file));
    PutVarint(frames, static_cast<uint64_t>(f.line < 0 ? 0 : f.line));
    PutVarint(frames, f.address);
    frames.push_back(f.inlined ? 1 : 0);
  }
  // Stacks are interned: most samples repeat a few thousand distinct stacks.
  struct VecHash {
    size_t operator()(const std::vector<uint32_t>& v) const {
      size_t h = v.size();
      for (uint32_t x : v) h = h * 1000003u ^ x;
      return h;
    }
  };
  std::unordered_map<std::vector<uint32_t>, uint64_t, VecHash> stack_ids;
  std::string stacks, samples;
  PutVarint(samples, s.samples.size());
  int64_t prev_time = 0;
  for (const auto& smp : s.samples) {
    auto [it, inserted] = stack_ids.emplace(smp.stack, stack_ids.size());
    if (inserted) {
      PutVarint(stacks, smp.stack.size());
      for (uint32_t f : smp.stack) PutVarint(stacks, f);
    }
    PutVarint(samples, it->second);
    PutVarint(samples, static_cast<uint32_t>(smp.pid));
    PutVarint(samples, static_cast<uint32_t>(smp.tid));
    PutZigzag(samples, smp.time_ns - prev_time);
    prev_time = smp.time_ns;
    samples.append(reinterpret_cast<const char*>(&smp.weight), 8);
    PutZigzag(samples, smp.op);
  }
  PutString(out, s.event);
  PutString(out, s.unit);
  PutString(out, s.call_graph);
  out.append(reinterpret_cast<const char*>(&s.frequency_hz), 8);
  PutVarint(out, s.lost);
  PutVarint(out, strings.size());
  for (auto str : strings) PutString(out, str);
  out += frames;
  PutVarint(out, stack_ids.size());
  out += stacks;
  out += samples;
  PutVarint(out, s.thread_names.size());
  for (const auto& [tid, name] : s.thread_names) {
    PutZigzag(out, tid);
    PutString(out, name);
  }
  PutVarint(out, s.warnings.size());
  for (const auto& w : s.warnings) PutString(out, w);
  // Added after the first release of the format: readers of older chunks find none.
  PutVarint(out, s.modules.size());
  for (const auto& m : s.modules) {
    PutString(out, m.name);
    PutString(out, m.path);
    PutString(out, m.build_id);
  }
  return out;
}

StatusOr<profile::SampleSection> DecodeSampleSection(std::string_view bytes) {
  Cursor c(bytes);
  profile::SampleSection s;
  s.event = c.String();
  s.unit = c.String();
  s.call_graph = c.String();
  s.frequency_hz = c.Double();
  s.lost = c.Varint();
  std::vector<std::string> strings(c.Count(1));
  for (auto& str : strings) str = c.String();
  auto str_at = [&](uint64_t i) -> const std::string& {
    static const std::string kEmpty;
    return i < strings.size() ? strings[i] : kEmpty;
  };
  s.frames.resize(c.Count(6));
  for (auto& f : s.frames) {
    f.function = str_at(c.Varint());
    f.module = str_at(c.Varint());
    f.file = str_at(c.Varint());
    f.line = static_cast<int>(c.Varint());
    f.address = c.Varint();
    f.inlined = c.Byte() != 0;
  }
  std::vector<std::vector<uint32_t>> stacks(c.Count(1));
  for (auto& st : stacks) {
    st.resize(c.Count(1));
    for (auto& f : st) {
      uint64_t id = c.Varint();
      if (id >= s.frames.size())
        return DataLoss("symbolized chunk: stack refers to a missing frame");
      f = static_cast<uint32_t>(id);
    }
  }
  s.samples.resize(c.Count(13));
  int64_t time = 0;
  for (auto& smp : s.samples) {
    uint64_t id = c.Varint();
    if (!c.ok()) break;
    if (id >= stacks.size()) return DataLoss("symbolized chunk: sample refers to a missing stack");
    smp.stack = stacks[id];
    smp.pid = static_cast<int32_t>(c.Varint());
    smp.tid = static_cast<int32_t>(c.Varint());
    time += c.Zigzag();
    smp.time_ns = time;
    smp.weight = c.Double();
    smp.op = static_cast<int32_t>(c.Zigzag());
  }
  uint64_t n = c.Count(2);
  for (uint64_t i = 0; i < n && c.ok(); ++i) {
    int32_t tid = static_cast<int32_t>(c.Zigzag());
    s.thread_names[tid] = c.String();
  }
  s.warnings.resize(c.Count(1));
  for (auto& w : s.warnings) w = c.String();
  // Chunks written before modules were recorded end here.
  if (c.ok() && !c.done()) {
    s.modules.resize(c.Count(3));
    for (auto& m : s.modules) {
      m.name = c.String();
      m.path = c.String();
      m.build_id = c.String();
    }
  }
  if (!c.ok()) return DataLoss("symbolized chunk is malformed (corrupt file)");
  return s;
}

}  // namespace opscope::collect
