// Statistics (rlock_client_stats) against workloads with known counts, and the event hook's
// order and fields.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

uint64_t bucket_total(const rlock_histogram& h) {
  uint64_t n = 0;
  for (uint64_t b : h.buckets) n += b;
  return n;
}

it::Client make_client_with(const std::string& url, int64_t watchdog_lease_ms, int stats) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.watchdog_lease_ms = watchdog_lease_ms;
  opts.stats = stats;
  rlock_client* c = nullptr;
  if (rlock_client_new(&c, &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_client_new failed: " + it::last_error());
  }
  return it::Client(c);
}

bool wait_for(const std::function<bool()>& done, int64_t timeout_ms) {
  const int64_t deadline = mono_ms() + timeout_ms;
  while (!done()) {
    if (mono_ms() >= deadline) return false;
    sleep_ms(5);
  }
  return true;
}

struct SeenEvent {
  rlock_event_kind kind;
  std::string name, owner, detail;
  int64_t thread_id, duration_us, token, unix_time_us;
  int reason;
  std::thread::id on_thread;
};

struct EventLog {
  std::mutex mutex;
  std::vector<SeenEvent> events;
  size_t size() {
    std::lock_guard<std::mutex> g(mutex);
    return events.size();
  }
  std::vector<SeenEvent> copy() {
    std::lock_guard<std::mutex> g(mutex);
    return events;
  }
  bool wait_for_count(size_t n, int64_t timeout_ms) {
    return wait_for([&] { return size() >= n; }, timeout_ms);
  }
};

void on_event(const rlock_event* e, void* payload) {
  EventLog* log = static_cast<EventLog*>(payload);
  SeenEvent s;
  s.kind = e->kind;
  s.name.assign(e->name, e->name_len);
  s.owner.assign(e->owner, e->owner_len);
  s.detail.assign(e->detail, e->detail_len);
  s.thread_id = e->thread_id;
  s.duration_us = e->duration_us;
  s.token = e->token;
  s.unix_time_us = e->unix_time_us;
  s.reason = e->reason;
  s.on_thread = std::this_thread::get_id();
  std::lock_guard<std::mutex> g(log->mutex);
  log->events.push_back(std::move(s));
}

}  // namespace

