// The GNU build id of an ELF file: the NT_GNU_BUILD_ID note (`.note.gnu.build-id`, written by
// `ld --build-id`), as lowercase hex, the form `readelf -n`, debuginfod, /usr/lib/debug/.build-id/
// and pprof's Mapping.build_id use. `opscope record` stores it with each sampled module's full
// path (profile::SampleSection::modules), so a profile can be symbolized again elsewhere.
#pragma once

#include <string>

#include "base/status.h"

namespace opscope::collect {

// The build id of the ELF file at `path`. NotFound when the file has no build-id note (linked
// with --build-id=none); an error when it cannot be opened or is not ELF. Only regular files are
// opened (a FIFO would block).
StatusOr<std::string> ReadGnuBuildId(const std::string& path);

}  // namespace opscope::collect
