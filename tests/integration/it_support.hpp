// Helpers for the integration tests: owning pointers for the C handles and short ways to make
// clients and locks. Helpers throw std::runtime_error on unexpected failures; GoogleTest reports
// that as a failed test with the message.
#pragma once

#include <rlock/rlock.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "test_process.hpp"
#include "test_redis.hpp"

namespace it {

struct ClientFree {
  void operator()(rlock_client* c) const { rlock_client_free(c); }
};
struct LockFree {
  void operator()(rlock_lock* l) const { rlock_lock_free(l); }
};
struct TokenFree {
  void operator()(rlock_cancel_token* t) const { rlock_cancel_token_free(t); }
};
struct SemaphoreFree {
  void operator()(rlock_semaphore* s) const { rlock_semaphore_free(s); }
};
struct LatchFree {
  void operator()(rlock_latch* l) const { rlock_latch_free(l); }
};
using Client = std::unique_ptr<rlock_client, ClientFree>;
using Lock = std::unique_ptr<rlock_lock, LockFree>;
using Token = std::unique_ptr<rlock_cancel_token, TokenFree>;
using Semaphore = std::unique_ptr<rlock_semaphore, SemaphoreFree>;
using Latch = std::unique_ptr<rlock_latch, LatchFree>;

// "code (name): message" of the calling thread's last failure.
inline std::string last_error() {
  const rlock_error_info* e = rlock_last_error();
  return std::to_string(e->code) + " (" + rlock_strerror(e->code) + "): " + e->message;
}

struct ClientSettings {
  int64_t watchdog_lease_ms = 0;  // 0 = library default
  int64_t poll_cap_ms = 0;
  int pool_size = 0;
};

inline Client make_client(const std::string& url, const ClientSettings& s = {}) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.watchdog_lease_ms = s.watchdog_lease_ms;
  opts.poll_cap_ms = s.poll_cap_ms;
  opts.pool_size = s.pool_size;
  rlock_client* c = nullptr;
  if (rlock_client_new(&c, &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_client_new(" + url + ") failed: " + last_error());
  }
  return Client(c);
}

// Library clients of the shared server connect over TCP, the usual deployment; unix sockets have
// their own cases (UnixSocket.*), so a transport problem fails one group, not every case.
inline std::string server_url() { return rlock_test::test_redis_tcp_url(); }

inline Client make_client(const ClientSettings& s = {}) { return make_client(server_url(), s); }

// A lock with a binary-safe name; lease_ms 0 = the library default (watchdog).
inline Lock make_lock(rlock_client* client, const std::string& name, int64_t lease_ms = 0) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  if (lease_ms != 0) opts.lease_ms = lease_ms;
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n failed: " + last_error());
  }
  return Lock(l);
}

inline Token make_token() {
  rlock_cancel_token* t = nullptr;
  if (rlock_cancel_token_new(&t) != RLOCK_OK) {
    throw std::runtime_error("rlock_cancel_token_new failed: " + last_error());
  }
  return Token(t);
}

// One acquire with every option spelled out.
inline int acquire(rlock_lock* lock, int64_t wait_ms, int64_t lease_ms = 0, int64_t thread_id = 0,
                   rlock_cancel_token* cancel = nullptr) {
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  return rlock_acquire_ex(lock, &opts);
}

struct State {
  bool locked = false;
  int64_t hold_count = 0;
  int64_t ttl_ms = 0;
  int64_t owner_count = 0;
  std::string owner;
  int64_t owner_hold_count = 0;
};

inline State query(rlock_lock* lock, int64_t thread_id = RLOCK_THREAD_CURRENT) {
  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  if (rlock_query_for(&st, lock, thread_id) != RLOCK_OK) {
    throw std::runtime_error("rlock_query failed: " + last_error());
  }
  State out;
  out.locked = st.locked != 0;
  out.hold_count = st.hold_count;
  out.ttl_ms = st.ttl_ms;
  out.owner_count = st.owner_count;
  if (st.owner != nullptr) out.owner.assign(st.owner, st.owner_len);
  out.owner_hold_count = st.owner_hold_count;
  return out;
}

// The hash field of an owner: "<client-id>:<thread-id>".
inline std::string owner_of(rlock_client* client, int64_t thread_id) {
  return std::string(rlock_client_id(client)) + ":" + std::to_string(thread_id);
}

// The client's statistics (rlock_client_stats at this library's version); throws on failure.
inline rlock_stats read_stats(rlock_client* client) {
  rlock_stats st;
  std::memset(&st, 0, sizeof st);
  st.version = RLOCK_STATS_VERSION;
  if (rlock_client_stats(&st, client) != RLOCK_OK) {
    throw std::runtime_error("rlock_client_stats failed: " + last_error());
  }
  return st;
}

// Runs SCRIPT FLUSH on the server every 2 ms from a thread of its own until destroyed, so that
// calls made meanwhile keep meeting NOSCRIPT.
class ScriptFlusher {
 public:
  explicit ScriptFlusher(const std::string& url)
      : thread_([this, url] {
          rlock_test::RedisConn conn(url);
          while (!stop_.load()) {
            conn.ok({"SCRIPT", "FLUSH"});
            ++flushes_;
            rlock_test::sleep_ms(2);
          }
        }) {}
  ScriptFlusher(const ScriptFlusher&) = delete;
  ScriptFlusher& operator=(const ScriptFlusher&) = delete;
  ~ScriptFlusher() { stop(); }

  // Stops the flushing and returns how many flushes ran.
  int stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return flushes_.load();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> flushes_{0};
  std::thread thread_;
};

}  // namespace it
