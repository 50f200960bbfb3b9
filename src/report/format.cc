#include "report/format.h"

#include "base/strings.h"

namespace opscope::report {

static std::vector<Format>& MutableFormats() {
  static std::vector<Format> formats;
  return formats;
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

const Format* FormatForPath(const std::string& path) {
  const Format* best = nullptr;
  size_t best_len = 0;
  for (const Format& f : Formats()) {
    std::string ext = f.extension;
    if (!ext.empty() && EndsWith(path, ext) && ext.size() > best_len) {
      best = &f;
      best_len = ext.size();
    }
  }
  return best;
}

std::string FormatNames() {
  std::vector<std::string> names;
  for (const Format& f : Formats()) names.push_back(f.name);
  return Join(names, ", ");
}

StatusOr<const Format*> ChooseFormat(const std::string& output_path, const std::string& format_name,
                                     const std::string& default_name) {
  if (!format_name.empty()) {
    const Format* f = FindFormat(format_name);
    if (!f) return InvalidArgument("unknown format '" + format_name + "' (choose one of: " + FormatNames() + ")");
    return f;
  }
  if (!output_path.empty()) {
    const Format* f = FormatForPath(output_path);
    if (!f) {
      std::vector<std::string> exts;
      for (const Format& g : Formats())
        if (g.extension[0]) exts.push_back(g.extension);
      return InvalidArgument("cannot tell the format of '" + output_path + "' from its extension (use one of " +
                             Join(exts, ", ") + ", or --format)");
    }
    return f;
  }
  const Format* f = FindFormat(default_name);
  if (!f) return Internal("default format '" + default_name + "' is not registered");
  return f;
}

}  // namespace opscope::report
