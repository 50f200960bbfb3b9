// Field helpers for the hand-written JSON conversions: one line per field, missing or null
// fields keep their defaults when reading (so older files and foreign writers still load).
#pragma once

#include <nlohmann/json.hpp>

#define OPSCOPE_JSON_PUT(field) j[#field] = v.field
#define OPSCOPE_JSON_GET(field)                                                             \
  do {                                                                                      \
    if (auto it_ = j.find(#field); it_ != j.end() && !it_->is_null()) it_->get_to(v.field); \
  } while (0)
