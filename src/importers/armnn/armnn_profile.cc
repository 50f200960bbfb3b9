// Arm NN's profiler JSON (IProfiler::Print / ExecuteNetwork --event-based-profiling), alone or
// embedded in an ExecuteNetwork log (the layout of 19.05 on; 19.02 had no "type" keys and no
// "_#N" ids, "layer_measurements" for "Execute" and each event's own "raw"; 21.02 added
// "Wall clock time (Start)"/"(Stop)" timestamps beside the duration):
//
//   {"ArmNN": {
//     "inference_measurements_#1": {"type": "Event",
//       "Wall clock time_#1": {"type": "Measurement", "raw": [5123.0], "unit": "us"},
//       "Execute_#2": {"type": "Event",
//         "Wall clock time_#2": {...},
//         "NeonConvolution2dWorkload_Execute_#3": {"type": "Event",
//            "Wall clock time_#3": {"type": "Measurement", "raw": [812.5], "unit": "us"}, ...},
//         "CopyMemGeneric_Execute_#4": {...}, ...}}}}
//
// Each workload event under an Execute event is a row (named after its layer when the event
// carries "layer_name"/"LayerName", else after the workload); `raw` holds one value per
// execution (several with repeated inferences), in the `unit` given (µs in practice). Rows
// repeat per inference_measurements block with new event ids: they are matched by position.
// The backend is the workload's prefix (Neon → CpuAcc, Cl → GpuAcc, Ref → CpuRef) or a
// "backendId" field. Keys are read in file order (ordered_json): the order of execution.
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "importers/importer.h"
#include "importers/json_scan.h"

namespace opscope::importers {
namespace {

int Sniff(std::string_view head, const std::string&) {
  if (head.find("\"ArmNN\"") != std::string_view::npos &&
      (head.find("\"inference_measurements") != std::string_view::npos ||
       head.find("Execute_#") != std::string_view::npos))
    return kSniffCertain;
  return kSniffNo;
}

std::string StripId(const std::string& key) {
  size_t h = key.rfind("_#");
  return h == std::string::npos ? key : key.substr(0, h);
}

std::string Backend(const std::string& workload) {
  if (StartsWith(workload, "Neon")) return "CpuAcc";
  if (StartsWith(workload, "Cl")) return "GpuAcc";
  if (StartsWith(workload, "Ref")) return "CpuRef";
  if (StartsWith(workload, "EthosN")) return "EthosNAcc";
  return "";
}

// The profile as a tree that keeps every key in file order, duplicates included: Arm NN before
// 19.05 wrote keys without "_#N" ids, so two convolutions are two "NeonConvolution2dWorkload_
// Execute" keys of one object, which a JSON object type would merge.
struct Node {
  enum class Kind { kObject, kArray, kNumber, kString, kOther } kind = Kind::kOther;
  double number = 0;
  std::string text;
  std::string key;             // this value's key in its parent object ("" in arrays)
  std::vector<Node> children;  // members / elements, in file order

  const Node* Find(std::string_view name) const {
    for (const Node& c : children)
      if (c.key == name) return &c;
    return nullptr;
  }
  std::string String(std::string_view name) const {
    const Node* n = Find(name);
    return n && n->kind == Kind::kString ? n->text : "";
  }
};

class TreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  Node root;
  bool null() override { return Add(Node{}); }
  bool boolean(bool) override { return Add(Node{}); }
  bool number_integer(number_integer_t v) override { return Number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Number(v); }
  bool string(string_t& v) override {
    Node n;
    n.kind = Node::Kind::kString;
    n.text = v;
    return Add(std::move(n));
  }
  bool binary(binary_t&) override { return Add(Node{}); }
  bool start_object(std::size_t) override { return Open(Node::Kind::kObject); }
  bool start_array(std::size_t) override { return Open(Node::Kind::kArray); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Number(double v) {
    Node n;
    n.kind = Node::Kind::kNumber;
    n.number = v;
    return Add(std::move(n));
  }
  // Appends to the open container (only the innermost one grows, so the pointers to the open
  // ones on the stack stay valid).
  Node* Append(Node n) {
    if (stack_.empty()) {
      root = std::move(n);
      return &root;
    }
    Node* top = stack_.back();
    n.key = top->kind == Node::Kind::kObject ? key_ : std::string();
    top->children.push_back(std::move(n));
    return &top->children.back();
  }
  bool Add(Node n) {
    Append(std::move(n));
    return true;
  }
  bool Open(Node::Kind kind) {
    if (stack_.size() > 256) return false;  // nesting no profiler writes
    Node n;
    n.kind = kind;
    stack_.push_back(Append(std::move(n)));
    return true;
  }
  bool Close() {
    if (!stack_.empty()) stack_.pop_back();
    return true;
  }
  std::vector<Node*> stack_;
  std::string key_;
};

// Arm NN prints kernel names it read from memory (ArmNN issue #219 shows "NeonKernelTimer/1:
// \xef\xbf\xbdb\xef\xbf\xbd\xef\xbf\xbdU"): bytes that are not UTF-8 become '?', so that one bad
// label does not make the whole profile unreadable.
std::string SanitizeUtf8(std::string_view in, size_t* replaced) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    unsigned char c = static_cast<unsigned char>(in[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= in.size() && !(len == 2 && c < 0xC2);
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(in[i + k]) & 0xC0) == 0x80;
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out += '?';
      ++*replaced;
      ++i;
    }
  }
  return out;
}