// N granted acquires, M try-once timeouts, N releases and one failed release, one acquire on a
// key of the wrong type: each counter moves by exactly that.
TEST(Stats, CountsAKnownWorkload) {
  const std::string name = unique_name("stats");
  const std::string wrong = unique_name("stats-wrongtype");
  LockKeys cleanup(name);
  LockKeys cleanup_wrong(wrong);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Client other = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  it::Lock held_elsewhere = it::make_lock(other.get(), name);

  const rlock_stats before = it::read_stats(client.get());
  EXPECT_EQ(before.enabled, 1);
  EXPECT_EQ(before.acquires_granted, 0u);
  EXPECT_EQ(before.holds, 0);
  // Creating the client sent two scripts: the probe EVAL (scripts may run, PUBLISH is allowed)
  // and EVALSHA of an unknown SHA1 (EVALSHA is allowed).
  EXPECT_EQ(before.scripts_sent, 2u);

  constexpr int kGrants = 20;
  constexpr int kTimeouts = 5;
  for (int i = 0; i < kGrants; ++i) {
    ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
    if (i == 0) {
      EXPECT_EQ(it::read_stats(client.get()).holds, 1);
    }
    ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  }
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ENOTHELD);
  ASSERT_EQ(rlock_acquire(held_elsewhere.get(), 0), RLOCK_OK) << it::last_error();
  for (int i = 0; i < kTimeouts; ++i) {
    EXPECT_EQ(rlock_acquire(lock.get(), 0), RLOCK_ETIMEDOUT);
  }
  ASSERT_EQ(rlock_release(held_elsewhere.get()), RLOCK_OK);
  redis.ok({"SET", wrong, "not a lock"});
  it::Lock wrong_lock = it::make_lock(client.get(), wrong);
  EXPECT_EQ(rlock_acquire(wrong_lock.get(), 0), RLOCK_EREDIS);
  EXPECT_EQ(rlock_acquire(wrong_lock.get(), -5), RLOCK_EINVAL);

  const rlock_stats st = it::read_stats(client.get());
  EXPECT_EQ(st.acquires_granted, uint64_t{kGrants});
  EXPECT_EQ(st.acquires_timed_out, uint64_t{kTimeouts});
  EXPECT_EQ(st.acquires_canceled, 0u);
  EXPECT_EQ(st.acquires_failed, 2u);
  EXPECT_EQ(st.acquires_failed_by_code[-RLOCK_EREDIS], 1u);
  EXPECT_EQ(st.acquires_failed_by_code[-RLOCK_EINVAL], 1u);
  EXPECT_EQ(st.releases, uint64_t{kGrants});
  EXPECT_EQ(st.releases_failed, 1u);
  EXPECT_EQ(st.holds, 0);
  EXPECT_EQ(st.waiters, 0);
  EXPECT_EQ(st.locks_lost_gone + st.locks_lost_unreachable + st.locks_lost_expired, 0u);
  // Every acquire attempt and release is one script (the EINVAL one sends none), plus one EVALSHA
  // more per script the server did not have yet (acquire and release: NOSCRIPT, SCRIPT LOAD).
  const uint64_t scripts = st.scripts_sent - before.scripts_sent;
  EXPECT_GE(scripts, uint64_t{kGrants + kTimeouts + 1 + kGrants + 1});
  EXPECT_LE(scripts, uint64_t{kGrants + kTimeouts + 1 + kGrants + 1 + 2});
  EXPECT_EQ(st.acquire_wait.count, uint64_t{kGrants});
  EXPECT_EQ(bucket_total(st.acquire_wait), st.acquire_wait.count);
  EXPECT_EQ(st.hold.count, uint64_t{kGrants});
  EXPECT_EQ(bucket_total(st.hold), st.hold.count);
  EXPECT_GE(st.command_rtt.count, scripts);
  EXPECT_GT(st.command_rtt.sum_us, 0u);
  EXPECT_EQ(st.handoff.count, 0u);  // nobody waited
  EXPECT_EQ(st.failovers + st.cluster_redirects + st.reconnects + st.events_dropped, 0u);

  // The other client counted only its own.
  const rlock_stats o = it::read_stats(other.get());
  EXPECT_EQ(o.acquires_granted, 1u);
  EXPECT_EQ(o.releases, 1u);
  EXPECT_EQ(o.acquires_timed_out, 0u);
}

// A blocked acquire shows as a waiter; the unlock message that wakes it is a handoff.
TEST(Stats, WaitersAndHandoff) {
  const std::string name = unique_name("stats-wait");
  LockKeys cleanup(name);
  it::Client holder_client = it::make_client();
  it::Client client = it::make_client();
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock lock = it::make_lock(client.get(), name);
  ASSERT_EQ(rlock_acquire(holder.get(), 0), RLOCK_OK) << it::last_error();

  std::atomic<int> outcome{1};
  std::thread waiter([&] {
    outcome = rlock_acquire(lock.get(), 10000);
    if (outcome == RLOCK_OK) rlock_release(lock.get());
  });
  ASSERT_TRUE(wait_for([&] { return it::read_stats(client.get()).waiters == 1; }, 5000))
      << "the blocked acquire never showed as a waiter";
  sleep_ms(50);  // subscribed: the release's message is what wakes it
  ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK);
  waiter.join();
  ASSERT_EQ(outcome.load(), RLOCK_OK);

  const rlock_stats st = it::read_stats(client.get());
  EXPECT_EQ(st.waiters, 0);
  EXPECT_EQ(st.acquires_granted, 1u);
  EXPECT_EQ(st.handoff.count, 1u);
  EXPECT_EQ(bucket_total(st.handoff), 1u);
  EXPECT_LT(st.handoff.sum_us, 2000000u) << "woken by the message, not by a poll";
  EXPECT_GE(st.acquire_wait.sum_us, 50000u) << "it waited at least the 50 ms above";
}

