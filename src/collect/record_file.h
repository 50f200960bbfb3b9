// The record file: what `opscope record` writes while the command runs.
//
// Design. A record file must stay readable when the profiled command crashes and when opscope
// itself is killed, so it is a sequence of self-contained chunks appended as sampling goes:
//
//   file   := header chunk*
//   header := "OPSREC\0\1" (8 bytes)
//   chunk  := type:u32  length:u32  crc32(payload):u32  payload[length]      (little endian)
//
// A chunk that fails its CRC, or whose length runs past the end of the file, is either a cut
// (nothing valid follows: the reader stops there and says how many bytes it could not use) or
// damage (a valid chunk follows: the reader says so in problems() and reads on from that chunk).
// Chunk types:
//   kMeta        JSON object: event, unit, call graph mode, frequency, register mask, command.
//   kEvents      a batch of raw events (mmaps, comms, forks, samples, lost counts) in the order
//                the drain thread read them; written at least every poll round (~100 ms).
//   kSymbolized  the finished sample section (frames interned, stacks interned), appended once at
//                the end of record while the profiled binaries are still on disk. `report` uses
//                it when present and otherwise unwinds and symbolizes the raw events itself.
//   kEnd         JSON object: exit status of the command, sample and lost counts.
//
// Values inside payloads are LEB128 varints unless said otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profile/samples.h"

namespace opscope::collect {

inline constexpr char kRecordMagic[8] = {'O', 'P', 'S', 'R', 'E', 'C', '\0', '\1'};

enum class ChunkType : uint32_t { kMeta = 1, kEvents = 2, kSymbolized = 3, kEnd = 4 };

enum class CallGraph { kFramePointer, kDwarf };
const char* CallGraphName(CallGraph cg);  // "fp" or "dwarf"

// A raw sample as the kernel gave it. For frame-pointer call graphs `ips` is the user call chain
// (leaf first, context markers removed); for DWARF `ips` holds only the sampled IP and `regs` +
// `stack` carry what the unwinder needs.
struct RawSample {
  int32_t pid = 0, tid = 0;
  int64_t time_ns = 0;
  uint64_t period = 0;
  std::vector<uint64_t> ips;
  std::vector<uint64_t> regs;  // perf user registers in mask order
  std::string stack;           // copy of the user stack starting at SP (dyn_size bytes)
};

struct RawMmap {
  int32_t pid = 0, tid = 0;
  int64_t time_ns = 0;
  uint64_t start = 0, len = 0, pgoff = 0;
  std::string filename;
};

struct RawComm {
  int32_t pid = 0, tid = 0;
  int64_t time_ns = 0;
  bool exec = false;  // the comm changed because the process exec'd (its maps are replaced)
  std::string comm;
};

struct RawFork {
  int32_t pid = 0, ppid = 0, tid = 0, ptid = 0;
  int64_t time_ns = 0;
};

// The run's description written first (kMeta).
struct RecordMeta {
  std::string event = "cpu-clock";
  std::string unit = "ns";
  CallGraph call_graph = CallGraph::kFramePointer;
  double frequency_hz = 0;
  uint64_t regs_mask = 0;
  uint32_t stack_bytes = 0;
  std::string command;
  int32_t pid = 0;
  std::vector<std::string> degradations;
  std::string host, kernel, arch, cpu_model, created;
  int logical_cpus = 0;
  int64_t uid = -1;  // effective uid of the recorder (and so of the recorded command); -1: unknown
};

struct RecordEnd {
  std::string exit;  // "exited with status 0", "killed by signal 11 (Segmentation fault)"
  int exit_code = 0;
  uint64_t samples = 0;
  uint64_t lost = 0;
};

// One chunk in the on-disk encoding (header + payload), for writers that assemble bytes in memory.
std::string MakeChunk(ChunkType type, std::string_view payload);
std::string MetaChunkPayload(const RecordMeta& meta);

// Appends raw events to a byte batch in the kEvents encoding.
class EventBatch {
 public:
  void AddSample(const RawSample& s);
  void AddMmap(const RawMmap& m);
  void AddComm(const RawComm& c);
  void AddFork(const RawFork& f);
  void AddLost(uint64_t n);
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  const std::string& bytes() const { return bytes_; }
  void clear() { bytes_.clear(); }

