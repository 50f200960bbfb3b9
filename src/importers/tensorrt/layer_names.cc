#include "importers/tensorrt/layer_names.h"

#include <cctype>

#include "base/strings.h"

namespace opscope::importers::trt {
namespace {

// Splits at `sep` where no (), [] or {} is open.
std::vector<std::string> SplitTop(std::string_view s, std::string_view sep) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (depth == 0 && s.compare(i, sep.size(), sep) == 0) {
      out.push_back(Trim(s.substr(start, i - start)));
      i += sep.size() - 1;
      start = i + 1;
    }
  }
  out.push_back(Trim(s.substr(start)));
  return out;
}

void AddPart(std::string_view part, LayerName* out, int depth);

// "PWN(a, PWN(b), c)" -> a, b, c
void AddPointwise(std::string_view inner, LayerName* out, int depth) {
  for (const std::string& arg : SplitTop(inner, ",")) AddPart(arg, out, depth + 1);
}

void AddPart(std::string_view part, LayerName* out, int depth) {
  std::string p = Trim(part);
  if (p.empty() || depth > 64) return;
  if (StartsWith(p, "PWN(") && p.back() == ')') {
    if (out->kind == LayerName::Kind::kPlain) out->kind = LayerName::Kind::kPointwise;
    AddPointwise(std::string_view(p).substr(4, p.size() - 5), out, depth);
    return;
  }
  if (StartsWith(p, "{ForeignNode[") && EndsWith(p, "]}")) {
    out->kind = LayerName::Kind::kRegion;
    std::string_view inner = std::string_view(p).substr(13, p.size() - 15);
    for (const std::string& r : SplitTop(inner, ",")) {
      size_t dots = r.find("...");
      if (dots == std::string::npos)
        out->ranges.push_back({Trim(r), Trim(r)});
      else
        out->ranges.push_back({Trim(std::string_view(r).substr(0, dots)),
                               Trim(std::string_view(r).substr(dots + 3))});
    }
    return;
  }
  if (StartsWith(p, "node_of_")) p = p.substr(8);
  out->parts.push_back(p);
}

}  // namespace

LayerName ParseLayerName(std::string_view name) {
  LayerName out;
  std::string n = Trim(name);
  static constexpr std::string_view kReformat = "Reformatting CopyNode for ";
  if (StartsWith(n, kReformat)) {
    out.kind = LayerName::Kind::kReformat;
    size_t to = n.find(" to ");
    if (to != std::string::npos) out.reformat_target = Trim(std::string_view(n).substr(to + 4));
    return out;
  }
  // TensorRT 7: "conv1/7x7_s2 + conv1/relu_7x7 input reformatter 0" (and "output reformatter").
  for (std::string_view tag : {" input reformatter ", " output reformatter "}) {
    size_t at = n.rfind(tag);
    if (at == std::string::npos || at + tag.size() >= n.size()) continue;
    bool digits = true;
    for (char c : std::string_view(n).substr(at + tag.size()))
      digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (!digits) continue;
    out.kind = LayerName::Kind::kReformat;
    out.reformat_target = Trim(std::string_view(n).substr(0, at));
    return out;
  }
  // "<tensor> copy": one word-free tensor name, then " copy" (a node's name never has the space).
  if (EndsWith(n, " copy") && n.size() > 5 && n.find(' ') == n.size() - 5) {
    out.kind = LayerName::Kind::kCopy;
    out.reformat_target = n.substr(0, n.size() - 5);
    return out;
  }
  if (StartsWith(n, "(Unnamed Layer")) {
    out.kind = LayerName::Kind::kUnnamed;
    return out;
  }
  // TensorRT 7 merges parallel layers that share an input: "a + b || c + d" (horizontal fusion).
  std::vector<std::string> top;
  for (const std::string& branch : SplitTop(n, " || "))
    for (std::string& part : SplitTop(branch, " + ")) top.push_back(std::move(part));
  // TFLite delegate rows list their nodes: "conv1, relu1".
  if (top.size() == 1) top = SplitTop(n, ", ");
  if (top.size() > 1) out.kind = LayerName::Kind::kFused;
  for (const std::string& t : top) AddPart(t, &out, 0);
  if (out.kind == LayerName::Kind::kPlain && out.parts.size() > 1)
    out.kind = LayerName::Kind::kFused;
  return out;
}

std::vector<std::string> ParseOnnxMetadata(std::string_view m) {
  std::vector<std::string> out;
  static constexpr std::string_view kTag = "[ONNX Layer: ";
  size_t pos = 0;
  while ((pos = m.find(kTag, pos)) != std::string_view::npos) {
    size_t start = pos + kTag.size();
    // The name runs to the "]" that closes this tag: the "]" before the next tag (TensorRT 8.6
    // separates tags with \x1f, 10 with \x1e, hand-made ones with a space), or the last "]".
    size_t next = m.find(kTag, start);
    std::string_view scope = m.substr(0, next == std::string_view::npos ? m.size() : next);
    size_t end = scope.rfind(']');
    if (end == std::string_view::npos || end < start) break;
    std::string name = Trim(m.substr(start, end - start));
    if (!name.empty()) out.push_back(name);
    pos = end + 1;
  }
  return out;
}

std::string GuessOpType(std::string_view part) {
  std::string_view s = part;
  size_t slash = s.find_last_of("/.");
  if (slash != std::string_view::npos) s = s.substr(slash + 1);
  // "Conv_12" -> "Conv"
  size_t us = s.find_last_of('_');
  if (us != std::string_view::npos && us + 1 < s.size()) {
    bool digits = true;
    for (char c : s.substr(us + 1)) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (digits) s = s.substr(0, us);
  }
  if (s.empty() || !std::isupper(static_cast<unsigned char>(s[0]))) return "";
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) return "";
  return std::string(s);
}

}  // namespace opscope::importers::trt
