// The embedded Lua scripts: each has a name, a source and the SHA1 EVALSHA needs. A wrong SHA1
// would not break anything visibly (EVALSHA fails with NOSCRIPT and the script is loaded
// again), it would only send every script in full each time, so it is checked here against a
// SHA1 computed by the test itself. And how a script the server lacks is loaded again.
#include "rlock/core/scripts.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rlock/core/error.hpp"
#include "rlock/core/reply.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {
namespace {

// A plain SHA1 (FIPS 180-4), enough for a few kilobytes of test input.
std::string sha1_hex(std::string_view data) {
  uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  std::vector<uint8_t> msg(data.begin(), data.end());
  const uint64_t bit_len = static_cast<uint64_t>(data.size()) * 8;
  msg.push_back(0x80);
  while (msg.size() % 64 != 56) msg.push_back(0);
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<uint8_t>(bit_len >> (i * 8)));
  auto rotl = [](uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
  for (size_t chunk = 0; chunk < msg.size(); chunk += 64) {
    uint32_t w[80];
    for (int i = 0; i < 16; ++i) {
      const uint8_t* p = &msg[chunk + 4 * i];
      w[i] = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
    }
    for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; ++i) {
      uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5A827999u;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ED9EBA1u;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8F1BBCDCu;
      } else {
        f = b ^ c ^ d;
        k = 0xCA62C1D6u;
      }
      uint32_t t = rotl(a, 5) + f + e + k + w[i];
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
  }
  char out[41];
  for (int i = 0; i < 5; ++i) std::snprintf(out + 8 * i, 9, "%08x", static_cast<unsigned>(h[i]));
  return std::string(out, 40);
}

const std::vector<const Script*>& all_scripts() {
  static const std::vector<const Script*> all = [] {
    std::vector<const Script*> list = {
        &scripts::acquire,
        &scripts::release,
        &scripts::renew,
        &scripts::extend,
        &scripts::extend_by,
        &scripts::force_unlock,
        &scripts::status,
        &scripts::undo_acquire,
        &scripts::fenced_write,
        &scripts::fair_acquire,
        &scripts::fair_release,
        &scripts::fair_leave,
        &scripts::fair_force_unlock,
        &scripts::rw_read_acquire,
        &scripts::rw_read_release,
        &scripts::rw_read_renew,
        &scripts::rw_write_acquire,
        &scripts::rw_write_release,
        &scripts::rw_force_unlock,
        &scripts::fair_undo_acquire,
        &scripts::rw_read_undo_acquire,
        &scripts::rw_write_undo_acquire,
        &scripts::sem_try_set,
        &scripts::sem_try_acquire,
        &scripts::sem_release,
        &scripts::sem_add,
        &scripts::sem_drain,
        &scripts::psem_acquire,
        &scripts::psem_release,
        &scripts::psem_update_lease,
        &scripts::psem_available,
        &scripts::psem_set_permits,
        &scripts::psem_lease_time,
        &scripts::latch_try_set,
        &scripts::latch_count_down,
        &scripts::latch_delete,
    };
    for (size_t i = 0, n = list.size(); i < n; ++i) {
      if (list[i]->sharded != nullptr) list.push_back(list[i]->sharded);
    }
    return list;
  }();
  return all;
}