 private:
  std::string bytes_;
};

// Writes chunks to a file descriptor; every chunk is one write(2) so a crash cuts between
// chunks or inside the last one, which the reader then drops.
//
// A write that fails (disk full: ENOSPC, EDQUOT; file size limit: EFBIG) cuts the file back to
// the end of the last whole chunk, so what stays is a readable record file, and every later
// write fails with the same status (no chunk after a gap). Create ignores SIGXFSZ in this
// process, so a file size limit (`ulimit -f`) is such an error rather than the end of opscope.
class RecordWriter {
 public:
  ~RecordWriter();
  // Fails, leaving no file behind, when not even the file header can be written.
  static StatusOr<std::unique_ptr<RecordWriter>> Create(const std::string& path);
  Status WriteMeta(const RecordMeta& meta);
  Status WriteEvents(const EventBatch& batch);
  Status WriteSymbolized(const profile::SampleSection& section);
  Status WriteEnd(const RecordEnd& end);
  Status Close();
  // Closes and removes the file (only a regular file: never /dev/null or another device).
  void Discard();
  const std::string& path() const { return path_; }
  // Bytes of whole chunks written (the header included): what a reader finds in the file.
  uint64_t bytes_kept() const { return committed_; }
  // True once a write failed; failure() says why.
  bool failed() const { return !failure_.ok(); }
  const Status& failure() const { return failure_; }
  // True when no chunk after the header could be written (the file holds no profile).
  bool nothing_kept() const { return committed_ <= sizeof kRecordMagic; }

 private:
  Status WriteChunk(ChunkType type, std::string_view payload);
  int fd_ = -1;
  std::string path_;
  uint64_t committed_ = 0;
  Status failure_;
};

// Visitor for the raw events of a record file, in file order.
struct EventVisitor {
  std::function<void(const RawSample&)> sample;
  std::function<void(const RawMmap&)> mmap;
  std::function<void(const RawComm&)> comm;
  std::function<void(const RawFork&)> fork;
  std::function<void(uint64_t)> lost;
};

// A record file read back. Construction reads the chunk index (and meta/end/symbolized chunks);
// raw events are streamed on demand with VisitEvents so big recordings never sit in memory.
class RecordReader {
 public:
  static bool Sniff(std::string_view first_bytes);
  static StatusOr<RecordReader> Open(const std::string& path);
  // Same, from bytes in memory (fuzzing, tests).
  static StatusOr<RecordReader> FromBytes(std::string bytes, const std::string& origin);

  const RecordMeta& meta() const { return meta_; }
  const std::optional<RecordEnd>& end() const { return end_; }
  // Decoded kSymbolized chunk, if the recording was finished.
  const std::optional<profile::SampleSection>& symbolized() const { return symbolized_; }
  std::optional<profile::SampleSection>& symbolized() { return symbolized_; }
  // Bytes after the last good chunk (a truncated or corrupt tail), and why they were dropped.
  uint64_t bytes_dropped() const { return bytes_dropped_; }
  const std::string& drop_reason() const { return drop_reason_; }
  uint64_t event_chunks() const { return event_chunks_.size(); }
  // Damage found in the middle of the file (chunks skipped before a valid one), one line each.
  const std::vector<std::string>& problems() const { return problems_; }
  // Streams every raw event. An events chunk that fails its checksum is skipped and a malformed
  // event ends the chunk it is in; the other chunks are still read, and the returned DataLoss
  // status names the chunks that were not.
  Status VisitEvents(const EventVisitor& v) const;

 private:
  Status Parse(const std::string& origin);
  // The file's bytes: mapped read-only (Open) or owned (FromBytes). Recordings with DWARF stacks
  // run to gigabytes; only the chunks a reader touches are paged in.
  std::shared_ptr<const void> storage_;
  std::string_view bytes_;
  std::string origin_;
  RecordMeta meta_;
  std::optional<RecordEnd> end_;
  std::optional<profile::SampleSection> symbolized_;
  struct ChunkRef {
    size_t offset, length;
    uint32_t crc;
  };
  std::vector<ChunkRef> event_chunks_;  // payloads; CRC checked when visited
  uint64_t bytes_dropped_ = 0;
  std::string drop_reason_;
  std::vector<std::string> problems_;
};

// The compact binary form of a SampleSection used by kSymbolized (strings, frames and stacks
// interned); about 10x smaller and 20x faster to read than its JSON form.
std::string EncodeSampleSection(const profile::SampleSection& s);
StatusOr<profile::SampleSection> DecodeSampleSection(std::string_view bytes);

}  // namespace opscope::collect
