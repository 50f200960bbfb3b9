#include "report/format.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/strings.h"

namespace opscope::report {

static std::vector<Format>& MutableFormats() {
  static std::vector<Format> formats;
  return formats;
}

static std::vector<Section>& MutableSections() {
  static std::vector<Section> sections;
  return sections;
}

bool RegisterFormat(const Format& f) {
  MutableFormats().push_back(f);
  return true;
}

const std::vector<Format>& Formats() { return MutableFormats(); }

const Format* FindFormat(const std::string& name) {
  for (const Format& f : Formats())
    if (name == f.name) return &f;
  return nullptr;
}

static std::vector<std::string> Extensions(const Format& f) {
  std::vector<std::string> exts;
  if (f.extension[0]) exts.push_back(f.extension);
  for (const std::string& e : Split(f.more_extensions ? f.more_extensions : "", ' '))
    if (!e.empty()) exts.push_back(e);
  return exts;
}

const Format* FormatForPath(const std::string& path) {
  const Format* best = nullptr;
  size_t best_len = 0;
  for (const Format& f : Formats())
    for (const std::string& ext : Extensions(f))
      if (EndsWith(path, ext) && ext.size() > best_len) {
        best = &f;
        best_len = ext.size();
      }
  return best;
}

std::string FormatNames() { return FormatNames({}); }

bool FormatFits(const Format& f, const std::vector<std::string>& sections) {
  if (sections.empty() || f.needs[0] == '\0') return true;
  for (const std::string& need : Split(f.needs, ' ', /*skip_empty=*/true))
    if (std::find(sections.begin(), sections.end(), need) != sections.end()) return true;
  return false;
}

std::string FormatNames(const std::vector<std::string>& sections) {
  std::vector<std::string> names;
  for (const Format& f : Formats())
    if (FormatFits(f, sections)) names.push_back(f.name);
  return Join(names, ", ");
}

// The last dot-component of a file name: "a.trace.json" -> ".json", "a.pb.gz" -> ".gz".
static std::string LastExtension(const std::string& path) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return path.substr(dot);
}

StatusOr<const Format*> ChooseFormat(const std::string& output_path, const std::string& format_name,
                                     const std::string& default_name) {
  if (!format_name.empty()) {
    const Format* f = FindFormat(format_name);
    if (!f)
      return InvalidArgument("unknown format '" + format_name +
                             "' (choose one of: " + FormatNames() + ")");
    if (!output_path.empty()) {
      // A file whose extension says another kind of file than the format writes.
      const Format* by_ext = FormatForPath(output_path);
      std::string ext = LastExtension(output_path);
      bool fits = false;
      for (const std::string& e : Extensions(*f)) fits = fits || LastExtension(e) == ext;
      // "stat-csv" writes CSV, "hot-json" JSON: a .csv or .json file fits them.
      const std::string name = f->name;
      fits = fits || (ext.size() > 1 && EndsWith(name, "-" + ext.substr(1)));
      if (by_ext && by_ext != f && !fits)
        return InvalidArgument("-o " + output_path + " with --format " + format_name + ": the " +
                               ext + " extension means " + by_ext->name + ", not " + format_name +
                               "; name the file after its format" +
                               (Extensions(*f).empty() ? "" : " (" + Extensions(*f)[0] + ")") +
                               " or drop --format");
    }
    return f;
  }
  if (!output_path.empty()) {
    const Format* f = FormatForPath(output_path);
    if (!f) {
      std::vector<std::string> exts;
      for (const Format& g : Formats())
        for (const std::string& e : Extensions(g)) exts.push_back(e);
      return InvalidArgument("cannot tell the format of '" + output_path +
                             "' from its extension (use one of " + Join(exts, ", ") +
                             ", or --format)");
    }
    return f;
  }
  const Format* f = FindFormat(default_name);
  if (!f) return Internal("default format '" + default_name + "' is not registered");
  return f;
}

bool RegisterSection(const Section& s) {
  MutableSections().push_back(s);
  return true;
}

const std::vector<Section>& Sections() { return MutableSections(); }

const Section* FindSection(const std::string& name) {
  for (const Section& s : Sections())
    if (name == s.name) return &s;
  return nullptr;
}

std::vector<const Section*> PresentSections(const profile::Profile& p, const ReportOptions& o) {
  std::vector<const Section*> out;
  for (const Section& s : Sections()) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), s.name) == o.only.end())
      continue;
    if (s.present(p)) out.push_back(&s);
  }
  // A kind no section names (an import of a GPU trace, "import/nsys") reads like the command
  // whose data it holds: a GPU section makes it a `gpu` profile, its NVTX ranges after it.
  bool matched = false;
  for (const Section* s : out) matched = matched || p.meta.kind == s->kind;
  const std::string kind = !matched && p.gpu && p.ops.empty() ? "gpu" : p.meta.kind;
  bool chosen = false;
  for (const Section* s : out) chosen = chosen || o.primary == s->name;
  auto primary = [&](const Section* s) { return chosen ? o.primary == s->name : kind == s->kind; };
  std::stable_sort(out.begin(), out.end(), [&](const Section* a, const Section* b) {
    bool pa = primary(a), pb = primary(b);
    if (pa != pb) return pa;
    return a->order < b->order;
  });
  return out;
}

Status RenderTables(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  out->clear();
  std::vector<const Section*> present = PresentSections(p, o);
  if (present.empty()) {
    // o.title names the file (`report` sets it); else the profile's source or kind.
    std::string what = !o.title.empty()         ? o.title
                       : !p.meta.source.empty() ? "opscope: " + p.meta.source
                       : !p.meta.kind.empty()   ? "opscope: " + p.meta.kind
                                                : "opscope: this profile";
    *out = EscapeControl(what) +
           ": the profile holds no section to show (no ops, counters, samples, ranges or GPU "
           "activity)\n";
    return Status::Ok();
  }
  for (size_t i = 0; i < present.size(); ++i) {
    ReportOptions so = o;
    so.findings = o.findings && i == 0;
    std::string part;
    OPSCOPE_RETURN_IF_ERROR(present[i]->table(p, so, &part));
    if (i > 0) *out += "\n";
    *out += part;
  }
  // The net under every section's own escaping: tables are UTF-8 text, and without colours no
  // control character but line breaks and tabs reaches the terminal (a name a section forgot to
  // escape cannot move the cursor or retitle the window).
  *out = ToValidUtf8(*out);
  if (!o.color) {
    auto control = [](unsigned char c) {
      return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
    };
    if (std::any_of(out->begin(), out->end(), control)) {
      std::string safe;
      for (unsigned char c : *out) {
        if (control(c))
          safe += fmt::format("\\x{:02x}", c);
        else
          safe += static_cast<char>(c);
      }
      *out = std::move(safe);
    }
  }
  return Status::Ok();
}

std::string EscapeControl(const std::string& raw) {
  const std::string s = ToValidUtf8(raw);  // invalid bytes show as U+FFFD, as in every format
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string ClipName(const std::string& s, size_t max, bool wide) {
  std::string e = EscapeControl(s);
  if (wide || e.size() <= max || max < 4) return e;
  // Cut on a UTF-8 boundary.
  size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(e[cut]) & 0xC0) == 0x80) --cut;
  return e.substr(0, cut) + "...";
}

std::string CsvText(const std::string& raw, const std::string& separator) {
  std::string s = ToValidUtf8(raw);
  if (!s.empty() &&
      (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r'))
    s.insert(0, 1, '\'');
  if (s.find_first_of("\"\n\r") == std::string::npos &&
      (separator.empty() || s.find(separator) == std::string::npos))
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace opscope::report
