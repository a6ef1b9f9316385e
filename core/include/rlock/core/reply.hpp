// A Redis reply, decoupled from hiredis so the lock logic can run over a fake transport in unit
// tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rlock/core/error.hpp"

namespace rlock::core {

struct Reply {
  enum class Type { Nil, Integer, String, Status, Error, Array };
  Type type = Type::Nil;
  int64_t integer = 0;
  std::string str;  // String, Status and Error
  std::vector<Reply> elements;
  RedisError error;  // Error: what the text means (classify_redis_error); decisions read this

  static Reply nil() { return {}; }
  static Reply of_int(int64_t v) {
    Reply r;
    r.type = Type::Integer;
    r.integer = v;
    return r;
  }
  static Reply of_string(std::string s) {
    Reply r;
    r.type = Type::String;
    r.str = std::move(s);
    return r;
  }
  static Reply of_error(std::string s) {
    Reply r;
    r.type = Type::Error;
    r.error = classify_redis_error(s);
    r.str = std::move(s);
    return r;
  }
  static Reply of_array(std::vector<Reply> e) {
    Reply r;
    r.type = Type::Array;
    r.elements = std::move(e);
    return r;
  }
  bool is_error() const { return type == Type::Error; }
  bool is_nil() const { return type == Type::Nil; }
};

}  // namespace rlock::core
