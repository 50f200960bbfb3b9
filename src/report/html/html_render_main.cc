// html_render PROFILE OUT.html: writes the HTML report of any saved profile or record file
// through the format registry (a test and bench tool; users get the same page from
// `opscope profile/report ... -o FILE.html`).
#include <cstdio>

#include "base/files.h"
#include "collect/symbolize.h"
#include "importers/importer.h"
#include "report/format.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: html_render PROFILE OUT.html\n");
    return 2;
  }
  auto p = opscope::importers::LoadProfileFile(argv[1]);
  if (!p.ok()) {
    std::fprintf(stderr, "html_render: %s\n", std::string(p.status().message()).c_str());
    return 1;
  }
  const opscope::report::Format* f = opscope::report::FindFormat("html");
  std::string out;
  if (!f || !f->write(*p, {}, &out).ok()) {
    std::fprintf(stderr, "html_render: the html format is not registered\n");
    return 1;
  }
  if (auto st = opscope::WriteFileAtomic(argv[2], out); !st.ok()) {
    std::fprintf(stderr, "html_render: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}
