// classify_redis_error: every error reply the core acts on, by its kind, code, transient flag
// and redirect. The texts are what Redis 5 to 7 send.
#include <gtest/gtest.h>

#include <string>

#include "rlock/core/error.hpp"
#include "rlock/core/reply.hpp"

namespace rlock::core {
namespace {

using Kind = RedisErrorKind;

struct Case {
  std::string reply;
  Kind kind;
  int code;
  bool transient;
};

void expect_case(const Case& c) {
  const RedisError e = classify_redis_error(c.reply);
  EXPECT_EQ(e.kind, c.kind) << c.reply;
  EXPECT_EQ(e.code, c.code) << c.reply;
  EXPECT_EQ(e.transient, c.transient) << c.reply;
  EXPECT_EQ(code_for_redis_error(c.reply), c.code) << c.reply;
  if (c.kind != Kind::kMoved && c.kind != Kind::kAsk) {
    EXPECT_EQ(e.redirect.kind, Redirect::Kind::kNone) << c.reply;
  }
}

TEST(RedisErrors, TransientOnesAreRetriedWithinAWait) {
  const Case cases[] = {
      {"LOADING Redis is loading the dataset in memory", Kind::kLoading, kRedis, true},
      {"TRYAGAIN Multiple keys request during rehashing of slot", Kind::kTryAgain, kRedis, true},
      {"CLUSTERDOWN The cluster is down", Kind::kClusterDown, kRedis, true},
      {"CLUSTERDOWN Hash slot not served", Kind::kClusterDown, kRedis, true},
      {"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
       Kind::kBusy, kRedisBusy, true},
  };
  for (const Case& c : cases) expect_case(c);
}

TEST(RedisErrors, ConditionsCallersActOn) {
  const Case cases[] = {
      {"NOSCRIPT No matching script. Please use EVAL.", Kind::kNoScript, kRedis, false},
      {"READONLY You can't write against a read only replica.", Kind::kReadOnly, kReadOnly, false},
      {"NOREPLICAS Not enough good replicas to write.", Kind::kNoReplicas, kReadOnly, false},
      // Redis < 7 wraps it when a script's write meets it
      {"ERR Error running script (call to f_0123456789abcdef0123456789abcdef01234567): "
       "@user_script:1: NOREPLICAS Not enough good replicas to write.",
       Kind::kNoReplicas, kReadOnly, false},
      {"OOM command not allowed when used memory > 'maxmemory'.", Kind::kOom, kRedisOom, false},
      {"NOPERM this user has no permissions to run the 'evalsha' command", Kind::kNoPerm, kNoPerm,
       false},
      {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
       Kind::kMasterDown, kRedis, false},
      {"ERR unknown command 'EVALSHA', with args beginning with: ", Kind::kUnknownCommand,
       kUnsupported, false},
      {"ERR This instance has cluster support disabled", Kind::kClusterDisabled, kRedis, false},
  };
  for (const Case& c : cases) expect_case(c);
}

TEST(RedisErrors, WrongTypeAlsoInsideAnOlderServersScriptError) {
  const Case cases[] = {
      // Redis 7
      {"WRONGTYPE Operation against a key holding the wrong kind of value script: "
       "f_0123456789abcdef0123456789abcdef01234567, on @user_script:1.",
       Kind::kWrongType, kRedis, false},
      // Redis < 7
      {"ERR Error running script (call to f_0123456789abcdef0123456789abcdef01234567): "
       "@user_script:1: WRONGTYPE Operation against a key holding the wrong kind of value",
       Kind::kWrongType, kRedis, false},
  };
  for (const Case& c : cases) expect_case(c);
}

// Redis 6 wraps what a command inside a script refused: the refusal keeps its own kind and code
// (seen with Redis 6.0.16: OOM, READONLY; NOPERM of an ACL user without PUBLISH).
TEST(RedisErrors, OlderServersWrappedScriptRefusalsKeepTheirKind) {
  const std::string wrap =
      "ERR Error running script (call to f_67a1b6ec74728127606fbeb84275f9d3a6a2d0a4): "
      "@user_script:31: @user_script: 31: ";
  const Case cases[] = {
      {wrap + "-OOM command not allowed when used memory > 'maxmemory'.", Kind::kOom, kRedisOom,
       false},
      {wrap + "-READONLY You can't write against a read only replica.", Kind::kReadOnly, kReadOnly,
       false},
      {wrap + "-NOPERM this user has no permissions to run the 'publish' command", Kind::kNoPerm,
       kNoPerm, false},
      // A script's own error is no refusal of the server.
      {"ERR Error running script (call to f_0123456789abcdef0123456789abcdef01234567): "
       "@user_script:3: user_script:3: attempt to compare nil with number",
       Kind::kOther, kRedis, false},
  };
  for (const Case& c : cases) expect_case(c);
}

TEST(RedisErrors, AuthVariants) {
  const Case cases[] = {
      {"NOAUTH Authentication required.", Kind::kNoAuth, kAuth, false},
      {"WRONGPASS invalid username-password pair or user is disabled.", Kind::kBadCredentials,
       kAuth, false},
      {"WRONGPASS invalid username-password pair", Kind::kBadCredentials, kAuth, false},
      {"ERR invalid password", Kind::kBadCredentials, kAuth, false},
      {"ERR AUTH <password> called without any password configured for the default user. Are "
       "you sure your configuration is correct?",
       Kind::kBadCredentials, kAuth, false},
      {"ERR Client sent AUTH, but no password is set", Kind::kBadCredentials, kAuth, false},
  };
  for (const Case& c : cases) expect_case(c);
}

TEST(RedisErrors, UnknownErrorsAreRedisErrorsAndNotTransient) {
  const Case cases[] = {
      {"ERR value is not an integer or out of range", Kind::kOther, kRedis, false},
      {"ERR Error running script (call to f_x): @user_script:1: user_script:1: boom", Kind::kOther,
       kRedis, false},
      {"CROSSSLOT Keys in request don't hash to the same slot", Kind::kOther, kRedis, false},
      {"EXECABORT Transaction discarded because of previous errors.", Kind::kOther, kRedis, false},
      {"", Kind::kOther, kRedis, false},
      {"loading", Kind::kOther, kRedis, false},  // the words are upper case
      // The word must lead: elsewhere it is only text (a key or a script's own message).
      {"ERR no such key 'LOADING'", Kind::kOther, kRedis, false},
      {"ERR TRYAGAIN CLUSTERDOWN", Kind::kOther, kRedis, false},
      {"MOVED", Kind::kOther, kRedis, false},
      {"MOVED 3999", Kind::kOther, kRedis, false},
      {"MOVED 16384 127.0.0.1:6381", Kind::kOther, kRedis, false},  // no such slot
      {"MOVED -1 127.0.0.1:6381", Kind::kOther, kRedis, false},
      {"MOVED 3999 127.0.0.1", Kind::kOther, kRedis, false},        // no port
      {"MOVED 3999 127.0.0.1:0", Kind::kOther, kRedis, false},      // port 0
      {"MOVED 3999 127.0.0.1:65536", Kind::kOther, kRedis, false},  // port too large
      {"MOVED 3999 127.0.0.1:+80", Kind::kOther, kRedis, false},
      {"MOVED 3999 :6381", Kind::kOther, kRedis, false},  // no host
      {"ASK x 127.0.0.1:6381", Kind::kOther, kRedis, false},
      {"ASKING", Kind::kOther, kRedis, false},
  };
  for (const Case& c : cases) expect_case(c);
}

TEST(RedisErrors, CodesKeepTheirPrecedence) {
  // The kind follows the leading word; the code lets a password refusal anywhere in the text
  // outrank kRedis and kUnsupported, as code_for_redis_error always did.
  expect_case({"BUSYKEY Target key name already exists.", Kind::kBusy, kRedisBusy, true});
  expect_case({"LOADING invalid password", Kind::kLoading, kAuth, true});
  expect_case({"NOSCRIPT invalid password", Kind::kNoScript, kAuth, false});
  expect_case({"ERR unknown command 'x', invalid password", Kind::kUnknownCommand, kAuth, false});
  expect_case({"OOM invalid password", Kind::kOom, kRedisOom, false});
}

TEST(RedisErrors, Redirects) {
  RedisError moved = classify_redis_error("MOVED 3999 127.0.0.1:6381");
  EXPECT_EQ(moved.kind, Kind::kMoved);
  EXPECT_EQ(moved.code, kRedis);
  EXPECT_FALSE(moved.transient);
  EXPECT_EQ(moved.redirect.kind, Redirect::Kind::kMoved);
  EXPECT_EQ(moved.redirect.slot, 3999);
  EXPECT_EQ(moved.redirect.host, "127.0.0.1");
  EXPECT_EQ(moved.redirect.port, 6381);

  RedisError ask = classify_redis_error("ASK 0 redis-node-2.example:7000");
  EXPECT_EQ(ask.kind, Kind::kAsk);
  EXPECT_EQ(ask.redirect.kind, Redirect::Kind::kAsk);
  EXPECT_EQ(ask.redirect.slot, 0);
  EXPECT_EQ(ask.redirect.host, "redis-node-2.example");
  EXPECT_EQ(ask.redirect.port, 7000);

  RedisError last = classify_redis_error("MOVED 16383 10.0.0.1:65535");
  EXPECT_EQ(last.redirect.slot, 16383);
  EXPECT_EQ(last.redirect.port, 65535);
}

TEST(RedisErrors, RedirectToAnIpv6HostKeepsItsColons) {
  RedisError moved = classify_redis_error("MOVED 12182 ::1:30001");
  EXPECT_EQ(moved.kind, Kind::kMoved);
  EXPECT_EQ(moved.redirect.host, "::1");
  EXPECT_EQ(moved.redirect.port, 30001);

  RedisError ask = classify_redis_error("ASK 5 2001:db8::7:6379");
  EXPECT_EQ(ask.kind, Kind::kAsk);
  EXPECT_EQ(ask.redirect.slot, 5);
  EXPECT_EQ(ask.redirect.host, "2001:db8::7");
  EXPECT_EQ(ask.redirect.port, 6379);
}

TEST(RedisErrors, ErrorRepliesCarryTheirClassification) {
  Reply r = Reply::of_error("LOADING Redis is loading the dataset in memory");
  EXPECT_EQ(r.error.kind, Kind::kLoading);
  EXPECT_TRUE(r.error.transient);
  EXPECT_EQ(Reply::of_int(1).error.kind, Kind::kNone);
  EXPECT_EQ(Reply::of_string("LOADING").error.kind, Kind::kNone);  // data, not an error
}

TEST(RedisErrors, ThrownAndRecordedFailuresCarryTransient) {
  EXPECT_TRUE(Error(kConn, "dropped").transient());
  EXPECT_TRUE(Error(kRedisBusy, "busy").transient());
  EXPECT_FALSE(Error(kRedis, "LOADING in the text only").transient());
  EXPECT_TRUE(Error(kRedis, "x", true).transient());

  EXPECT_EQ(fail(kRedis, "LOADING in the text only"), kRedis);
  EXPECT_FALSE(last_error_transient());
  EXPECT_EQ(fail(kRedis, "anything", true), kRedis);
  EXPECT_TRUE(last_error_transient());
  fail(kConn, "dropped");
  EXPECT_TRUE(last_error_transient());
  fail(kInvalid, "bad");
  EXPECT_FALSE(last_error_transient());
}

TEST(RedisErrors, OneRetryPredicate) {
  EXPECT_TRUE(worth_retrying(kTimedOut, false));
  EXPECT_TRUE(worth_retrying(kRedis, true));
  EXPECT_FALSE(worth_retrying(kRedis, false));
  EXPECT_FALSE(worth_retrying(kInvalid, false));
}

}  // namespace
}  // namespace rlock::core
