#include "report/flame_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "base/strings.h"
#include "report/format.h"
#include "report/op_stacks.h"
#include "report/say.h"

namespace opscope::report {
namespace {

struct Node {
  std::string label, module;
  double weight = 0, self = 0;
  uint64_t samples = 0;
  std::map<std::string, size_t> children;  // label -> node index (sorted: stable layout)
};

std::string Escape(const std::string& raw) {
  const std::string s = ToValidUtf8(raw);  // XML must be well-formed UTF-8
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') o += c;
    }
  }
  return o;
}

std::string Color(const std::string& module, const std::string& label) {
  uint32_t h = 2166136261u;
  for (char c : module) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  uint32_t v = 2166136261u;
  for (char c : label) v = (v ^ static_cast<uint8_t>(c)) * 16777619u;
  if (module == "[jit]")
    return fmt::format("rgb({},{},{})", 80 + v % 40, 180 + v % 50, 80 + h % 40);
  int r = 205 + static_cast<int>(h % 50),
      g = 80 + static_cast<int>((h >> 8) % 90) + static_cast<int>(v % 30),
      b = 40 + static_cast<int>(v % 40);
  return fmt::format("rgb({},{},{})", r, std::min(g, 230), b);
}

// The label cut to what fits in `width` pixels (6.5 px per character of 11 px monospace).
std::string Fit(const std::string& label, double width) {
  int fit = static_cast<int>((width - 6) / 6.5);
  if (fit < 3) return "";
  if (static_cast<int>(label.size()) <= fit) return label;
  return label.substr(0, static_cast<size_t>(fit - 2)) + "..";
}

const char kScript[] = R"JS(
var svg=document.documentElement,frames=[].slice.call(document.querySelectorAll('g.f')),W=+svg.getAttribute('data-w'),P=10;
function num(g,a){return +g.getAttribute(a);}
function layout(x0,w0,d0){frames.forEach(function(g){var x=num(g,'data-x'),w=num(g,'data-wd'),d=num(g,'data-d');
 var r=g.firstElementChild.nextElementSibling,t=r.nextElementSibling;
 var inside=x>=x0-1e-9&&x+w<=x0+w0+1e-9,anc=x<=x0+1e-9&&x+w>=x0+w0-1e-9&&d<d0;
 if(!(inside||anc)){g.style.display='none';return;} g.style.display='';
 var nx=anc?P:P+(x-x0)/w0*(W-2*P),nw=anc?W-2*P:w/w0*(W-2*P);
 r.setAttribute('x',nx);r.setAttribute('width',Math.max(nw-0.5,0));t.setAttribute('x',nx+3);
 var label=g.getAttribute('data-n'),fit=Math.floor((nw-6)/6.5);
 t.textContent=fit<3?'':(label.length<=fit?label:label.substring(0,fit-2)+'..');
 g.style.opacity=anc?0.6:1;});}
frames.forEach(function(g){g.onclick=function(){var d=num(g,'data-d');
 if(d==0){layout(0,1,0);return;} layout(num(g,'data-x'),num(g,'data-wd'),d);};});
function search(){var re=prompt('Search (regular expression):');if(re===null)return;var rx;
 try{rx=new RegExp(re);}catch(e){alert(e);return;} var m=[],tot=0;
 frames.forEach(function(g){var r=g.firstElementChild.nextElementSibling;
  if(re&&rx.test(g.getAttribute('data-n'))){r.setAttribute('fill','rgb(230,0,230)');m.push(g);} else r.setAttribute('fill',g.getAttribute('data-c'));});
 m.sort(function(a,b){return num(a,'data-x')-num(b,'data-x');}); var end=-1;
 m.forEach(function(g){var x=num(g,'data-x'),w=num(g,'data-wd');if(x>=end){tot+=w;end=x+w;}else if(x+w>end){tot+=x+w-end;end=x+w;}});
 document.getElementById('matched').textContent=re?('Matched: '+(100*tot).toFixed(1)+'%'):'';}
document.getElementById('search').onclick=search;
document.getElementById('reset').onclick=function(){layout(0,1,0);};
var details=document.getElementById('details');
frames.forEach(function(g){g.onmouseover=function(){details.textContent=g.firstElementChild.textContent;};
 g.onmouseout=function(){details.textContent=' ';};});
document.addEventListener('keydown',function(e){if(e.key==='Escape')layout(0,1,0);
 if((e.ctrlKey||e.metaKey)&&e.key==='f'){e.preventDefault();search();}});
layout(0,1,0);
)JS";

}  // namespace

