// The Chrome-trace checker (trace_check.h): each rule on a small hand-written trace that keeps it
// and one that breaks it.
#include "report/trace_check.h"

#include <gtest/gtest.h>

#include <string>

namespace opscope::report {
namespace {

const std::string kNames =
    R"({"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"p"}},)"
    R"({"name":"thread_name","ph":"M","pid":1,"tid":7,"args":{"name":"t"}})";

std::string Trace(const std::string& events) {
  return R"({"traceEvents":[)" + kNames + (events.empty() ? "" : "," + events) + "]}";
}

std::string Problems(const std::string& events) {
  auto r = CheckChromeTrace(Trace(events));
  return r.ok() ? std::string("ok") : r.status().message();
}

std::string X(const char* name, const char* ts, const char* dur, int tid = 7) {
  return std::string(R"({"name":")") + name + R"(","ph":"X","pid":1,"tid":)" + std::to_string(tid) +
         R"(,"ts":)" + ts + R"(,"dur":)" + dur + "}";
}

TEST(TraceCheck, NestedSlicesInstantsAndCounters) {
  auto r = CheckChromeTrace(
      Trace(X("run 0", "0", "10.5") + "," + X("a", "0", "4.25") + "," + X("b", "4.25", "6.25") +
            "," + X("b.inner", "5", "0") + "," +
            R"({"name":"s","ph":"i","s":"t","pid":1,"tid":7,"ts":3.001},)"
            R"({"name":"MHz","ph":"C","pid":1,"tid":0,"ts":0,"args":{"MHz":2400}})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->slices, 4);
  EXPECT_EQ(r->zero_length, 1);
  EXPECT_EQ(r->instants, 1);
  EXPECT_EQ(r->counters, 1);
  EXPECT_EQ(r->max_depth, 3);
  EXPECT_EQ(r->threads, 1);
}

TEST(TraceCheck, AChildThatEndsAfterItsParent) {
  // 1 ns past the parent's end: the staircase speedscope draws.
  const std::string p = Problems(X("run 0", "0", "10") + "," + X("a", "9", "1.001"));
  EXPECT_NE(p.find("ends 1 ns after its parent 'run 0'"), std::string::npos) << p;
  // Siblings that touch are fine; events need not be sorted.
  EXPECT_EQ(Problems(X("b", "5", "5") + "," + X("run 0", "0", "10") + "," + X("a", "0", "5")),
            "ok");
  // The same slices on two threads do not nest with each other.
  EXPECT_EQ(Problems(X("run 0", "0", "10") + "," + X("a", "9", "5", 8) + "," +
                     R"({"name":"thread_name","ph":"M","pid":1,"tid":8,"args":{"name":"u"}})"),
            "ok");
}

TEST(TraceCheck, TimesAreWholeNanoseconds) {
  EXPECT_NE(Problems(X("a", "0.0001", "1")).find("not a whole number of ns"), std::string::npos);
  EXPECT_NE(Problems(X("a", "0", "0.3333333333")).find("not a whole number of ns"),
            std::string::npos);
  EXPECT_EQ(Problems(X("a", "1234567.891", "0.001")), "ok");
  EXPECT_NE(Problems(X("a", "1", "-1")).find("\"dur\" is negative"), std::string::npos);
  EXPECT_NE(Problems(X("a", "-1", "1")).find("\"ts\" is negative"), std::string::npos);
}

TEST(TraceCheck, RequiredFields) {
  EXPECT_NE(Problems(R"({"name":"a","pid":1,"tid":7,"ts":0})").find("\"ph\""), std::string::npos);
  EXPECT_NE(Problems(R"({"ph":"X","pid":1,"tid":7,"ts":0,"dur":1})").find("\"name\""),
            std::string::npos);
  EXPECT_NE(Problems(R"({"name":"a","ph":"X","tid":7,"ts":0,"dur":1})").find("\"pid\""),
            std::string::npos);
  EXPECT_NE(Problems(R"({"name":"a","ph":"X","pid":1,"tid":7,"dur":1})").find("\"ts\""),
            std::string::npos);
  EXPECT_NE(Problems(R"({"name":"a","ph":"X","pid":1,"tid":7,"ts":0})").find("\"dur\""),
            std::string::npos);
  EXPECT_NE(Problems(R"({"name":"a","ph":"i","s":"x","pid":1,"tid":7,"ts":0})").find("scope"),
            std::string::npos);
  EXPECT_NE(Problems(R"({"name":"c","ph":"C","pid":1,"tid":0,"ts":0,"args":{"v":"x"}})")
                .find("not a number"),
            std::string::npos);
  // A track without its name.
  EXPECT_NE(Problems(X("a", "0", "1", 9)).find("pid 1 tid 9 has no thread_name"),
            std::string::npos);
  EXPECT_NE(Problems(R"({"name":"a","ph":"X","pid":2,"tid":7,"ts":0,"dur":1})")
                .find("pid 2 has no process_name"),
            std::string::npos);
}

TEST(TraceCheck, BeginEndPairs) {
  const std::string b0 = R"({"name":"a","ph":"B","pid":1,"tid":7,"ts":0})";
  const std::string b1 = R"({"name":"b","ph":"B","pid":1,"tid":7,"ts":1})";
  const std::string e2 = R"({"ph":"E","name":"b","pid":1,"tid":7,"ts":2})";
  const std::string e3 = R"({"ph":"E","name":"a","pid":1,"tid":7,"ts":3})";
  EXPECT_EQ(Problems(b0 + "," + b1 + "," + e2 + "," + e3), "ok");
  EXPECT_NE(Problems(b0 + "," + b1 + "," + e2).find("without its \"E\""), std::string::npos);
  EXPECT_NE(Problems(b0 + "," + e3 + "," + e2).find("goes back in time"), std::string::npos);
  // A complete slice that crosses the end of a B/E slice on the same thread.
  EXPECT_NE(Problems(b0 + "," + e3 + "," + X("x", "2", "2")).find("after its parent 'a'"),
            std::string::npos);
}

TEST(TraceCheck, NothingToShowIsAProblem) {
  auto r = CheckChromeTrace(R"({"traceEvents":[]})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no events to show"), std::string::npos);
  EXPECT_FALSE(CheckChromeTrace(Trace("")).ok());
  EXPECT_FALSE(CheckChromeTrace("[]").ok());
  EXPECT_FALSE(CheckChromeTrace("{").ok());
}

}  // namespace
}  // namespace opscope::report