TEST(Sha1SelfCheck, KnownVectors) {
  EXPECT_EQ(sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(sha1_hex(std::string(1000, 'a')), "291e9a6c66994949b57ba5e650361e98fc36b1ba");
}

TEST(Scripts, EachHasANameAndASource) {
  std::set<std::string_view> names;
  for (const Script* s : all_scripts()) {
    EXPECT_FALSE(s->name.empty());
    EXPECT_GT(s->source.size(), 20u) << s->name;
    EXPECT_NE(s->source.find("redis.call"), std::string_view::npos) << s->name;
    names.insert(s->name);
  }
  EXPECT_EQ(names.size(), all_scripts().size()) << "two scripts share a name";
  EXPECT_EQ(scripts::acquire.name, "acquire");
  EXPECT_EQ(scripts::release.name, "release");
  EXPECT_EQ(scripts::force_unlock.name, "force_unlock");
  EXPECT_EQ(scripts::undo_acquire.name, "undo_acquire");
}

TEST(Scripts, Sha1IsFortyLowercaseHexDigits) {
  for (const Script* s : all_scripts()) {
    SCOPED_TRACE(std::string(s->name));
    ASSERT_EQ(s->sha1.size(), 40u) << s->sha1;
    for (char c : s->sha1) {
      EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
          << "not a lowercase hex digit: '" << c << "' in " << s->sha1;
    }
  }
}

TEST(Scripts, Sha1sAreDistinct) {
  std::set<std::string_view> shas;
  for (const Script* s : all_scripts()) shas.insert(s->sha1);
  EXPECT_EQ(shas.size(), all_scripts().size());
}

// What Redis computes for SCRIPT LOAD / EVAL: the SHA1 of the exact source bytes.
// Every script that publishes a wake-up has a sharded twin that is the same text but for
// SPUBLISH, and only those have one.
TEST(Scripts, PublishingScriptsHaveShardedTwins) {
  for (const Script* s : all_scripts()) {
    if (s->name.size() > 8 && s->name.substr(s->name.size() - 8) == "_sharded") continue;
    const bool publishes = s->source.find("redis.call('publish'") != std::string_view::npos;
    ASSERT_EQ(s->sharded != nullptr, publishes) << "script " << s->name;
    if (!publishes) continue;
    std::string expected(s->source);
    for (size_t at = expected.find("redis.call('publish'"); at != std::string::npos;
         at = expected.find("redis.call('publish'", at + 1)) {
      expected.replace(at, 20, "redis.call('spublish'");
    }
    EXPECT_EQ(s->sharded->source, expected) << "script " << s->name;
    EXPECT_EQ(s->sharded->source.find("redis.call('publish'"), std::string_view::npos);
    EXPECT_EQ(s->sharded->name, std::string(s->name) + "_sharded");
  }
  EXPECT_NE(scripts::release.sharded, nullptr);
  EXPECT_EQ(scripts::acquire.sharded, nullptr);
}

TEST(Scripts, Sha1MatchesTheEmbeddedSource) {
  for (const Script* s : all_scripts()) {
    EXPECT_EQ(s->sha1, sha1_hex(s->source)) << "script " << s->name;
  }
}

// A server's script cache, as eval_script meets it (no Redis): EVALSHA of a script it lacks
// answers NOSCRIPT, SCRIPT LOAD may be refused, and a round trip's replies may be lost after
// its commands ran.
class ScriptCache : public Transport {
 public:
  using Transport::run;
  Reply run(const Args& args, Deadline deadline) override {
    return std::move(run_batch({args}, deadline).front());
  }
  std::vector<Reply> run_batch(const std::vector<Args>& commands, Deadline) override {
    std::vector<Reply> replies;
    std::string trip;
    for (const Args& args : commands) {
      trip += (trip.empty() ? "" : " + ") + std::string(args[0]);
      if (args[0] == "SCRIPT") trip += " " + std::string(args[1]);
      replies.push_back(answer(args));
    }
    trips.push_back(trip);
    if (trips.size() > keep && lose > 0) {
      --lose;
      throw Error(kConn, "the reply was lost");
    }
    return replies;
  }
  Deadline deadline_from_now() const override { return Clock::now() + std::chrono::seconds(5); }
  void close() override {}

  std::set<std::string> loaded;
  bool load_refused = false;
  size_t keep = 0;                 // round trips answered before replies are lost
  int lose = 0;                    // round trips whose replies are lost after they ran
  int runs = 0;                    // times the script ran
  std::vector<std::string> trips;  // each round trip's commands, " + " between them

 private:
  using Clock = std::chrono::steady_clock;

  Reply answer(const Args& args) {
    if (args[0] == "SCRIPT") {
      if (load_refused) return Reply::of_error("NOPERM User u has no permissions to run it");
      loaded.insert(sha1_hex(args[2]));
      return Reply::of_string(sha1_hex(args[2]));
    }
    if (args[0] == "WAIT") return Reply::of_int(1);
    if (args[0] == "EVALSHA" && loaded.count(std::string(args[1])) == 0) {
      return Reply::of_error("NOSCRIPT No matching script. Please use EVAL.");
    }
    ++runs;
    return Reply::of_int(1);
  }
};

Reply release_by(ScriptCache& server, Retry retry) {
  return eval_script(server, scripts::release, {"k", "c"}, {"0", "30000", "o:1"}, retry);
}

// NOSCRIPT: SCRIPT LOAD and the same EVALSHA in one round trip (EVAL's scripts are evictable).
TEST(ScriptReload, NoScriptLoadsAndRunsInOneRoundTrip) {
  ScriptCache server;
  EXPECT_EQ(release_by(server, Retry::No).integer, 1);
  EXPECT_EQ(server.trips, (std::vector<std::string>{"EVALSHA", "SCRIPT LOAD + EVALSHA"}));
  EXPECT_EQ(server.runs, 1);
  EXPECT_EQ(release_by(server, Retry::No).integer, 1);
  EXPECT_EQ(server.trips.back(), "EVALSHA") << "loaded once, then by SHA1 alone";
}

// SCRIPT LOAD refused (ACL, renamed): the EVALSHA after it answers NOSCRIPT, and EVAL runs it.
TEST(ScriptReload, RefusedLoadFallsBackToEval) {
  ScriptCache server;
  server.load_refused = true;
  EXPECT_EQ(release_by(server, Retry::No).integer, 1);
  EXPECT_EQ(server.trips, (std::vector<std::string>{"EVALSHA", "SCRIPT LOAD + EVALSHA", "EVAL"}));
  EXPECT_EQ(server.runs, 1);
}

// The synced form keeps WAIT right after the script, on the load's round trip too.
TEST(ScriptReload, WaitFollowsTheReloadedScript) {
  ScriptCache server;
  const SyncedReply out =
      eval_script_synced(server, scripts::release, {"k", "c"}, {"0", "30000", "o:1"}, 1, 100,
                         Retry::No, server.deadline_from_now());
  EXPECT_EQ(out.reply.integer, 1);
  EXPECT_EQ(out.acked, 1);
  EXPECT_EQ(server.trips,
            (std::vector<std::string>{"EVALSHA + WAIT", "SCRIPT LOAD + EVALSHA + WAIT"}));
}

// A lost reply: Retry::No never sends again; Retry::Once sends once more, with the source (a
// lost NOSCRIPT must not lose the script again), and never a second time.
TEST(ScriptReload, ALostReplyIsResentOnceWithTheSourceOnlyWhenAllowed) {
  ScriptCache once;
  once.loaded.insert(std::string(scripts::release.sha1));
  once.lose = 1;
  EXPECT_EQ(release_by(once, Retry::Once).integer, 1);
  EXPECT_EQ(once.trips, (std::vector<std::string>{"EVALSHA", "SCRIPT LOAD + EVALSHA"}));

  ScriptCache no;
  no.loaded.insert(std::string(scripts::release.sha1));
  no.lose = 1;
  EXPECT_THROW(release_by(no, Retry::No), Error);
  EXPECT_EQ(no.runs, 1);

  for (bool refused : {false, true}) {
    ScriptCache lossy;  // NOSCRIPT, then every reply lost
    lossy.load_refused = refused;
    lossy.keep = 1;
    lossy.lose = 100;
    EXPECT_THROW(release_by(lossy, Retry::Once), Error);
    EXPECT_EQ(lossy.trips.size(), 3u) << "sent more than once again";
    EXPECT_LE(lossy.runs, 2);
  }
}

}  // namespace
}  // namespace rlock::core