std::string RenderFlameSvg(const profile::Profile& p, const std::string& title, SampleGroup group) {
  std::vector<Node> nodes(1);
  nodes[0].label = "all";
  const bool grouped = group == SampleGroup::kThread || group == SampleGroup::kOp;
  int max_depth = 0;
  if (p.samples) {
    const auto& sec = *p.samples;
    std::vector<std::string> labels;
    for (const auto& f : sec.frames) labels.push_back(FrameLabel(f));
    for (const auto& s : sec.samples) {
      size_t cur = 0;
      nodes[0].weight += s.weight;
      ++nodes[0].samples;
      int depth = 0;
      auto descend = [&](const std::string& label, const std::string& module) {
        auto it = nodes[cur].children.find(label);
        size_t next;
        if (it == nodes[cur].children.end()) {
          next = nodes.size();
          nodes[cur].children.emplace(label, next);
          {
            Node nn;
            nn.label = label;
            nn.module = module;
            nodes.push_back(std::move(nn));
          }
        } else {
          next = it->second;
        }
        cur = next;
        nodes[cur].weight += s.weight;
        ++nodes[cur].samples;
        ++depth;
      };
      if (grouped) descend(SampleGroupLabel(p, s, group), "");
      for (size_t k = s.stack.size(); k-- > 0;)
        descend(labels[s.stack[k]], sec.frames[s.stack[k]].module);
      nodes[cur].self += s.weight;
      max_depth = std::max(max_depth, depth);
    }
  }
  const double kWidth = 1200, kPad = 10, kRow = 16, kTop = 40;
  double total = nodes[0].weight > 0 ? nodes[0].weight : 1;
  const double min_frac = 0.1 / kWidth;  // narrower than a tenth of a pixel: not drawn
  int depth_drawn = 0;
  std::string body;
  struct Item {
    size_t node;
    double x;  // fraction
    int depth;
  };
  std::vector<Item> stack{{0, 0.0, 0}};
  double height = kTop + (max_depth + 1) * kRow + 30;
  while (!stack.empty()) {
    Item it = stack.back();
    stack.pop_back();
    const Node& n = nodes[it.node];
    double w = n.weight / total;
    if (w < min_frac) continue;
    depth_drawn = std::max(depth_drawn, it.depth);
    double y = height - 30 - (it.depth + 1) * kRow;
    std::string color = it.node == 0 ? "rgb(220,220,220)" : Color(n.module, n.label);
    std::string name = Escape(n.label);
    // Static geometry, so viewers without scripts (image previews) show the graph too; the
    // script only redoes it when zooming.
    double px = kPad + it.x * (kWidth - 2 * kPad), pw = w * (kWidth - 2 * kPad);
    body += fmt::format(
        "<g class=\"f\" data-x=\"{:.6f}\" data-wd=\"{:.6f}\" data-d=\"{}\" data-n=\"{}\" "
        "data-c=\"{}\">"
        "<title>{}{} — {} samples, {:.2f}% (self {:.2f}%)</title>"
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" rx=\"2\"/>"
        "<text x=\"{:.2f}\" y=\"{:.1f}\">{}</text></g>\n",
        it.x, w, it.depth, name, color, name, n.module.empty() ? "" : " [" + Escape(n.module) + "]",
        n.samples, 100 * w, 100 * n.self / total, px, y, std::max(pw - 0.5, 0.0), kRow - 1, color,
        px + 3, y + kRow - 4.5, Escape(Fit(n.label, pw)));
    double x = it.x;
    std::vector<Item> kids;
    for (const auto& [label, idx] : n.children) {
      kids.push_back({idx, x, it.depth + 1});
      x += nodes[idx].weight / total;
    }
    stack.insert(stack.end(), kids.rbegin(), kids.rend());
  }
  std::string out;
  out += fmt::format(
      "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      "<svg version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" data-w=\"{0}\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n"
      "<style>text{{font:11px monospace;fill:#000;pointer-events:none}} g.f:hover "
      "rect{{stroke:#000;stroke-width:0.6}} "
      "g.f{{cursor:pointer}} #search,#reset{{cursor:pointer;pointer-events:all}} "
      "#search:hover,#reset:hover{{text-decoration:underline}}</style>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fdfdf6\"/>\n"
      "<text x=\"{2}\" y=\"18\" style=\"font-size:15px\">{3}</text>\n"
      "<text x=\"{2}\" y=\"34\" style=\"font-size:11px;fill:#555\">{4} — click a frame to zoom, "
      "Escape, Reset zoom or the bottom frame to reset</text>\n"
      "<text id=\"search\" x=\"{5}\" y=\"18\" text-anchor=\"end\" "
      "style=\"font-size:13px;fill:#333\">Search</text>\n"
      "<text id=\"reset\" x=\"{5}\" y=\"34\" text-anchor=\"end\" "
      "style=\"font-size:12px;fill:#333\">Reset zoom</text>\n"
      "<text id=\"details\" x=\"{2}\" y=\"{6}\" style=\"font-size:12px\"> </text>\n"
      "<text id=\"matched\" x=\"{5}\" y=\"{6}\" text-anchor=\"end\" "
      "style=\"font-size:12px\"></text>\n",
      kWidth, height, kPad, Escape(title), Escape(DescribeSamples(p)), kWidth - kPad, height - 10);
  out += body;
  out += "<script><![CDATA[";
  out += kScript;
  out += "]]></script>\n</svg>\n";
  return out;
}

namespace {

Status WriteSvg(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  if (p.samples)
    for (const auto& w : p.samples->warnings) Say("warning", w);
  profile::Profile storage;
  const profile::Profile& q = WithOpStacks(p, &storage);
  std::string title = !o.title.empty()
                          ? o.title
                          : "opscope: " + (p.meta.source.empty() ? p.meta.kind : p.meta.source);
  *out = RenderFlameSvg(q, title, o.samples.group);
  return Status::Ok();
}

}  // namespace
OPSCOPE_REGISTER_FORMAT(svg, {.name = "svg",
                              .extension = ".svg",
                              .description = "flame graph (self-contained SVG; op scopes by time "
                                             "when there are no samples)",
                              .write = &WriteSvg,
                              .needs = "samples ops"});

}  // namespace opscope::report
