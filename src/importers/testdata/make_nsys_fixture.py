#!/usr/bin/python3
"""Writes nsys_small.sqlite: a small database with the tables and columns of Nsight Systems'
documented SQLite export schema (`nsys export --type sqlite`), two iterations of an NVTX-annotated
loop: an HtoD copy from pageable memory, a memset, two kernels, a DtoH copy. Hand-made, not an
nsys capture: regenerate with `/usr/bin/python3 make_nsys_fixture.py OUT.sqlite`.

With --memory (nsys_memory.sqlite) it adds what `--cuda-memory-usage=true` exports:
CUDA_GPU_MEMORY_USAGE_EVENTS with its enum tables ENUM_CUDA_MEM_KIND and
ENUM_CUDA_DEV_MEM_EVENT_OPER: 64 MB of weights allocated before the loop and never freed, a free
of memory allocated before the capture, and per iteration a 4 MB input buffer (allocated in
"preprocess", freed at the end of "frame"), a 1 MB pinned host buffer, and a 16 MB workspace
allocated and freed inside "frame"."""
import sqlite3
import sys

args = [a for a in sys.argv[1:] if a != "--memory"]
memory = "--memory" in sys.argv[1:]
out = args[0] if args else ("nsys_memory.sqlite" if memory else "nsys_small.sqlite")
db = sqlite3.connect(out)
c = db.cursor()
c.executescript("""
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, busLocation TEXT, totalMemory INTEGER,
  smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
  mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
  blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
  memKind INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
  doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER,
  jsonText TEXT);
""")
strings = ["cudaMemcpyAsync_v3020", "cudaLaunchKernel_v7000", "cudaMemsetAsync_v3020",
           "void conv2d_kernel<float>(float const*, float*, int)", "conv2d_kernel",
           "relu_kernel(float*, int)", "relu_kernel", "preprocess"]
for i, s in enumerate(strings, 1):
    c.execute("INSERT INTO StringIds VALUES (?, ?)", (i, s))
c.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA Orin (nvgpu)', '0', 31000000000, 16, 8, 7)")
tid = (4242 << 24) | 4242   # globalTid: pid in bits 24.., tid in the low 24 bits
corr = 1
for it in range(2):
    t0 = 1_000_000 + it * 10_000_000
    c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (?,?,?,?,?,?)",
              (t0, t0 + 9_000_000, 59, "frame", tid, 0))
    c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid, domainId) VALUES (?,?,?,?,?,?)",
              (t0 + 10_000, t0 + 1_000_000, 59, 8, tid, 0))
    # HtoD from pageable memory (srcKind 1), 4 MB
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)",
              (t0 + 20_000, t0 + 900_000, 0, tid, corr, 1, 0, None))
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
              (t0 + 50_000, t0 + 850_000, 0, 1, 7, corr, 4242 << 24, 4 << 20, 1, None, 1, 2, 0))
    corr += 1
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)",
              (t0 + 1_100_000, t0 + 1_110_000, 0, tid, corr, 3, 0, None))
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,?,?,?,?,?,?,?)",
              (t0 + 1_120_000, t0 + 1_130_000, 0, 1, 7, corr, 4242 << 24, 0, 65536, 2))
    corr += 1
    for k, (name, short, dur) in enumerate([(4, 5, 3_000_000), (6, 7, 400_000)]):
        start = t0 + 1_200_000 + k * 3_100_000
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)",
                  (start - 5_000, start - 1_000, 0, tid, corr, 2, 0, None))
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  (start, start + dur, 0, 1, 7, corr, 4242 << 24, name, short, None, 0, 0, 32,
                   128, 1, 1, 256, 1, 1, 0, 4096, 0))
        corr += 1
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)",
              (t0 + 7_800_000, t0 + 8_500_000, 0, tid, corr, 1, 0, None))
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
              (t0 + 7_900_000, t0 + 8_400_000, 0, 1, 7, corr, 4242 << 24, 1 << 20, 2, None, 2, 3, 0))
    corr += 1
if memory:
    c.executescript("""
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT NOT NULL, label TEXT);
CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER PRIMARY KEY, name TEXT NOT NULL, label TEXT);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER,
  deviceId INTEGER, contextId INTEGER, address INTEGER NOT NULL, pc INTEGER NOT NULL,
  bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL,
  name TEXT, correlationId INTEGER, localMemoryPoolAddress INTEGER,
  localMemoryPoolReleaseThreshold INTEGER, localMemoryPoolSize INTEGER,
  localMemoryPoolUtilizedSize INTEGER);
""")
    for i, (name, label) in enumerate([("PAGEABLE", "Pageable"), ("PINNED", "Pinned"),
                                       ("DEVICE", "Device"), ("ARRAY", "Array"),
                                       ("MANAGED", "Managed"), ("DEVICE_STATIC", "Device Static"),
                                       ("MANAGED_STATIC", "Managed Static"),
                                       ("UNKNOWN", "Unknown")]):
        c.execute("INSERT INTO ENUM_CUDA_MEM_KIND VALUES (?,?,?)",
                  (i, "CUDA_MEMOPR_MEMORY_KIND_" + name, label))
    c.execute("INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (0, 'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION', 'Allocation')")
    c.execute("INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (1, 'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION', 'Deallocation')")
    c.execute("INSERT INTO StringIds VALUES (9, 'cudaMalloc_v3020')")
    c.execute("INSERT INTO StringIds VALUES (10, 'cudaFree_v3020')")
    pid = 4242 << 24
    MB = 1 << 20

    def mem(at, address, size, kind, op, api):
        global corr
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)",
                  (at - 2_000, at + 2_000, 0, tid, corr, api, 0, None))
        c.execute("INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId,"
                  " address, pc, bytes, memKind, memoryOperationType, correlationId)"
                  " VALUES (?,?,?,?,?,?,?,?,?,?)",
                  (at, pid, 0, 1, address, 0, size, kind, op, corr))
        corr += 1

    mem(500_000, 0x7f0000000000, 64 * MB, 2, 0, 9)   # weights, never freed
    mem(600_000, 0x7e0000000000, 8 * MB, 2, 1, 10)   # allocated before the capture
    for it in range(2):
        t0 = 1_000_000 + it * 10_000_000
        mem(t0 + 15_000, 0x7f1000000000 + it * 0x1000000, 4 * MB, 2, 0, 9)
        mem(t0 + 16_000, 0x7f3000000000 + it * 0x1000000, 1 * MB, 1, 0, 9)  # pinned host
        mem(t0 + 1_150_000, 0x7f2000000000, 16 * MB, 2, 0, 9)
        mem(t0 + 7_000_000, 0x7f2000000000, 16 * MB, 2, 1, 10)
        mem(t0 + 8_600_000, 0x7f1000000000 + it * 0x1000000, 4 * MB, 2, 1, 10)
db.commit()
db.close()
