// libFuzzer entry for the importers: one target per format (import_<format>_fuzz, the format
// chosen at build time by OPSCOPE_IMPORT_FUZZ_FORMAT). FuzzImport is also called by
// importers_test on every seed fixture, its truncations and bit flips, and on the replayed
// corpora in tests/fuzz_corpus/import_<format>_fuzz/.
#include <cstddef>
#include <cstdint>
#include <string>

#include "importers/importer.h"

namespace opscope::importers {

// Parses DATA as FORMAT ("ort", "tensorrt", "perf-script", ...) and as whatever Detect() says;
// any result is fine as long as it is a Status or a valid Profile.
int FuzzImport(const char* format, const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto src = Source::FromBytes(bytes, "fuzz");
  const Format* f = FindFormat(format);
  if (!f) __builtin_trap();
  auto p = Import(*src, f);
  if (p.ok() && !profile::Validate(*p).ok()) __builtin_trap();
  (void)Detect(bytes.substr(0, kSniffBytes), "fuzz");
  return 0;
}

}  // namespace opscope::importers

#ifdef OPSCOPE_IMPORT_FUZZ_FORMAT
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string name = OPSCOPE_IMPORT_FUZZ_FORMAT;
  for (char& c : name)
    if (c == '_') c = '-';
  return opscope::importers::FuzzImport(name.c_str(), data, size);
}
#endif