bool IsMeasurement(const std::string& key, const Node& n) {
  return n.String("type") == "Measurement" ||
         (n.Find("raw") && n.Find("type") == nullptr && n.kind == Node::Kind::kObject &&
          StartsWith(key, "Wall clock time"));
}

// A child object that is an event: "type": "Event" (19.05 on), or in the id-less 19.02 layout an
// object with its own "raw" values that is not a kernel timer ("NeonKernelTimer/0: ...").
bool IsEvent(const std::string& key, const Node& n) {
  if (n.kind != Node::Kind::kObject) return false;
  if (const Node* t = n.Find("type")) return t->kind == Node::Kind::kString && t->text == "Event";
  return n.Find("raw") != nullptr && key.find("KernelTimer") == std::string::npos &&
         !StartsWith(key, "Wall clock time");
}

// The event's wall-clock duration, in ms per execution: the "Wall clock time_#N" measurement
// (not "Wall clock time (Start)"/"(Stop)", which are timestamps), or in the 19.02 layout the
// event's own "raw"/"unit".
StatusOr<std::vector<double>> WallClock(const Node& ev, const std::string& where) {
  const Node* m = nullptr;
  for (const Node& v : ev.children)
    if (StripId(v.key) == "Wall clock time" && v.kind == Node::Kind::kObject) {
      m = &v;
      break;
    }
  if (!m && ev.Find("type") == nullptr && ev.Find("raw")) m = &ev;
  if (!m) return std::vector<double>{};
  double scale = 1e-3;  // µs
  std::string u = m->String("unit");
  if (u == "ms")
    scale = 1;
  else if (u == "s")
    scale = 1e3;
  else if (u == "ns")
    scale = 1e-6;
  const Node* raw = m->Find("raw");
  if (!raw || raw->kind != Node::Kind::kArray)
    return DataLoss(where + ": the wall-clock measurement has no \"raw\" array");
  std::vector<double> out;
  for (const Node& v : raw->children) {
    if (v.kind != Node::Kind::kNumber) return DataLoss(where + ": a \"raw\" value is not a number");
    OPSCOPE_RETURN_IF_ERROR(util::CheckTime(v.number, where, "a wall-clock time"));
    out.push_back(v.number * scale);
  }
  return out;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  // ExecuteNetwork logs print the JSON among other lines: take the object holding "ArmNN".
  size_t key = text.find("\"ArmNN\"");
  if (key == std::string_view::npos) return DataLoss(origin + ": no \"ArmNN\" object");
  size_t open = text.rfind('{', key);
  if (open == std::string_view::npos) return DataLoss(origin + ": no JSON object around \"ArmNN\"");
  size_t end = json::SkipValue(text, open);
  if (end == std::string_view::npos)
    return DataLoss(origin + ": the Arm NN profile JSON is cut short (truncated file?)");
  size_t replaced = 0;
  std::string clean = SanitizeUtf8(text.substr(open, end - open), &replaced);
  TreeBuilder tree;
  if (!nlohmann::json::sax_parse(clean, &tree, nlohmann::json::input_format_t::json, false) ||
      tree.root.kind != Node::Kind::kObject)
    return DataLoss(origin + ": not valid Arm NN profiler JSON (corrupt file?)");
  const Node* armnn = tree.root.Find("ArmNN");
  if (!armnn || armnn->kind != Node::Kind::kObject)
    return DataLoss(origin + ": not valid Arm NN profiler JSON (corrupt file?)");
  profile::Profile p = util::NewProfile("armnn", origin);
  struct Row {
    std::string name, workload, backend;
    std::vector<double> runs;
  };
  std::vector<Row> rows;
  std::map<std::string, int> backends;
  int inferences = 0;
  for (const Node& inf : armnn->children) {
    const std::string& inf_key = inf.key;
    if (!StartsWith(inf_key, "inference_measurements") || inf.kind != Node::Kind::kObject) continue;
    ++inferences;
    const std::string where = origin + ": " + inf_key;
    OPSCOPE_ASSIGN_OR_RETURN(std::vector<double> total, WallClock(inf, where));
    for (double t : total) p.e2e.runs_ms.push_back(t);
    for (const Node& ex : inf.children) {
      const std::string& ex_key = ex.key;
      // "Execute_#2" (19.05 on) or "layer_measurements" (19.02).
      if ((!StartsWith(ex_key, "Execute") && !StartsWith(ex_key, "layer_measurements")) ||
          ex.kind != Node::Kind::kObject)
        continue;
      size_t pos = 0;
      for (const Node& w : ex.children) {
        const std::string& w_key = w.key;
        if (!IsEvent(w_key, w) || IsMeasurement(w_key, w)) continue;
        std::string wname = StripId(w_key);
        std::string short_name =
            EndsWith(wname, "_Execute") ? wname.substr(0, wname.size() - 8) : wname;
        OPSCOPE_ASSIGN_OR_RETURN(std::vector<double> t, WallClock(w, where + "/" + w_key));
        std::string layer;
        for (const char* k : {"layer_name", "LayerName", "layerName"})
          if (std::string v = w.String(k); !v.empty()) layer = v;
        std::string backend = Backend(short_name);
        if (std::string b = w.String("backendId"); !b.empty()) backend = b;
        if (pos >= rows.size())
          rows.push_back({layer.empty() ? short_name : layer, short_name, backend, {}});
        Row& r = rows[pos];
        if (r.workload != short_name)
          return DataLoss(where + ": workload #" + std::to_string(pos + 1) + " is '" + short_name +
                          "' but was '" + r.workload +
                          "' in the first inference: the blocks are of different networks");
        double sum = 0;
        for (double x : t) sum += x;
        // One value per inference block (its executions summed).
        r.runs.push_back(sum);
        ++pos;
      }
    }
  }
  if (rows.empty())
    return DataLoss(origin +
                    ": the Arm NN profile has no workload events under an Execute "
                    "event: was profiling enabled for the inference?");
  std::map<std::string, int> names;
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    profile::OpRecord op;
    op.name = r.name;
    if (int n = names[r.name]++; n > 0) op.name += " #" + std::to_string(n + 1);
    op.op_type = r.workload;
    // "NeonConvolution2dWorkload" -> "Convolution2d"
    std::string t = r.workload;
    for (std::string_view pre : {"Neon", "Cl", "Ref", "EthosN"})
      if (StartsWith(t, pre)) t = t.substr(pre.size());
    if (EndsWith(t, "Workload")) t = t.substr(0, t.size() - 8);
    if (!t.empty()) op.op_type = t;
    op.index = static_cast<int>(i);
    op.runs_ms = r.runs;
    op.runs_ms.resize(static_cast<size_t>(inferences), 0.0);
    op.step = r.workload;
    op.attribution = "Arm NN wall clock" + (r.backend.empty() ? "" : " on " + r.backend);
    if (!r.backend.empty()) ++backends[r.backend];
    p.ops.push_back(std::move(op));
  }
  std::vector<std::string> b;
  for (const auto& [name, n] : backends) b.push_back(name + ":" + std::to_string(n));
  if (!b.empty()) p.meta.extra["armnn.backends"] = Join(b, " ");
  if (replaced > 0)
    p.meta.degradations.push_back(std::to_string(replaced) +
                                  " bytes that are not UTF-8 in event names were replaced by '?'");
  p.meta.runs = inferences;
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_armnn = {"armnn", "Arm NN profiler JSON (ExecuteNetwork -e)", Sniff,
                                     Parse};
}  // namespace formats

}  // namespace opscope::importers