// Losses by reason: a watchdog hold deleted behind its owner (gone), and an explicit lease that
// ran out while held (expired).
TEST(Stats, LostLocksByReason) {
  const std::string gone = unique_name("stats-gone");
  const std::string expired = unique_name("stats-expired");
  LockKeys cleanup_gone(gone);
  LockKeys cleanup_expired(expired);
  RedisConn redis(test_redis_url());
  it::Client client = make_client_with(it::server_url(), 300, RLOCK_STATS_ON);
  it::Lock a = it::make_lock(client.get(), gone);
  it::Lock b = it::make_lock(client.get(), expired);
  ASSERT_EQ(rlock_acquire(a.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(it::acquire(b.get(), 0, 100), RLOCK_OK) << it::last_error();
  ASSERT_EQ(redis.del(gone), 1);
  ASSERT_TRUE(wait_for(
      [&] {
        const rlock_stats st = it::read_stats(client.get());
        return st.locks_lost_gone == 1 && st.locks_lost_expired == 1;
      },
      3000));
  const rlock_stats st = it::read_stats(client.get());
  EXPECT_EQ(st.locks_lost_unreachable, 0u);
  EXPECT_EQ(st.holds, 0);
  EXPECT_GE(st.renewals_sent, 1u);
  EXPECT_EQ(st.renewals_failed, 0u);
  EXPECT_EQ(rlock_release(a.get()), RLOCK_ELOST);
  EXPECT_EQ(it::read_stats(client.get()).releases_failed, 1u);
}

// Off: nothing is counted, every field is zero (but holds and waiters are not kept either).
TEST(Stats, OffByOptionOrUrl) {
  const std::string name = unique_name("stats-off");
  LockKeys cleanup(name);
  it::Client by_option = make_client_with(it::server_url(), 0, RLOCK_STATS_OFF);
  it::Client by_url = it::make_client(it::server_url() + "?stats=off");
  for (rlock_client* c : {by_option.get(), by_url.get()}) {
    it::Lock lock = it::make_lock(c, name);
    ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
    const rlock_stats st = it::read_stats(c);
    ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK);
    EXPECT_EQ(st.enabled, 0);
    EXPECT_EQ(st.acquires_granted, 0u);
    EXPECT_EQ(st.holds, 0);
    EXPECT_EQ(st.scripts_sent, 0u);
    EXPECT_EQ(st.command_rtt.count, 0u);
  }
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.stats = 7;
  rlock_client* c = nullptr;
  EXPECT_EQ(rlock_client_new(&c, &opts), RLOCK_EINVAL);
  EXPECT_NE(std::string(rlock_last_error()->message).find("stats"), std::string::npos);
  EXPECT_EQ(rlock_client_new_url(&c, (it::server_url() + "?stats=maybe").c_str()), RLOCK_EINVAL);
  EXPECT_NE(std::string(rlock_last_error()->message).find("stats must be on or off"),
            std::string::npos);
}

// Events come in the order things happened, on a library thread, with their fields.
TEST(Events, OrderAndFields) {
  const std::string name = unique_name("events");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  EventLog log;  // outlives the client, whose event thread writes to it
  it::Client client = make_client_with(it::server_url(), 300, RLOCK_STATS_ON);
  rlock_lock_options lo = RLOCK_LOCK_OPTIONS_INIT;
  lo.kind = RLOCK_LOCK_FENCED;
  rlock_lock* raw = nullptr;
  ASSERT_EQ(rlock_lock_new(&raw, client.get(), name.c_str(), &lo), RLOCK_OK);
  it::Lock lock(raw);
  ASSERT_EQ(rlock_client_set_event_callback(client.get(), on_event, &log), RLOCK_OK);

  const int64_t tid = rlock_current_thread_id();
  const std::string owner = it::owner_of(client.get(), tid);
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  int64_t token = 0;
  ao.wait_ms = 0;
  ao.token = &token;
  ASSERT_EQ(rlock_acquire_ex(lock.get(), &ao), RLOCK_OK) << it::last_error();
  sleep_ms(30);
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK);
  ASSERT_EQ(redis.del(name), 1);
  ASSERT_TRUE(log.wait_for_count(4, 3000)) << "got " << log.size() << " events";
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ELOST);

  const std::vector<SeenEvent> seen = log.copy();
  ASSERT_GE(seen.size(), 4u);
  EXPECT_EQ(seen[0].kind, RLOCK_EVENT_ACQUIRED);
  EXPECT_EQ(seen[1].kind, RLOCK_EVENT_RELEASED);
  EXPECT_EQ(seen[2].kind, RLOCK_EVENT_ACQUIRED);
  EXPECT_EQ(seen[3].kind, RLOCK_EVENT_LOST);
  for (const SeenEvent& e : seen) {
    EXPECT_EQ(e.name, name);
    EXPECT_EQ(e.owner, owner);
    EXPECT_EQ(e.thread_id, tid);
    EXPECT_NE(e.on_thread, std::this_thread::get_id()) << "delivered on a library thread";
    EXPECT_GT(e.unix_time_us, int64_t{1700000000} * 1000000);
  }
  EXPECT_EQ(seen[0].token, token);
  EXPECT_GT(seen[0].token, 0);
  EXPECT_GE(seen[0].duration_us, 0);
  EXPECT_GE(seen[1].duration_us, 30000) << "held for the 30 ms slept";
  EXPECT_GT(seen[2].token, seen[0].token);
  EXPECT_EQ(seen[3].reason, RLOCK_LOST_GONE);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GE(seen[i].unix_time_us, seen[i - 1].unix_time_us);
  }

  // Cleared: no more events.
  ASSERT_EQ(rlock_client_set_event_callback(client.get(), nullptr, nullptr), RLOCK_OK);
  const size_t count = log.size();
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK);
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK);
  sleep_ms(100);
  EXPECT_EQ(log.size(), count);
}

