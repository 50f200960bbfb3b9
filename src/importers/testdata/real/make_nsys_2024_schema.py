#!/usr/bin/python3
"""Writes nsys_2024_schema.sqlite: a hand-made database with the column set of the Nsight
Systems SQLite export as its User Guide documents it for the 2024-2026 releases (schema 3.x:
greenContextId in the activity tables, TARGET_INFO_GPU keyed by vmId, META_DATA_EXPORT),
with what the older fixture (../make_nsys_fixture.py) lacks: a driver API call
(cuLaunchKernel) in CUPTI_ACTIVITY_KIND_RUNTIME, an NVTX domain created by name (eventType 75)
whose push/pop ranges use registered strings (textId), and a start/end range (eventType 60).
Not an nsys capture: regenerate with `/usr/bin/python3 make_nsys_2024_schema.py OUT.sqlite`."""
import sqlite3
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "nsys_2024_schema.sqlite"
db = sqlite3.connect(out)
c = db.cursor()
c.executescript("""
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
  busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER,
  memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, uuid TEXT,
  luid INTEGER, chipName TEXT, cuDevice INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER,
  migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
  doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER,
  jsonText TEXT, binaryData TEXT);
""")
c.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
              [("EXPORT_SCHEMA_VERSION", "3.x (hand-made)"), ("EXPORT_PRODUCT", "fixture")])
c.executemany("INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (?, ?, ?)",
              [(59, "NvtxPushPopRange", "NVTX PushPop Range"),
               (60, "NvtxStartEndRange", "NVTX StartEnd Range"),
               (75, "NvtxDomainCreate", "NVTX Domain Create")])
strings = {1: "cuLaunchKernel", 2: "cudaMemcpyAsync_v3020",
           3: "void bev_pool_kernel<float, 64>(float const*, int const*, float*)",
           4: "bev_pool_kernel", 5: "sgemm_128x64_nn", 6: "sgemm_128x64_nn", 7: "enqueue",
           8: "layer bev_pool"}
c.executemany("INSERT INTO StringIds VALUES (?, ?)", strings.items())
c.execute("INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, smCount, chipName,"
          " cuDevice) VALUES (0, 0, 'NVIDIA Jetson AGX Orin', '0000:00:00.0', 0, 16, 'GA10B', 0)")
pid, tid = 7007, 7010
gtid = (pid << 24) | tid
# nvtxDomainCreateA("TensorRT"): domain 3 of this process; the default domain is 0.
c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
          "VALUES (500, NULL, 75, 'TensorRT', ?, 3)", (gtid,))
c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, "
          "rangeId, domainId) VALUES (1000, 9000000, 60, 'frame 0', ?, ?, 1, 0)", (gtid, gtid))
c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid, domainId) "
          "VALUES (2000, 8000000, 59, 7, ?, 3)", (gtid,))
c.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid, domainId) "
          "VALUES (3000, 5000000, 59, 8, ?, 3)", (gtid,))
# a driver launch (TensorRT launches through the driver API) and a runtime copy
c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (4000, 9000, 1, ?, 11, 1, 0, NULL)",
          (gtid,))
c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10000, 4010000, 0, 1, NULL, 7, 11, ?, "
          "3, 4, NULL, 0, 0, 40, 64, 1, 1, 256, 1, 1, 0, 8192, 0, 0, 1, 8192, NULL, 0)",
          (pid << 24,))
c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (5100000, 5200000, 1, ?, 12, 1, 0, NULL)",
          (gtid,))
c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5300000, 6300000, 0, 1, NULL, 7, 12, ?, "
          "5, 6, NULL, 0, 0, 128, 32, 2, 1, 128, 1, 1, 16384, 0, 0, 0, 2, 16384, NULL, 0)",
          (pid << 24,))
c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (6400000, 6500000, 1, ?, 13, 2, 0, NULL)",
          (gtid,))
c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (6600000, 7100000, 0, 1, NULL, 7, 13, ?, "
          "2097152, 2, NULL, 3, 2, 0, 1, NULL, NULL, 0, NULL, NULL)", (pid << 24,))
db.commit()
db.close()
