#include "report/output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/files.h"
#include "report/say.h"

namespace opscope::report {

StatusOr<std::vector<OutputTarget>> PlanOutputs(const std::vector<std::string>& paths,
                                                const std::string& format_name,
                                                const std::string& default_format) {
  std::vector<OutputTarget> out;
  if (paths.empty()) {
    OPSCOPE_ASSIGN_OR_RETURN(const Format* f, ChooseFormat("", format_name, default_format));
    out.push_back({"", f});
    return out;
  }
  for (const std::string& path : paths) {
    if (path.empty()) return InvalidArgument("-o needs a file name");
    if (path == "-") {  // standard output, as perf and most tools take it
      if (WritesToStream(out)) return InvalidArgument("-o - is given twice");
      OPSCOPE_ASSIGN_OR_RETURN(const Format* f, ChooseFormat("", format_name, default_format));
      out.push_back({"", f});
      continue;
    }
    for (const OutputTarget& t : out)
      if (t.path == path) return InvalidArgument("-o " + path + " is given twice");
    // /dev/null has no extension to name a format: it takes --format or the default, as the
    // data stream does (a run measured for its exit status or its side files).
    OPSCOPE_ASSIGN_OR_RETURN(const Format* f, ChooseFormat(path == "/dev/null" ? "" : path,
                                                           format_name, default_format));
    OPSCOPE_RETURN_IF_ERROR(CheckWritable(path));
    out.push_back({path, f});
  }
  return out;
}

bool WritesFormat(const std::vector<OutputTarget>& targets, const std::string& name) {
  for (const OutputTarget& t : targets)
    if (name == t.format->name) return true;
  return false;
}

bool WritesToStream(const std::vector<OutputTarget>& targets) {
  for (const OutputTarget& t : targets)
    if (t.path.empty()) return true;
  return false;
}

Status WriteStream(std::string_view text, FILE* stream, bool flush) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stream) != text.size() ||
      (flush && std::fflush(stream) != 0)) {
    const int err = errno != 0 ? errno : EIO;
    return ResourceExhausted(std::string(stream == stderr ? "standard error" : "standard output") +
                             ": write failed: " + std::strerror(err));
  }
  return Status::Ok();
}

namespace {

void Wrote(const OutputTarget& t, FILE* status) {
  const std::string line = "wrote " + t.path + " (" + t.format->name + ")";
  if (status == stderr)
    Say("", line);  // once, and not with -q
  else if (status)
    std::fprintf(status, "opscope: %s\n", EscapeControl(line).c_str());
}

// One rendered target: the data stream, or the file written atomically and said on `status`.
Status WriteText(const OutputTarget& t, const std::string& text, FILE* stream, FILE* status) {
  if (t.path.empty()) return WriteStream(text, stream);
  OPSCOPE_RETURN_IF_ERROR(WriteFileAtomic(t.path, text));
  Wrote(t, status);
  return Status::Ok();
}

}  // namespace

Status WriteOutputs(const profile::Profile& p, const std::vector<OutputTarget>& targets,
                    const ReportOptions& o, FILE* stream, FILE* status) {
  // One failed output does not cost the others: each is attempted, the first error returned.
  Status first = Status::Ok();
  auto keep = [&](Status st) {
    if (!st.ok() && first.ok()) first = std::move(st);
  };
  for (const OutputTarget& t : targets) {
    ReportOptions to = o;
    if (!t.path.empty()) to.color = false;
    if (t.path.empty() && t.format->binary && isatty(fileno(stream)) == 1) {
      keep(InvalidArgument(std::string(t.format->name) + " output is binary: use -o FILE" +
                           t.format->extension + " or redirect it"));
      continue;
    }
    if (t.format->stream != nullptr) {
      // Piece by piece: the text is never held whole.
      Status rendered = Status::Ok();
      Status written = Status::Ok();
      if (t.path.empty()) {
        rendered = t.format->stream(p, to, [&](std::string_view piece) {
          if (written.ok()) written = WriteStream(piece, stream, /*flush=*/false);
        });
        if (written.ok()) written = WriteStream("", stream);
      } else {
        written = WriteFileAtomicStreamed(t.path, [&](std::ostream& out) {
          rendered = t.format->stream(p, to, [&](std::string_view piece) {
            out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
          });
        });
      }
      if (!rendered.ok()) {
        keep(rendered.WithPrefix(t.format->name));
        continue;
      }
      if (!written.ok()) {
        keep(std::move(written));
        continue;
      }
    } else {
      std::string text;
      if (Status st = t.format->write(p, to, &text).WithPrefix(t.format->name); !st.ok()) {
        keep(std::move(st));
        continue;
      }
      keep(WriteText(t, text, stream, status));
      continue;
    }
    if (!t.path.empty()) Wrote(t, status);
  }
  if (status) std::fflush(status);
  return first;
}

Status WriteRenderedOutputs(
    const std::vector<OutputTarget>& targets,
    const std::function<Status(const Format& f, bool to_file, std::string* out)>& render,
    FILE* stream, FILE* status) {
  Status first = Status::Ok();
  auto keep = [&](Status st) {
    if (!st.ok() && first.ok()) first = std::move(st);
  };
  for (const OutputTarget& t : targets) {
    std::string text;
    if (Status st = render(*t.format, !t.path.empty(), &text).WithPrefix(t.format->name);
        !st.ok()) {
      keep(std::move(st));
      continue;
    }
    keep(WriteText(t, text, stream, status));
  }
  if (status) std::fflush(status);
  return first;
}

}  // namespace opscope::report