// A renewal that gets no answer is an event with its code; the client may be freed from inside
// the callback.
TEST(Events, RenewalFailedAndFreeFromTheCallback) {
  const std::string name = unique_name("events-renew");
  PrivateRedis server({"--enable-debug-command", "yes"});  // it is made to sleep
  EventLog log;  // outlives the client, whose event thread writes to it
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  const std::string url = server.tcp_url();
  opts.url = url.c_str();
  opts.watchdog_lease_ms = 600;
  opts.command_timeout_ms = 100;
  rlock_client* raw = nullptr;
  ASSERT_EQ(rlock_client_new(&raw, &opts), RLOCK_OK) << it::last_error();
  it::Client client(raw);
  it::Lock lock = it::make_lock(client.get(), name);
  ASSERT_EQ(rlock_client_set_event_callback(client.get(), on_event, &log), RLOCK_OK);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  // The server sleeps through the next renewals (every 200 ms, each given 100 ms).
  std::thread sleeper([&] {
    RedisConn admin(server.admin_url());
    admin.command({"DEBUG", "SLEEP", "0.5"});
  });
  ASSERT_TRUE(wait_for(
      [&] {
        for (const SeenEvent& e : log.copy()) {
          if (e.kind == RLOCK_EVENT_RENEWAL_FAILED) return true;
        }
        return false;
      },
      3000));
  sleeper.join();
  for (const SeenEvent& e : log.copy()) {
    if (e.kind != RLOCK_EVENT_RENEWAL_FAILED) continue;
    EXPECT_EQ(e.reason, RLOCK_ECONN);
    EXPECT_EQ(e.name, name);
    EXPECT_FALSE(e.detail.empty());
    break;
  }
  EXPECT_GE(it::read_stats(client.get()).renewals_failed, 1u);
  rlock_release(lock.get());
}

namespace {

struct FreeOnEvent {
  rlock_client* client = nullptr;
  std::atomic<bool> freed{false};
};

void free_client_on_event(const rlock_event*, void* payload) {
  FreeOnEvent* f = static_cast<FreeOnEvent*>(payload);
  if (!f->freed.exchange(true)) rlock_client_free(f->client);
}

}  // namespace

TEST(Events, CallbackMayFreeTheClient) {
  const std::string name = unique_name("events-free");
  LockKeys cleanup(name);
  FreeOnEvent f;
  ASSERT_EQ(rlock_client_new_url(&f.client, it::server_url().c_str()), RLOCK_OK);
  rlock_lock* raw = nullptr;
  ASSERT_EQ(rlock_lock_new(&raw, f.client, name.c_str(), nullptr), RLOCK_OK);
  it::Lock lock(raw);
  ASSERT_EQ(rlock_client_set_event_callback(f.client, free_client_on_event, &f), RLOCK_OK);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK);
  ASSERT_TRUE(wait_for([&] { return f.freed.load(); }, 3000));
  // The client is closed: its hold was released at close, and the handle says so.
  RedisConn redis(test_redis_url());
  ASSERT_TRUE(wait_for([&] { return !redis.exists(name); }, 3000));
  EXPECT_EQ(rlock_acquire(lock.get(), 0), RLOCK_ECLOSED);
}
