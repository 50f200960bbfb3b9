// SessionImplPeer: lets the tests of the session's pieces run one phase or pass at a time on a
// small model and look at what it did (steps, values, node and step infos), without going
// through Session's public interface. Tests only.
//
//   SessionImpl s;
//   ASSERT_TRUE(SessionImplPeer::LoadGraph(s, path).ok());   // up to BuildGraph
//   ASSERT_TRUE(SessionImplPeer::FoldConstantsAtLoad(s).ok());
//   SessionImplPeer::MakeSteps(s);
//   SessionImplPeer::Fuse(s);
//   EXPECT_EQ(SessionImplPeer::ActiveSteps(s).size(), 1);
#pragma once

#include <string>
#include <vector>

#include "engine/session_impl.h"

namespace opscope::engine {

struct SessionImplPeer {
  static Status LoadGraph(SessionImpl& s, const std::string& path,
                          const SessionOptions& options = SessionOptions()) {
    return s.LoadGraph(path, options);
  }
  static Status FoldConstantsAtLoad(SessionImpl& s) { return s.FoldConstantsAtLoad(); }
  static void MakeSteps(SessionImpl& s) { s.MakeSteps(); }
  static void Fuse(SessionImpl& s) { s.Fuse(); }
  static void FuseGelu(SessionImpl& s) { s.FuseGelu(); }
  static void IndexSteps(SessionImpl& s) { s.IndexSteps(); }
  static Status CheckPlan(const SessionImpl& s) { return s.CheckPlan(); }
  static void AssignChannelsLast(SessionImpl& s) { s.AssignChannelsLast(); }
  static void SetChannelsLast(SessionImpl& s, bool on) { s.channels_last_ = on; }

  static std::vector<Step>& steps(SessionImpl& s) { return s.steps_; }
  static std::vector<Value>& values(SessionImpl& s) { return s.values_; }
  static const std::vector<Node>& nodes(const SessionImpl& s) { return s.nodes_; }
  static const std::vector<NodeInfo>& node_infos(const SessionImpl& s) { return s.node_infos_; }
  static const std::vector<std::vector<int>>& node_captures(const SessionImpl& s) {
    return s.node_captures_;
  }
  static const std::vector<Subgraph>& subgraphs(const SessionImpl& s) { return s.subgraphs_; }
  static bool HasKernel(const SessionImpl& s, int node) { return s.kernels_[node] != nullptr; }
  static bool planned(const SessionImpl& s) { return s.planned_; }

  // The value id of `name` in the main graph, or -1.
  static int ValueId(const SessionImpl& s, const std::string& name) {
    auto it = s.value_ids_.find(name);
    return it == s.value_ids_.end() ? -1 : it->second;
  }
  // The node index of `name`, or -1.
  static int NodeId(const SessionImpl& s, const std::string& name) {
    for (size_t i = 0; i < s.nodes_.size(); ++i)
      if (s.nodes_[i].name == name) return static_cast<int>(i);
    return -1;
  }
  // The active steps, each as the names of its nodes (anchor first).
  static std::vector<std::vector<std::string>> ActiveSteps(const SessionImpl& s) {
    std::vector<std::vector<std::string>> out;
    for (const Step& st : s.steps_) {
      if (!st.active || st.nodes.empty()) continue;
      out.emplace_back();
      for (int n : st.nodes) out.back().push_back(s.nodes_[n].name);
    }
    return out;
  }
};

}  // namespace opscope::engine
