// Status and StatusOr: how every layer below cli/ reports failure.
//
// A non-OK Status always carries a message written for the user: what failed, where (file,
// node, event), and what to do. Exceptions thrown by third-party parsers (protobuf, JSON) are
// caught where those parsers are called and turned into a Status; only cli/ turns a Status into
// a message and an exit code.
#pragma once

#include "opscope/status.h"

#define OPSCOPE_CONCAT_INNER(a, b) a##b
#define OPSCOPE_CONCAT(a, b) OPSCOPE_CONCAT_INNER(a, b)

#define OPSCOPE_RETURN_IF_ERROR(expr) \
  do {                                \
    ::opscope::Status _st = (expr);   \
    if (!_st.ok()) return _st;        \
  } while (0)

#define OPSCOPE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#define OPSCOPE_ASSIGN_OR_RETURN(lhs, expr) \
  OPSCOPE_ASSIGN_OR_RETURN_IMPL(OPSCOPE_CONCAT(_status_or_, __LINE__), lhs, expr)

// For true internal invariants only; never for input or environment.
#define OPSCOPE_CHECK(cond)                                                   \
  do {                                                                        \
    if (!(cond)) ::opscope::internal::CheckFailed(__FILE__, __LINE__, #cond); \
  } while (0)

namespace opscope::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond);
}
