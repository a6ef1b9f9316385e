// The bad-input table of the C ABI, against the fixture redis-server: every misuse returns its
// status code with a message naming the problem, never crashes, and invalid arguments are
// refused before anything is sent to Redis. Binary and brace-laden names work byte for byte.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rlock/rlock.h"
#include "test_redis.hpp"

namespace {

using rlock_test::lock_channel;
using rlock_test::RedisConn;
using rlock_test::Reply;
using rlock_test::unique_name;
using Clock = std::chrono::steady_clock;

constexpr int64_t kMax = RLOCK_MAX_DURATION_MS;

std::string last_message() {
  const rlock_error_info* e = rlock_last_error();
  if (e == nullptr) return "<rlock_last_error() is NULL>";
  return e->message == nullptr ? "<NULL message>" : e->message;
}

int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// Leaves a last error whose code differs from `code`, so a call that fails without recording
// an error of its own cannot pass on a stale one.
void prime_last_error(int code) {
  if (code == RLOCK_EVERSION) {
    rlock_lock_options_init(nullptr, RLOCK_LOCK_OPTIONS_VERSION);  // EINVAL
  } else {
    rlock_lock_options o;
    rlock_lock_options_init(&o, 0);  // EVERSION
  }
}

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `needle` occurs in `text` as a whole word where it starts or ends with a word character, so
// "out" does not match inside "timeout".
bool names(const std::string& text, const std::string& needle) {
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    bool left = at == 0 || !ident_char(needle.front()) || !ident_char(text[at - 1]);
    size_t end = at + needle.size();
    bool right = end == text.size() || !ident_char(needle.back()) || !ident_char(text[end]);
    if (left && right) return true;
  }
  return false;
}

void check_failure(int rc, int code, const std::string& needle, const char* expr, const char* file,
                   int line) {
  const rlock_error_info* e = rlock_last_error();
  if (rc != code) {
    ADD_FAILURE_AT(file, line) << expr << " returned " << rc << " (" << rlock_strerror(rc)
                               << "), expected " << code << " (" << rlock_strerror(code)
                               << "); last error: " << last_message();
    return;
  }
  if (e == nullptr) {
    ADD_FAILURE_AT(file, line) << expr << ": rlock_last_error() returned NULL";
    return;
  }
  if (e->code != code) {
    ADD_FAILURE_AT(file, line) << expr << ": rlock_last_error()->code is " << e->code
                               << ", expected " << code;
  }
  if (e->message == nullptr || e->message[0] == '\0') {
    ADD_FAILURE_AT(file, line) << expr << ": rlock_last_error()->message is NULL or empty";
    return;
  }
  if (!needle.empty() && !names(e->message, needle)) {
    ADD_FAILURE_AT(file, line) << expr << ": the message does not name \"" << needle
                               << "\": " << e->message;
  }
}

// EXPECT_FAIL(call, code, needle): the call returns `code`, and rlock_last_error() has that
// code and a non-empty message naming `needle`.
#define EXPECT_FAIL(expr, code, needle)                              \
  do {                                                               \
    prime_last_error(code);                                          \
    int rc_ = (expr);                                                \
    check_failure(rc_, (code), (needle), #expr, __FILE__, __LINE__); \
  } while (0)

// A TCP port on 127.0.0.1 that refuses connections: bound (so nobody else gets it) but not
// listening.
class ClosedPort {
 public:
  ClosedPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~ClosedPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

template <class T>
T* sentinel() {
  static char storage[16];
  return reinterpret_cast<T*>(storage);
}

class CapiBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    // The fixture's URLs; a missing one throws, which fails the test here.
    unix_url_ = rlock_test::test_redis_url();
    ASSERT_EQ(unix_url_.compare(0, 7, "unix://"), 0)
        << "RLOCK_TEST_REDIS_URL is not a unix:// URL: " << unix_url_;
    tcp_url_ = rlock_test::test_redis_tcp_url();
    tcp_port_ = rlock_test::test_redis_tcp_port();
    redis_ = std::make_unique<RedisConn>(unix_url_);
    // TCP: the table is about arguments, not transports; UnixSocketClientRunsCommands covers
    // the unix socket on its own.
    ASSERT_EQ(rlock_client_new_url(&client_, tcp_url_.c_str()), RLOCK_OK) << last_message();
  }

  void TearDown() override {
    for (rlock_lock* l : locks_) rlock_lock_free(l);
    for (rlock_client* c : clients_) rlock_client_free(c);
    rlock_client_free(client_);
    if (redis_) {
      for (const std::string& n : names_) redis_->delete_lock_keys(n);
      for (const std::string& u : users_) redis_->command({"ACL", "DELUSER", u});
    }
  }

  // A lock on `client` (the default client when NULL), freed at the end of the test.
  rlock_lock* make_lock(const std::string& name, const rlock_lock_options* opts = nullptr,
                        rlock_client* client = nullptr) {
    rlock_lock* lock = nullptr;
    int rc = rlock_lock_new_n(&lock, client ? client : client_, name.data(), name.size(), opts);
    EXPECT_EQ(rc, RLOCK_OK) << last_message();
    if (lock != nullptr) locks_.push_back(lock);
    names_.push_back(name);
    return lock;
  }

  rlock_client* make_client(rlock_client_options opts) {
    rlock_client* c = nullptr;
    EXPECT_EQ(rlock_client_new(&c, &opts), RLOCK_OK) << last_message();
    if (c != nullptr) clients_.push_back(c);
    return c;
  }

  rlock_client_options server_options() {
    rlock_client_options o = RLOCK_CLIENT_OPTIONS_INIT;
    o.host = "127.0.0.1";
    o.port = tcp_port_;
    return o;
  }

  // An ACL user allowed everything except what is listed in `denied` (e.g. "-evalsha").
  void make_user(const std::string& user, const std::string& password,
                 const std::vector<std::string>& denied = {}) {
    std::vector<std::string> rules = {"reset", "on", ">" + password, "~*", "&*", "+@all"};
    rules.insert(rules.end(), denied.begin(), denied.end());
    Reply r = redis_->acl_setuser(user, rules);
    ASSERT_TRUE(r.is_status()) << "ACL SETUSER: " << r.describe();
    users_.push_back(user);
  }

  // The commands of `user` that Redis refused and logged in ACL LOG (object names, one per
  // refusal).
  std::vector<std::string> acl_denials(const std::string& user) {
    std::vector<std::string> out;
    Reply log = redis_->command({"ACL", "LOG", "1000"});
    EXPECT_TRUE(log.is_array()) << log.describe();
    for (const Reply& entry : log.elements) {
      std::string who, object;
      long long count = 1;  // repeats of one refusal are folded into one entry with a count
      for (size_t i = 0; i + 1 < entry.elements.size(); i += 2) {
        const std::string& field = entry.elements[i].str;
        if (field == "username") who = entry.elements[i + 1].str;
        if (field == "object") object = entry.elements[i + 1].str;
        if (field == "count") count = entry.elements[i + 1].integer;
      }
      if (who == user) out.insert(out.end(), static_cast<size_t>(std::max(count, 1LL)), object);
    }
    return out;
  }

  // A client authenticated as a user who may run scripts (the creation probes, which name no
  // key) but may touch no key, which every lock command names: any lock command that reached
  // Redis would be refused and recorded in ACL LOG under that user, so an empty log for the user
  // proves the calls under test were never sent (without MONITOR, whatever other tests do on the
  // shared server). expect_nothing_sent() checks the log.
  rlock_client* no_script_client(std::string* user_out, size_t max_name_len = 0) {
    static int n = 0;
    const std::string user =
        "rlock-capi-noscript-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
    const std::string password = "pw-" + std::to_string(::getpid());
    make_user(user, password, {"resetkeys", "-fcall", "-fcall_ro", "-script"});
    rlock_client_options o = server_options();
    o.username = user.c_str();
    o.password = password.c_str();
    o.max_name_len = max_name_len;
    rlock_client* c = make_client(o);
    EXPECT_TRUE(acl_denials(user).empty());
    *user_out = user;
    return c;
  }

  void expect_nothing_sent(const std::string& user) {
    std::vector<std::string> denied = acl_denials(user);
    EXPECT_TRUE(denied.empty()) << denied.size()
                                << " command(s) reached Redis, the first: " << denied.front();
  }

  // The control for no_script_client(): a valid acquire does reach Redis, is refused
  // (ENOPERM) and logged, so an empty log above meant something.
  void expect_control_is_logged(rlock_lock* lock, const std::string& user) {
    EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_ENOPERM, "");
    std::vector<std::string> denied = acl_denials(user);
    ASSERT_FALSE(denied.empty()) << "ACL LOG did not record the refused script: the check "
                                    "before proves nothing";
  }

  std::string owner_of_this_thread() {
    return std::string(rlock_client_id(client_)) + ":" + std::to_string(rlock_current_thread_id());
  }

  // Acquires, queries and releases `name`, checking the bytes of the key in Redis, and that a
  // waiter is woken through the lock's channel (polling is made too slow to hide a miss).
  void exercise_name(const std::string& name);

  std::string unix_url_;  // the fixture server: unix:///.../redis.sock
  std::string tcp_url_;   // redis://127.0.0.1:PORT
  int tcp_port_ = 0;
  std::unique_ptr<RedisConn> redis_;  // looks at keys byte for byte, manages ACL users
  rlock_client* client_ = nullptr;
  std::vector<rlock_client*> clients_;
  std::vector<rlock_lock*> locks_;
  std::vector<std::string> names_;
  std::vector<std::string> users_;
};

void CapiBadInput::exercise_name(const std::string& name) {
  SCOPED_TRACE("lock name of " + std::to_string(name.size()) + " bytes");
  rlock_lock* lock = make_lock(name);
  ASSERT_NE(lock, nullptr);
  ASSERT_FALSE(redis_->exists(name));
  ASSERT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  EXPECT_EQ(rlock_is_held(lock), 1);

  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  ASSERT_EQ(rlock_query_for(&st, lock, RLOCK_THREAD_CURRENT), RLOCK_OK) << last_message();
  EXPECT_EQ(st.locked, 1);
  EXPECT_EQ(st.held_by_me, 1);
  EXPECT_EQ(st.hold_count, 1);
  EXPECT_EQ(st.owner_count, 1);
  EXPECT_GT(st.ttl_ms, 0);
  ASSERT_NE(st.owner, nullptr);
  EXPECT_EQ(std::string(st.owner, st.owner_len), owner_of_this_thread());

  // The key has exactly the name's bytes: a hash with our owner field.
  EXPECT_TRUE(redis_->exists(name));
  EXPECT_EQ(redis_->command({"TYPE", name}).str, "hash");
  EXPECT_EQ(redis_->hgetall(name),
            (std::map<std::string, std::string>{{owner_of_this_thread(), "1"}}));
  if (size_t nul = name.find('\0'); nul != std::string::npos) {
    EXPECT_FALSE(redis_->exists(name.substr(0, nul))) << "the name was cut at its NUL byte";
  }

  // Another owner waits; the release must wake it through the channel of this name.
  rlock_client_options o = server_options();
  o.poll_cap_ms = 60000;
  rlock_client* other = make_client(o);
  ASSERT_NE(other, nullptr);
  rlock_lock* waiter_lock = make_lock(name, nullptr, other);
  ASSERT_NE(waiter_lock, nullptr);
  std::atomic<int> waiter_rc{1};
  std::thread waiter([&] {
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.wait_ms = 20000;
    ao.thread_id = 4242;
    waiter_rc = rlock_acquire_ex(waiter_lock, &ao);
  });
  EXPECT_TRUE(redis_->wait_numsub(lock_channel(name), 1, 5000))
      << "nobody subscribed to the expected channel " << lock_channel(name).size() << " bytes";
  auto released = Clock::now();
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();
  waiter.join();
  EXPECT_EQ(waiter_rc.load(), RLOCK_OK);
  EXPECT_LT(ms_since(released), 5000) << "the waiter was not woken by the release";
  EXPECT_EQ(
      redis_->hgetall(name),
      (std::map<std::string, std::string>{{std::string(rlock_client_id(other)) + ":4242", "1"}}));
  EXPECT_EQ(rlock_release_for(waiter_lock, 4242), RLOCK_OK) << last_message();
  EXPECT_FALSE(redis_->exists(name));
}

// ---- transports -------------------------------------------------------------------------------

// The fixture's own URL (RLOCK_TEST_REDIS_URL, a unix socket) runs commands, not only connects.
TEST_F(CapiBadInput, UnixSocketClientRunsCommands) {
  rlock_client* c = nullptr;
  ASSERT_EQ(rlock_client_new_url(&c, unix_url_.c_str()), RLOCK_OK) << last_message();
  clients_.push_back(c);
  const std::string name = unique_name("unix");
  rlock_lock* lock = make_lock(name, nullptr, c);
  ASSERT_NE(lock, nullptr);
  EXPECT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  EXPECT_TRUE(redis_->exists(name));
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();
  EXPECT_FALSE(redis_->exists(name));
}

// ---- NULL pointers ----------------------------------------------------------------------------

TEST_F(CapiBadInput, H9_NullOutPointersAreEinval) {
  rlock_lock* lock = make_lock(unique_name("null-out"));
  ASSERT_NE(lock, nullptr);
  EXPECT_FAIL(rlock_client_new(nullptr, nullptr), RLOCK_EINVAL, "out");
  EXPECT_FAIL(rlock_client_new_url(nullptr, unix_url_.c_str()), RLOCK_EINVAL, "out");
  EXPECT_FAIL(rlock_lock_new(nullptr, client_, "x", nullptr), RLOCK_EINVAL, "out");
  EXPECT_FAIL(rlock_lock_new_n(nullptr, client_, "x", 1, nullptr), RLOCK_EINVAL, "out");
  EXPECT_FAIL(rlock_cancel_token_new(nullptr), RLOCK_EINVAL, "out");
  EXPECT_FAIL(rlock_query_for(nullptr, lock, RLOCK_THREAD_CURRENT), RLOCK_EINVAL, "out");
  EXPECT_FAIL(rlock_client_options_init(nullptr, RLOCK_CLIENT_OPTIONS_VERSION), RLOCK_EINVAL,
              "opts");
  EXPECT_FAIL(rlock_lock_options_init(nullptr, RLOCK_LOCK_OPTIONS_VERSION), RLOCK_EINVAL, "opts");
  EXPECT_FAIL(rlock_acquire_options_init(nullptr, RLOCK_ACQUIRE_OPTIONS_VERSION), RLOCK_EINVAL,
              "opts");
  // out_deleted is optional.
  EXPECT_EQ(rlock_force_unlock(nullptr, lock), RLOCK_OK) << last_message();
}

TEST_F(CapiBadInput, H9_NullHandlesAreEinvalNamingTheArgument) {
  rlock_lock* out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new(&out, nullptr, "x", nullptr), RLOCK_EINVAL, "client");
  EXPECT_EQ(out, nullptr);
  out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new(&out, client_, nullptr, nullptr), RLOCK_EINVAL, "name");
  EXPECT_EQ(out, nullptr);
  out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new_n(&out, client_, nullptr, 3, nullptr), RLOCK_EINVAL, "name");
  EXPECT_EQ(out, nullptr);
  out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new_n(&out, nullptr, "abc", 3, nullptr), RLOCK_EINVAL, "client");
  EXPECT_EQ(out, nullptr);

  rlock_client* client = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new_url(&client, nullptr), RLOCK_EINVAL, "url");
  EXPECT_EQ(client, nullptr);

  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = 0;
  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  int deleted = 7;
  EXPECT_FAIL(rlock_acquire(nullptr, 0), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_acquire_ex(nullptr, &ao), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_acquire_ex(nullptr, nullptr), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_release(nullptr), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_release_for(nullptr, 1), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_extend(nullptr, 1000), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_extend_for(nullptr, 1, 1000), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_extend_by_for(nullptr, 1, 1000), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_client_watch_key_events(nullptr, RLOCK_KEY_EXPIRED), RLOCK_EINVAL, "client");
  EXPECT_FAIL(rlock_force_unlock(&deleted, nullptr), RLOCK_EINVAL, "lock");
  EXPECT_EQ(deleted, 7);
  EXPECT_FAIL(rlock_cancel(nullptr), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_query_for(&st, nullptr, RLOCK_THREAD_CURRENT), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_lock_set_lost_callback(nullptr, nullptr, nullptr), RLOCK_EINVAL, "lock");
  EXPECT_FAIL(rlock_cancel_token_cancel(nullptr), RLOCK_EINVAL, "token");

  // The status functions that cannot fail answer "no" for NULL.
  EXPECT_EQ(rlock_is_held(nullptr), 0);
  EXPECT_EQ(rlock_is_held_for(nullptr, 1), 0);
  EXPECT_EQ(rlock_is_lost_for(nullptr, 0), 0);
  EXPECT_EQ(rlock_client_id(nullptr), nullptr);
  EXPECT_EQ(rlock_cancel_token_is_cancelled(nullptr), 0);
  rlock_lock_free(nullptr);
  rlock_client_free(nullptr);
  rlock_cancel_token_free(nullptr);
}

// ---- names ------------------------------------------------------------------------------------

TEST_F(CapiBadInput, H1_EmptyNameIsEinval) {
  rlock_lock* out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new(&out, client_, "", nullptr), RLOCK_EINVAL, "name");
  EXPECT_EQ(out, nullptr);
  out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new_n(&out, client_, "abc", 0, nullptr), RLOCK_EINVAL, "name");
  EXPECT_EQ(out, nullptr);
}

TEST_F(CapiBadInput, H2_NameLongerThanMaxNameLenIsEinval) {
  rlock_client_options o = server_options();
  o.max_name_len = 40;
  rlock_client* small = make_client(o);
  ASSERT_NE(small, nullptr);
  const std::string fits = unique_name("len") + std::string(40, 'x');
  const std::string exact = fits.substr(0, 40);
  const std::string over = fits.substr(0, 41);
  names_.push_back(exact);

  rlock_lock* out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new_n(&out, small, over.data(), over.size(), nullptr), RLOCK_EINVAL,
              "max_name_len");
  EXPECT_EQ(out, nullptr);
  EXPECT_FAIL(rlock_lock_new(&out, small, over.c_str(), nullptr), RLOCK_EINVAL, "max_name_len");
  EXPECT_NE(std::string(last_message()).find("41"), std::string::npos) << last_message();

  rlock_lock* lock = make_lock(exact, nullptr, small);
  ASSERT_NE(lock, nullptr);
  EXPECT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  EXPECT_TRUE(redis_->exists(exact));
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();

  // The default limit, RLOCK_DEFAULT_MAX_NAME_LEN, is inclusive.
  std::string big = unique_name("default-limit");
  big.resize(RLOCK_DEFAULT_MAX_NAME_LEN, 'y');
  std::string too_big = big + "z";
  EXPECT_FAIL(rlock_lock_new_n(&out, client_, too_big.data(), too_big.size(), nullptr),
              RLOCK_EINVAL, "max_name_len");
  const std::string mib(1 << 20, 'm');  // 1 MiB: refused before anything is made or sent
  EXPECT_FAIL(rlock_lock_new_n(&out, client_, mib.data(), mib.size(), nullptr), RLOCK_EINVAL,
              "max_name_len");
  EXPECT_EQ(out, nullptr);
  rlock_lock* big_lock = make_lock(big);
  ASSERT_NE(big_lock, nullptr);
  EXPECT_EQ(rlock_acquire(big_lock, 0), RLOCK_OK) << last_message();
  EXPECT_TRUE(redis_->exists(big));
  EXPECT_EQ(rlock_release(big_lock), RLOCK_OK) << last_message();
}

TEST_F(CapiBadInput, H2_MaxNameLenAboveTheHardLimitIsEinval) {
  rlock_client_options o = server_options();
  o.max_name_len = RLOCK_HARD_MAX_NAME_LEN + 1;
  rlock_client* c = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new(&c, &o), RLOCK_EINVAL, "max_name_len");
  EXPECT_EQ(c, nullptr);
  o.max_name_len = RLOCK_HARD_MAX_NAME_LEN;
  EXPECT_NE(make_client(o), nullptr);
}

TEST_F(CapiBadInput, H3_BinaryNameWithNulBytesAndInvalidUtf8) {
  exercise_name(unique_name(std::string("bin\0ary\xff\xfe\xc3\x28", 11)));
  exercise_name(std::string("\0\x80\xbf", 3) + unique_name("lead-nul"));
}

TEST_F(CapiBadInput, H4_NamesWithBraces) {
  exercise_name(unique_name("a}b{c"));
  exercise_name("{" + unique_name("tag") + "}:x");
  exercise_name(unique_name("}"));
}

// ---- durations, thread ids, versions: refused before any I/O ------------------------------------

// The client authenticates as a user who may run scripts (the creation probes, which name no
// key) but may touch no key, which every lock command names. Any lock command that reached Redis
// would be refused and recorded in ACL LOG under that user, so an empty log for the user proves the
// invalid calls were never sent (without MONITOR, and whatever other tests do on the shared
// server). The last call is the control: a valid acquire, refused and logged.
TEST_F(CapiBadInput, H5_H6_H7_InvalidDurationsAndThreadIdsAreNeverSentToRedis) {
  const std::string user = "rlock-capi-noscript-" + std::to_string(::getpid());
  const std::string password = "pw-" + std::to_string(::getpid());
  make_user(user, password, {"resetkeys", "-fcall", "-fcall_ro", "-script"});
  rlock_client_options o = server_options();
  o.username = user.c_str();
  o.password = password.c_str();
  o.max_name_len = 64;
  rlock_client* c = make_client(o);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(acl_denials(user).empty());

  rlock_lock_options lo = RLOCK_LOCK_OPTIONS_INIT;
  lo.lease_ms = 5000;
  const std::string name = unique_name("no-io");
  rlock_lock* lock = make_lock(name, &lo, c);
  ASSERT_NE(lock, nullptr);

  // Lock options: a bad default lease.
  rlock_lock* out = sentinel<rlock_lock>();
  for (int64_t bad : {int64_t{-5}, int64_t{-2}, kMax + 1, int64_t{INT64_MAX}, int64_t{INT64_MIN}}) {
    rlock_lock_options bad_lo = RLOCK_LOCK_OPTIONS_INIT;
    bad_lo.lease_ms = bad;
    EXPECT_FAIL(rlock_lock_new(&out, c, name.c_str(), &bad_lo), RLOCK_EINVAL, "lease_ms");
    EXPECT_EQ(out, nullptr);
  }
  // Names longer than the client's max_name_len.
  const std::string long_name(65, 'n');
  EXPECT_FAIL(rlock_lock_new_n(&out, c, long_name.data(), long_name.size(), nullptr), RLOCK_EINVAL,
              "max_name_len");
  // Key event kinds beyond expired (1) and deleted (2).
  for (int bad : {4, -1, 7, 1 << 20}) {
    EXPECT_FAIL(rlock_client_watch_key_events(c, bad), RLOCK_EINVAL, "key event kinds");
  }

  // Acquire: lease.
  for (int64_t bad : {int64_t{-5}, int64_t{-2}, kMax + 1, int64_t{INT64_MAX}, int64_t{INT64_MIN}}) {
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.wait_ms = 0;
    ao.lease_ms = bad;
    EXPECT_FAIL(rlock_acquire_ex(lock, &ao), RLOCK_EINVAL, "lease_ms");
  }
  // Acquire: wait.
  for (int64_t bad :
       {int64_t{-2}, int64_t{-100}, kMax + 1, int64_t{INT64_MAX}, int64_t{INT64_MIN}}) {
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.wait_ms = bad;
    EXPECT_FAIL(rlock_acquire_ex(lock, &ao), RLOCK_EINVAL, "wait_ms");
    EXPECT_FAIL(rlock_acquire(lock, bad), RLOCK_EINVAL, "wait_ms");
  }
  // Thread ids.
  for (int64_t bad : {int64_t{-1}, int64_t{-77}, int64_t{INT64_MIN}}) {
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.wait_ms = 0;
    ao.thread_id = bad;
    EXPECT_FAIL(rlock_acquire_ex(lock, &ao), RLOCK_EINVAL, "thread_id");
    EXPECT_FAIL(rlock_release_for(lock, bad), RLOCK_EINVAL, "thread_id");
    EXPECT_FAIL(rlock_extend_for(lock, bad, 1000), RLOCK_EINVAL, "thread_id");
    EXPECT_FAIL(rlock_extend_by_for(lock, bad, 1000), RLOCK_EINVAL, "thread_id");
    rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
    EXPECT_FAIL(rlock_query_for(&st, lock, bad), RLOCK_EINVAL, "thread_id");
    EXPECT_EQ(rlock_is_held_for(lock, bad), 0);
    EXPECT_EQ(rlock_is_lost_for(lock, bad), 0);
  }
  // Extend: 0, negative (-1 means nothing here) and too large leases.
  for (int64_t bad : {int64_t{0}, int64_t{-5}, int64_t{-1}, kMax + 1, int64_t{INT64_MAX}}) {
    EXPECT_FAIL(rlock_extend(lock, bad), RLOCK_EINVAL, "lease_ms");
    EXPECT_FAIL(rlock_extend_for(lock, 5, bad), RLOCK_EINVAL, "lease_ms");
    EXPECT_FAIL(rlock_extend_by_for(lock, 5, bad), RLOCK_EINVAL, "add_ms");
  }
  // Unknown struct versions.
  for (unsigned int version : {0u, RLOCK_ACQUIRE_OPTIONS_VERSION + 1u, 99u}) {
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.version = version;
    ao.wait_ms = 0;
    EXPECT_FAIL(rlock_acquire_ex(lock, &ao), RLOCK_EVERSION, "rlock_acquire_options");
    rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
    st.version = version;
    EXPECT_FAIL(rlock_query_for(&st, lock, RLOCK_THREAD_CURRENT), RLOCK_EVERSION,
                "rlock_lock_state");
  }

  std::vector<std::string> denied = acl_denials(user);
  EXPECT_TRUE(denied.empty()) << denied.size()
                              << " command(s) reached Redis, the first: " << denied.front();
  EXPECT_EQ(rlock_is_held(lock), 0);

  // Control: a valid acquire does reach Redis, is refused (ENOPERM) and logged.
  EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_ENOPERM, "");
  denied = acl_denials(user);
  ASSERT_FALSE(denied.empty()) << "ACL LOG did not record the refused script: the check above "
                                  "proves nothing";
  EXPECT_EQ(denied.front(), name) << "the refused key should be the lock's";
  EXPECT_FALSE(redis_->exists(name));
}

// lease_ms 0 in acquire options means the lock's default lease (documented), not "unlock now".
TEST_F(CapiBadInput, H5_AcquireLeaseZeroMeansTheLocksDefault) {
  rlock_lock_options lo = RLOCK_LOCK_OPTIONS_INIT;
  lo.lease_ms = 4000;
  const std::string name = unique_name("lease-default");
  rlock_lock* lock = make_lock(name, &lo);
  ASSERT_NE(lock, nullptr);
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = 0;
  ao.lease_ms = 0;
  ASSERT_EQ(rlock_acquire_ex(lock, &ao), RLOCK_OK) << last_message();
  long long ttl = redis_->pttl(name);
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 4000);
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();

  // A lock option of 0 means the default too: the watchdog lease (30 s by default).
  rlock_lock_options zero = RLOCK_LOCK_OPTIONS_INIT;
  zero.lease_ms = 0;
  const std::string name2 = unique_name("lease-watchdog");
  rlock_lock* lock2 = make_lock(name2, &zero);
  ASSERT_NE(lock2, nullptr);
  ASSERT_EQ(rlock_acquire(lock2, 0), RLOCK_OK) << last_message();
  EXPECT_GT(redis_->pttl(name2), 20000);
  EXPECT_EQ(rlock_release(lock2), RLOCK_OK) << last_message();
}

// RLOCK_MAX_DURATION_MS itself is accepted everywhere ("larger values are EINVAL"), and a hold
// taken with it is held, not lost at once.
TEST_F(CapiBadInput, H6_MaxDurationIsAcceptedAndHeld) {
  const std::string name = unique_name("max-duration");
  rlock_lock* lock = make_lock(name);
  ASSERT_NE(lock, nullptr);

  // Try once first: with a broken connection the endless wait below would retry forever.
  ASSERT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  ASSERT_EQ(rlock_release(lock), RLOCK_OK) << last_message();

  // The longest wait on a free lock acquires at once.
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = kMax;
  ao.lease_ms = 10000;
  auto start = Clock::now();
  ASSERT_EQ(rlock_acquire_ex(lock, &ao), RLOCK_OK) << last_message();
  EXPECT_LT(ms_since(start), 2000);
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();

  // Long leases up to the longest. The local validity deadline of such a hold is far in the
  // future; it must not overflow into the past (the hold would be "lost" at once).
  for (int64_t lease : {int64_t{10000000000000}, int64_t{1000000000000000}, kMax}) {
    SCOPED_TRACE("lease_ms " + std::to_string(lease));
    ao.wait_ms = 0;
    ao.lease_ms = lease;
    ASSERT_EQ(rlock_acquire_ex(lock, &ao), RLOCK_OK) << last_message();
    EXPECT_GT(redis_->pttl(name), lease - 3600 * 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(rlock_is_held(lock), 1) << "a hold with a long lease is not held locally";
    EXPECT_EQ(rlock_is_lost_for(lock, RLOCK_THREAD_CURRENT), 0)
        << "a hold with a long lease was declared lost";
    EXPECT_EQ(rlock_extend(lock, lease), RLOCK_OK) << last_message();
    EXPECT_EQ(rlock_is_held(lock), 1) << "not held after extending to a long lease";
    EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();
    EXPECT_FALSE(redis_->exists(name));
  }
}

// ---- client construction ----------------------------------------------------------------------

TEST_F(CapiBadInput, H11_InvalidUrlsAreEinvalNamingTheField) {
  struct Case {
    std::string url;
    int code;
    const char* names;
  };
  const std::vector<Case> cases = {
      {"localhost:6379", RLOCK_EINVAL, "scheme"},
      {"http://127.0.0.1:6379", RLOCK_EINVAL, "scheme"},
      {"rediss://127.0.0.1:6380?tls_verify=maybe", RLOCK_EINVAL, "tls_verify"},
      {"redis://127.0.0.1?tls_ca_file=/ca.crt", RLOCK_EINVAL, "needs TLS"},
      {"redis://", RLOCK_EINVAL, "host"},
      {"redis://:6379", RLOCK_EINVAL, "host"},
      {"redis://127.0.0.1:0", RLOCK_EINVAL, "port"},
      {"redis://127.0.0.1:65536", RLOCK_EINVAL, "port"},
      {"redis://127.0.0.1:", RLOCK_EINVAL, "port"},
      {"redis://127.0.0.1:abc", RLOCK_EINVAL, "port"},
      {"redis://127.0.0.1/x", RLOCK_EINVAL, "database"},
      {"redis://127.0.0.1?db=y", RLOCK_EINVAL, "database"},
      {"redis://[::1:6379", RLOCK_EINVAL, "IPv6"},
      {"redis://::1:6379", RLOCK_EINVAL, "IPv6"},
      {"redis://127.0.0.1?timeout=1", RLOCK_EINVAL, "timeout"},
      {"redis://:p%zz@127.0.0.1", RLOCK_EINVAL, "password"},
      {"unix://relative.sock", RLOCK_EINVAL, "absolute"},
      {"unix:///", RLOCK_EINVAL, "path"},
      {unix_url_ + "?db=abc", RLOCK_EINVAL, "database"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    rlock_client* client = sentinel<rlock_client>();
    EXPECT_FAIL(rlock_client_new_url(&client, c.url.c_str()), c.code, c.names);
    EXPECT_EQ(client, nullptr);
    EXPECT_NE(last_message().find("URL"), std::string::npos) << last_message();
    // The same through the options struct.
    rlock_client_options o = RLOCK_CLIENT_OPTIONS_INIT;
    o.url = c.url.c_str();
    client = sentinel<rlock_client>();
    EXPECT_FAIL(rlock_client_new(&client, &o), c.code, c.names);
    EXPECT_EQ(client, nullptr);
  }
  // A database the server does not have is refused by the server, named in the message.
  rlock_client* client = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new_url(&client, (tcp_url_ + "/99999").c_str()), RLOCK_EINVAL,
              "database");
  EXPECT_EQ(client, nullptr);
}

// Bad option values are refused before connecting: the port refuses connections, so a client
// that tried would report ECONN instead.
TEST_F(CapiBadInput, H11_InvalidClientOptionsAreEinvalBeforeConnecting) {
  ClosedPort closed;
  ASSERT_GT(closed.port(), 0);
  auto base = [&] {
    rlock_client_options o = RLOCK_CLIENT_OPTIONS_INIT;
    o.host = "127.0.0.1";
    o.port = closed.port();
    return o;
  };
  struct Case {
    const char* field;
    void (*set)(rlock_client_options*);
  };
  const Case cases[] = {
      {"username", [](rlock_client_options* o) { o->username = "alice"; }},
      {"pool_size", [](rlock_client_options* o) { o->pool_size = -1; }},
      {"pool_size", [](rlock_client_options* o) { o->pool_size = 1025; }},
      {"connect_timeout_ms", [](rlock_client_options* o) { o->connect_timeout_ms = -1; }},
      {"connect_timeout_ms", [](rlock_client_options* o) { o->connect_timeout_ms = kMax + 1; }},
      {"command_timeout_ms", [](rlock_client_options* o) { o->command_timeout_ms = INT64_MAX; }},
      {"command_timeout_ms", [](rlock_client_options* o) { o->command_timeout_ms = -3; }},
      {"watchdog_lease_ms", [](rlock_client_options* o) { o->watchdog_lease_ms = 29; }},
      {"watchdog_lease_ms", [](rlock_client_options* o) { o->watchdog_lease_ms = -1; }},
      {"watchdog_lease_ms", [](rlock_client_options* o) { o->watchdog_lease_ms = kMax + 1; }},
      {"poll_cap_ms", [](rlock_client_options* o) { o->poll_cap_ms = -1; }},
      {"poll_cap_ms", [](rlock_client_options* o) { o->poll_cap_ms = INT64_MAX; }},
      {"db", [](rlock_client_options* o) { o->db = -1; }},
      {"port", [](rlock_client_options* o) { o->port = 70000; }},
      {"port", [](rlock_client_options* o) { o->port = -1; }},
      {"host", [](rlock_client_options* o) { o->host = ""; }},
      {"unix_socket", [](rlock_client_options* o) { o->unix_socket = "relative.sock"; }},
      {"db",
       [](rlock_client_options* o) {
         o->url = "redis://127.0.0.1:1/2";
         o->db = 3;
       }},
      {"sync_replicas", [](rlock_client_options* o) { o->sync_replicas = -2; }},
      {"sync_replicas",
       [](rlock_client_options* o) {
         o->url = "redis://127.0.0.1:1?sync_replicas=1";
         o->sync_replicas = 2;
       }},
      {"sync_timeout_ms", [](rlock_client_options* o) { o->sync_timeout_ms = -1; }},
      {"sync_timeout_ms", [](rlock_client_options* o) { o->sync_timeout_ms = kMax; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    rlock_client_options o = base();
    c.set(&o);
    rlock_client* client = sentinel<rlock_client>();
    EXPECT_FAIL(rlock_client_new(&client, &o), RLOCK_EINVAL, c.field);
    EXPECT_EQ(client, nullptr);
  }
}

TEST_F(CapiBadInput, H12_WrongPasswordIsEauth) {
  // The fixture's default user has no password: AUTH with one is refused.
  const std::string hostport = tcp_url_.substr(std::string("redis://").size());
  rlock_client* c = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new_url(&c, ("redis://:wrong-password@" + hostport).c_str()),
              RLOCK_EAUTH, "");
  EXPECT_EQ(c, nullptr);

  // An ACL user with a password: a wrong one, an unknown user, then the right one.
  const std::string user = "rlock-capi-auth-" + std::to_string(::getpid());
  make_user(user, "right-pw");
  c = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new_url(&c, ("redis://" + user + ":wrong-pw@" + hostport).c_str()),
              RLOCK_EAUTH, user);
  EXPECT_EQ(c, nullptr);
  c = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new_url(&c, ("redis://nobody-" + user + ":x@" + hostport).c_str()),
              RLOCK_EAUTH, "");
  EXPECT_EQ(c, nullptr);
  rlock_client_options o = server_options();
  o.username = user.c_str();
  o.password = "wrong-pw";
  c = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new(&c, &o), RLOCK_EAUTH, user);
  EXPECT_EQ(c, nullptr);
  o.password = "right-pw";
  EXPECT_NE(make_client(o), nullptr);
}

TEST_F(CapiBadInput, UnreachableServerIsEconnQuickly) {
  ClosedPort closed;
  ASSERT_GT(closed.port(), 0);
  const std::string where = "127.0.0.1:" + std::to_string(closed.port());
  rlock_client* c = sentinel<rlock_client>();
  auto start = Clock::now();
  EXPECT_FAIL(rlock_client_new_url(&c, ("redis://" + where).c_str()), RLOCK_ECONN, where);
  EXPECT_LT(ms_since(start), 1000);
  EXPECT_EQ(c, nullptr);

  const std::string missing = "/nonexistent-rlock-capi-" + std::to_string(::getpid()) + "/r.sock";
  c = sentinel<rlock_client>();
  start = Clock::now();
  EXPECT_FAIL(rlock_client_new_url(&c, ("unix://" + missing).c_str()), RLOCK_ECONN, missing);
  EXPECT_LT(ms_since(start), 1000);
  EXPECT_EQ(c, nullptr);
}

TEST_F(CapiBadInput, UnknownOptionsVersionIsEversion) {
  for (unsigned int version : {0u, RLOCK_CLIENT_OPTIONS_VERSION + 1u, 99u}) {
    SCOPED_TRACE(version);
    rlock_client_options co = server_options();
    co.version = version;
    rlock_client* c = sentinel<rlock_client>();
    EXPECT_FAIL(rlock_client_new(&c, &co), RLOCK_EVERSION, "rlock_client_options");
    EXPECT_EQ(c, nullptr);

    rlock_lock_options lo = RLOCK_LOCK_OPTIONS_INIT;
    // The lock options' own "newer than known" stands in for the client options' one.
    lo.version =
        version == RLOCK_CLIENT_OPTIONS_VERSION + 1u ? RLOCK_LOCK_OPTIONS_VERSION + 1u : version;
    rlock_lock* l = sentinel<rlock_lock>();
    EXPECT_FAIL(rlock_lock_new(&l, client_, "x", &lo), RLOCK_EVERSION, "rlock_lock_options");
    EXPECT_EQ(l, nullptr);
  }

  const std::string name = unique_name("version");
  rlock_lock* lock = make_lock(name);
  ASSERT_NE(lock, nullptr);
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.version = RLOCK_ACQUIRE_OPTIONS_VERSION + 1;
  ao.wait_ms = 0;
  EXPECT_FAIL(rlock_acquire_ex(lock, &ao), RLOCK_EVERSION, "rlock_acquire_options");
  EXPECT_FALSE(redis_->exists(name)) << "acquired despite the unknown options version";

  // An out struct of an unknown version is not written.
  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  st.version = 0;
  st.locked = 55;
  st.hold_count = 66;
  EXPECT_FAIL(rlock_query_for(&st, lock, RLOCK_THREAD_CURRENT), RLOCK_EVERSION, "rlock_lock_state");
  EXPECT_EQ(st.locked, 55);
  EXPECT_EQ(st.hold_count, 66);
}

// ---- release bookkeeping ----------------------------------------------------------------------

TEST_F(CapiBadInput, H14_H13_ReleasingTwiceIsEnotheldAndAnotherOwnersReleaseEnotowner) {
  const std::string name = unique_name("release-twice");
  rlock_lock* lock = make_lock(name);
  ASSERT_NE(lock, nullptr);

  EXPECT_FAIL(rlock_release(lock), RLOCK_ENOTHELD, "");  // never acquired
  EXPECT_FALSE(redis_->exists(name));

  ASSERT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  ASSERT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();  // reentrant: 2 holds
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();
  EXPECT_EQ(redis_->hgetall(name),
            (std::map<std::string, std::string>{{owner_of_this_thread(), "1"}}));
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();
  EXPECT_FALSE(redis_->exists(name));
  EXPECT_FAIL(rlock_release(lock), RLOCK_ENOTHELD, "");
  EXPECT_FAIL(rlock_release(lock), RLOCK_ENOTHELD, "");
  EXPECT_FALSE(redis_->exists(name)) << "a failed release created the key";
  EXPECT_EQ(rlock_is_held(lock), 0);
  EXPECT_EQ(rlock_is_lost_for(lock, RLOCK_THREAD_CURRENT), 0);

  // Another owner holds it now: a stray release by us leaves its hold untouched.
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = 0;
  ao.lease_ms = 60000;
  ao.thread_id = 777;
  ASSERT_EQ(rlock_acquire_ex(lock, &ao), RLOCK_OK) << last_message();
  const std::map<std::string, std::string> before = redis_->hgetall(name);
  const long long ttl_before = redis_->pttl(name);
  EXPECT_FAIL(rlock_release(lock), RLOCK_ENOTOWNER, "");
  EXPECT_FAIL(rlock_release_for(lock, 778), RLOCK_ENOTOWNER, "");
  EXPECT_FAIL(rlock_extend(lock, 90000), RLOCK_ENOTOWNER, "");
  EXPECT_EQ(redis_->hgetall(name), before);
  const long long ttl_after = redis_->pttl(name);
  EXPECT_LE(ttl_after, ttl_before) << "the other owner's lease was reset";
  EXPECT_GT(ttl_after, ttl_before - 10000);
  EXPECT_EQ(rlock_release_for(lock, 777), RLOCK_OK) << last_message();
  EXPECT_FALSE(redis_->exists(name));
  EXPECT_FAIL(rlock_release_for(lock, 777), RLOCK_ENOTHELD, "");
}

// ---- rlock_last_error -------------------------------------------------------------------------

TEST_F(CapiBadInput, LastErrorIsNeverNullAndPerThread) {
  // A thread that has not failed yet sees OK and "".
  std::thread fresh([] {
    const rlock_error_info* e = rlock_last_error();
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->code, RLOCK_OK);
    ASSERT_NE(e->message, nullptr);
    EXPECT_STREQ(e->message, "");
  });
  fresh.join();

  EXPECT_FAIL(rlock_acquire(nullptr, 0), RLOCK_EINVAL, "lock");
  std::thread other([] {
    const rlock_error_info* e = rlock_last_error();
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->code, RLOCK_OK) << "another thread's failure leaked into this one";
  });
  other.join();

  // A successful call does not clear it.
  EXPECT_FAIL(rlock_release(nullptr), RLOCK_EINVAL, "lock");
  const std::string message = last_message();
  rlock_lock_options lo;
  ASSERT_EQ(rlock_lock_options_init(&lo, RLOCK_LOCK_OPTIONS_VERSION), RLOCK_OK);
  EXPECT_EQ(rlock_last_error()->code, RLOCK_EINVAL);
  EXPECT_EQ(last_message(), message);
}

// ---- handles that outlive their client --------------------------------------------------------

TEST_F(CapiBadInput, H19_LockHandlesAfterClientFreeAreEclosed) {
  rlock_client* c2 = nullptr;
  ASSERT_EQ(rlock_client_new_url(&c2, tcp_url_.c_str()), RLOCK_OK) << last_message();
  const std::string held_name = unique_name("closed-held");
  const std::string idle_name = unique_name("closed-idle");
  const std::string busy_name = unique_name("closed-busy");
  rlock_lock* held = make_lock(held_name, nullptr, c2);
  rlock_lock* idle = make_lock(idle_name, nullptr, c2);
  rlock_lock* busy = make_lock(busy_name, nullptr, c2);
  rlock_lock* waiting = make_lock(busy_name, nullptr, c2);
  ASSERT_TRUE(held && idle && busy && waiting);
  ASSERT_EQ(rlock_acquire(held, 0), RLOCK_OK) << last_message();
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = 0;
  ao.lease_ms = 60000;
  ao.thread_id = 1;
  ASSERT_EQ(rlock_acquire_ex(busy, &ao), RLOCK_OK) << last_message();

  // A waiter blocked on the client when it is freed.
  std::atomic<int> waiter_rc{1};
  std::thread waiter([&] {
    rlock_acquire_options wo = RLOCK_ACQUIRE_OPTIONS_INIT;
    wo.wait_ms = 20000;
    wo.thread_id = 2;
    waiter_rc = rlock_acquire_ex(waiting, &wo);
  });
  EXPECT_TRUE(redis_->wait_numsub(lock_channel(busy_name), 1, 5000));

  auto freed = Clock::now();
  rlock_client_free(c2);  // the lock handles stay alive, freed by TearDown afterwards
  waiter.join();
  EXPECT_EQ(waiter_rc.load(), RLOCK_ECLOSED) << rlock_strerror(waiter_rc.load());
  EXPECT_LT(ms_since(freed), 5000);

  // What the client held was released when it was freed.
  EXPECT_FALSE(redis_->exists(held_name));
  EXPECT_FALSE(redis_->exists(busy_name));

  for (rlock_lock* lock : {held, idle, busy, waiting}) {
    rlock_acquire_options a = RLOCK_ACQUIRE_OPTIONS_INIT;
    a.wait_ms = 0;
    rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
    int deleted = 0;
    EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_acquire(lock, RLOCK_WAIT_FOREVER), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_acquire_ex(lock, &a), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_release(lock), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_release_for(lock, 1), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_extend(lock, 1000), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_extend_for(lock, 1, 1000), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_extend_by_for(lock, 1, 1000), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_query_for(&st, lock, RLOCK_THREAD_CURRENT), RLOCK_ECLOSED, "closed");
    EXPECT_FAIL(rlock_force_unlock(&deleted, lock), RLOCK_ECLOSED, "closed");
    EXPECT_EQ(rlock_is_held(lock), 0);
    EXPECT_EQ(rlock_is_held_for(lock, 1), 0);
    // These have no documented result here; they must simply not crash.
    (void)rlock_cancel(lock);
    (void)rlock_is_lost_for(lock, RLOCK_THREAD_CURRENT);
    (void)rlock_lock_set_lost_callback(lock, nullptr, nullptr);
  }
  // TearDown frees the four handles now, after their client.
}

// ---- H12, H16, H17, H23: server refusals, unreachable server, expiry -------------------------

TEST_F(CapiBadInput, H12_EvalRenamedIsEunsupportedAtCreation) {
  // Renamed to a name nobody sends (an empty name is quoted differently by each server's
  // command line parser).
  rlock_test::PrivateRedis server({"--rename-command", "EVAL", "rlock-test-renamed-eval"});
  rlock_client* c = sentinel<rlock_client>();
  auto start = Clock::now();
  EXPECT_FAIL(rlock_client_new_url(&c, server.tcp_url().c_str()), RLOCK_EUNSUPPORTED, "");
  EXPECT_EQ(c, nullptr);
  EXPECT_LT(ms_since(start), 2000) << "no retry loop";
}

TEST_F(CapiBadInput, H16_ReleaseWhileRedisIsDownIsEconnAndBounded) {
  auto server = std::make_unique<rlock_test::PrivateRedis>();
  rlock_client_options o = RLOCK_CLIENT_OPTIONS_INIT;
  const std::string url = server->tcp_url();
  o.url = url.c_str();
  o.connect_timeout_ms = 500;
  o.command_timeout_ms = 500;
  rlock_client* c = make_client(o);
  ASSERT_NE(c, nullptr);
  rlock_lock* lock = make_lock(unique_name("h16"), nullptr, c);
  ASSERT_NE(lock, nullptr);
  ASSERT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  server.reset();  // stops it
  auto start = Clock::now();
  EXPECT_FAIL(rlock_release(lock), RLOCK_ECONN, "");
  EXPECT_LT(ms_since(start), 1500) << "the release outlived its command timeout";
  EXPECT_EQ(rlock_is_held(lock), 0) << "the hold is still renewed after the failed release";
}

TEST_F(CapiBadInput, H17_ExtendAfterExpiryIsElostAndRecreatesNothing) {
  const std::string name = unique_name("h17");
  rlock_lock* lock = make_lock(name);
  ASSERT_NE(lock, nullptr);
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = 0;
  ao.lease_ms = 150;
  ASSERT_EQ(rlock_acquire_ex(lock, &ao), RLOCK_OK) << last_message();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(redis_->exists(name));
  EXPECT_FAIL(rlock_extend(lock, 60000), RLOCK_ELOST, "");
  EXPECT_FALSE(redis_->exists(name)) << "the extend re-created the lock";

  // Expired and taken by another owner: the extend leaves that owner's hold alone.
  ASSERT_EQ(rlock_acquire_ex(lock, &ao), RLOCK_OK) << last_message();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  rlock_acquire_options other = RLOCK_ACQUIRE_OPTIONS_INIT;
  other.wait_ms = 0;
  other.lease_ms = 60000;
  other.thread_id = 4343;
  ASSERT_EQ(rlock_acquire_ex(lock, &other), RLOCK_OK) << last_message();
  const auto before = redis_->hgetall(name);
  const long long ttl = redis_->pttl(name);
  EXPECT_FAIL(rlock_extend(lock, 90000), RLOCK_ELOST, "");
  EXPECT_EQ(redis_->hgetall(name), before);
  EXPECT_LE(redis_->pttl(name), ttl);
  EXPECT_EQ(rlock_release_for(lock, 4343), RLOCK_OK) << last_message();
}

// OOM, BUSY and READONLY replies come back as their own codes and never as "acquired".
TEST_F(CapiBadInput, H23_OomBusyAndReadonlyAreTypedAndNeverAcquired) {
  rlock_test::PrivateRedis server({"--busy-reply-threshold", "100"});
  RedisConn admin(server.admin_url());
  rlock_client_options o = RLOCK_CLIENT_OPTIONS_INIT;
  const std::string url = server.tcp_url();
  o.url = url.c_str();
  rlock_client* c = make_client(o);
  ASSERT_NE(c, nullptr);
  const std::string name = unique_name("h23");
  rlock_lock* lock = make_lock(name, nullptr, c);
  ASSERT_NE(lock, nullptr);

  ASSERT_TRUE(admin.command({"CONFIG", "SET", "maxmemory", "1"}).is_status());
  EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_EOOM, "");
  EXPECT_EQ(rlock_is_held(lock), 0);
  ASSERT_TRUE(admin.command({"CONFIG", "SET", "maxmemory", "0"}).is_status());
  EXPECT_FALSE(admin.exists(name));

  std::thread busy([&] {
    RedisConn runner(server.admin_url(), 20000);
    runner.command({"EVAL", "while true do end", "0"});  // ends with SCRIPT KILL
  });
  auto start = Clock::now();
  Reply script;
  while (ms_since(start) < 5000) {  // until the script runs past the threshold
    script = admin.command({"PING"});
    if (script.is_error() && script.str.rfind("BUSY", 0) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(script.is_error()) << script.describe();
  EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_EBUSY, "");
  EXPECT_EQ(rlock_is_held(lock), 0);
  admin.command({"SCRIPT", "KILL"});
  busy.join();
  EXPECT_FALSE(admin.exists(name));

  rlock_test::PrivateRedis master;
  ASSERT_TRUE(admin.command({"REPLICAOF", "127.0.0.1", std::to_string(master.port())}).is_status());
  EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_EREADONLY, "");
  EXPECT_EQ(rlock_is_held(lock), 0);
  admin.command({"REPLICAOF", "NO", "ONE"});
  EXPECT_FALSE(admin.exists(name));
  // The same client works once the server is writable again.
  EXPECT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();

  // A master short of min-replicas-to-write refuses writes with NOREPLICAS: the same code.
  ASSERT_TRUE(admin.command({"CONFIG", "SET", "min-replicas-to-write", "1"}).is_status());
  if (server.version() < 70000) {  // Redis 6 lets a script's writes through (docs/servers.md)
    EXPECT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
    EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();
    return;
  }
  EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_EREADONLY, "NOREPLICAS");
  EXPECT_EQ(rlock_is_held(lock), 0);
  ASSERT_TRUE(admin.command({"CONFIG", "SET", "min-replicas-to-write", "0"}).is_status());
  EXPECT_FALSE(admin.exists(name));
  EXPECT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();
}

// Replica sync on a server with no replica: the master grants, WAIT confirms nothing, so the
// grant is taken back (twice) and the call reports RLOCK_ENOTSYNCED; nothing is held or left.
// With the option off (-1) the same server grants at once. A version-1 options struct still
// works and means the defaults (auto: no WAIT on a lone server).
TEST_F(CapiBadInput, ReplicaSyncWithoutReplicasIsEnotsyncedAndHoldsNothing) {
  RedisConn& admin = *redis_;
  const std::string name = unique_name("sync");
  rlock_client_options o = server_options();
  o.sync_replicas = 1;
  o.sync_timeout_ms = 50;
  rlock_client* c = make_client(o);
  ASSERT_NE(c, nullptr);
  rlock_lock* lock = make_lock(name, nullptr, c);
  ASSERT_NE(lock, nullptr);
  auto start = Clock::now();
  EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_ENOTSYNCED, "0 of 1 replicas confirmed");
  EXPECT_LT(ms_since(start), 1000);
  EXPECT_EQ(rlock_is_held(lock), 0);
  EXPECT_FALSE(admin.exists(name));
  // A waiting acquire fails the same way, at once rather than at the end of its wait.
  start = Clock::now();
  EXPECT_FAIL(rlock_acquire(lock, 5000), RLOCK_ENOTSYNCED, "sync_replicas");
  EXPECT_LT(ms_since(start), 2000);
  EXPECT_FALSE(admin.exists(name));
  EXPECT_STREQ(rlock_strerror(RLOCK_ENOTSYNCED),
               "the replicas did not confirm the acquire in time");

  rlock_client_options off = server_options();
  off.sync_replicas = -1;
  rlock_client* c2 = make_client(off);
  ASSERT_NE(c2, nullptr);
  rlock_lock* free_lock = make_lock(name, nullptr, c2);
  ASSERT_NE(free_lock, nullptr);
  EXPECT_EQ(rlock_acquire(free_lock, 0), RLOCK_OK) << last_message();
  EXPECT_EQ(rlock_release(free_lock), RLOCK_OK) << last_message();

  rlock_client_options v1 = server_options();
  v1.version = 1;
  v1.sync_replicas = 5;  // not read: past the end of a version-1 struct
  rlock_client* c3 = make_client(v1);
  ASSERT_NE(c3, nullptr);
  rlock_lock* v1_lock = make_lock(name, nullptr, c3);
  ASSERT_NE(v1_lock, nullptr);
  EXPECT_EQ(rlock_acquire(v1_lock, 0), RLOCK_OK) << last_message();
  EXPECT_EQ(rlock_release(v1_lock), RLOCK_OK) << last_message();
}

// ---- H10: freed and made-up handles ----------------------------------------------------------

// Every call on a freed lock handle is EBADHANDLE naming rlock_lock, or its documented "no";
// nothing reaches Redis; a second free is a no-op that records EBADHANDLE.
TEST_F(CapiBadInput, H10_UseAfterFreeOfALockIsEbadhandleAndSendsNothing) {
  std::string user;
  rlock_client* c = no_script_client(&user);
  ASSERT_NE(c, nullptr);
  const std::string name = unique_name("h10-lock");
  names_.push_back(name);
  rlock_lock* lock = nullptr;
  ASSERT_EQ(rlock_lock_new(&lock, c, name.c_str(), nullptr), RLOCK_OK) << last_message();
  rlock_lock_free(lock);

  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = 0;
  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  int deleted = 7;
  int64_t token = 7;
  EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_acquire(lock, RLOCK_WAIT_FOREVER), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_acquire_ex(lock, &ao), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_release(lock), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_release_for(lock, 5), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_extend(lock, 1000), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_extend_for(lock, 5, 1000), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_extend_by_for(lock, 5, 1000), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_force_unlock(&deleted, lock), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_EQ(deleted, 7);
  EXPECT_FAIL(rlock_cancel(lock), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_query_for(&st, lock, RLOCK_THREAD_CURRENT), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_lock_token_for(&token, lock, RLOCK_THREAD_CURRENT), RLOCK_EBADHANDLE,
              "rlock_lock");
  EXPECT_EQ(token, 7);
  EXPECT_FAIL(rlock_lock_set_lost_callback(lock, nullptr, nullptr), RLOCK_EBADHANDLE, "rlock_lock");
  auto never = [](void*, int, int64_t) { ADD_FAILURE() << "a refused call completed"; };
  EXPECT_FAIL(rlock_acquire_async(lock, &ao, never, nullptr), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_release_async(lock, 5, never, nullptr), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_FAIL(rlock_extend_async(lock, 5, 1000, never, nullptr), RLOCK_EBADHANDLE, "rlock_lock");
  EXPECT_EQ(rlock_is_held(lock), 0);
  EXPECT_EQ(rlock_is_held_for(lock, 5), 0);
  EXPECT_EQ(rlock_is_lost_for(lock, RLOCK_THREAD_CURRENT), 0);
  rlock_multi* group = sentinel<rlock_multi>();
  EXPECT_FAIL(rlock_multi_lock_new(&group, &lock, 1), RLOCK_EBADHANDLE, "members[0]");
  EXPECT_EQ(group, nullptr);
  EXPECT_NE(last_message().find("rlock_lock"), std::string::npos) << last_message();

  prime_last_error(RLOCK_EBADHANDLE);
  rlock_lock_free(lock);  // double free: harmless, and visible in the last error
  EXPECT_EQ(rlock_last_error()->code, RLOCK_EBADHANDLE);
  EXPECT_TRUE(names(last_message(), "rlock_lock")) << last_message();

  expect_nothing_sent(user);
  EXPECT_FALSE(redis_->exists(name));
  // Control: a live handle of the same client does reach Redis.
  rlock_lock* live = make_lock(name, nullptr, c);
  ASSERT_NE(live, nullptr);
  expect_control_is_logged(live, user);
}

TEST_F(CapiBadInput, H10_UseAfterFreeOfAClientIsEbadhandle) {
  rlock_client* c = nullptr;
  ASSERT_EQ(rlock_client_new_url(&c, tcp_url_.c_str()), RLOCK_OK) << last_message();
  ASSERT_NE(rlock_client_id(c), nullptr);
  rlock_client_free(c);

  const std::string name = unique_name("h10-client");
  names_.push_back(name);
  rlock_lock* out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new(&out, c, name.c_str(), nullptr), RLOCK_EBADHANDLE, "rlock_client");
  EXPECT_EQ(out, nullptr);
  EXPECT_FAIL(rlock_client_watch_key_events(c, RLOCK_KEY_EXPIRED), RLOCK_EBADHANDLE,
              "rlock_client");
  out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new_n(&out, c, name.data(), name.size(), nullptr), RLOCK_EBADHANDLE,
              "rlock_client");
  EXPECT_EQ(out, nullptr);
  int accepted = 7;
  EXPECT_FAIL(rlock_fenced_write(&accepted, c, name.data(), name.size(), "v", 1, 1),
              RLOCK_EBADHANDLE, "rlock_client");
  EXPECT_EQ(accepted, 7);
  EXPECT_EQ(rlock_client_id(c), nullptr);

  prime_last_error(RLOCK_EBADHANDLE);
  rlock_client_free(c);  // double free
  EXPECT_EQ(rlock_last_error()->code, RLOCK_EBADHANDLE);
  EXPECT_TRUE(names(last_message(), "rlock_client")) << last_message();
  EXPECT_FALSE(redis_->exists(name));
  EXPECT_FALSE(redis_->exists("rlock_fence:{" + name + "}"));
}

TEST_F(CapiBadInput, H10_UseAfterFreeOfAGroupOrATokenIsEbadhandleAndSendsNothing) {
  std::string user;
  rlock_client* c = no_script_client(&user);
  ASSERT_NE(c, nullptr);
  const std::string a = unique_name("h10-group-a"), b = unique_name("h10-group-b");
  rlock_lock* members[2] = {make_lock(a, nullptr, c), make_lock(b, nullptr, c)};
  ASSERT_TRUE(members[0] && members[1]);

  for (bool redlock : {false, true}) {
    SCOPED_TRACE(redlock ? "redlock" : "multi-lock");
    rlock_multi* group = nullptr;
    ASSERT_EQ(
        redlock ? rlock_redlock_new(&group, members, 2) : rlock_multi_lock_new(&group, members, 2),
        RLOCK_OK)
        << last_message();
    rlock_multi_free(group);
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.wait_ms = 0;
    int64_t validity = 7;
    EXPECT_FAIL(rlock_multi_acquire_ex(&validity, group, &ao), RLOCK_EBADHANDLE, "rlock_multi");
    EXPECT_FAIL(rlock_multi_acquire_ex(nullptr, group, nullptr), RLOCK_EBADHANDLE, "rlock_multi");
    EXPECT_EQ(validity, 7);
    EXPECT_FAIL(rlock_multi_release_for(group, RLOCK_THREAD_CURRENT), RLOCK_EBADHANDLE,
                "rlock_multi");
    EXPECT_FAIL(rlock_multi_cancel(group), RLOCK_EBADHANDLE, "rlock_multi");
    EXPECT_EQ(rlock_multi_is_held_for(group, RLOCK_THREAD_CURRENT), 0);
    prime_last_error(RLOCK_EBADHANDLE);
    rlock_multi_free(group);
    EXPECT_EQ(rlock_last_error()->code, RLOCK_EBADHANDLE);
    EXPECT_TRUE(names(last_message(), "rlock_multi")) << last_message();
  }

  rlock_cancel_token* token = nullptr;
  ASSERT_EQ(rlock_cancel_token_new(&token), RLOCK_OK);
  rlock_cancel_token_free(token);
  EXPECT_FAIL(rlock_cancel_token_cancel(token), RLOCK_EBADHANDLE, "rlock_cancel_token");
  EXPECT_EQ(rlock_cancel_token_is_cancelled(token), 0);
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = 0;
  ao.cancel = token;
  EXPECT_FAIL(rlock_acquire_ex(members[0], &ao), RLOCK_EBADHANDLE, "opts->cancel");
  EXPECT_TRUE(names(last_message(), "rlock_cancel_token")) << last_message();
  rlock_multi* group = nullptr;
  ASSERT_EQ(rlock_multi_lock_new(&group, members, 2), RLOCK_OK) << last_message();
  EXPECT_FAIL(rlock_multi_acquire_ex(nullptr, group, &ao), RLOCK_EBADHANDLE, "opts->cancel");
  rlock_multi_free(group);
  prime_last_error(RLOCK_EBADHANDLE);
  rlock_cancel_token_free(token);
  EXPECT_EQ(rlock_last_error()->code, RLOCK_EBADHANDLE);

  expect_nothing_sent(user);
  EXPECT_FALSE(redis_->exists(a));
  EXPECT_FALSE(redis_->exists(b));
  expect_control_is_logged(members[0], user);
}

// Handles never made by rlock, or of another type, are recognised without being read.
TEST_F(CapiBadInput, H10_MadeUpAndMistypedHandlesAreEbadhandle) {
  const std::string name = unique_name("h10-forged");
  rlock_lock* lock = make_lock(name);
  ASSERT_NE(lock, nullptr);
  int on_stack = 0;
  std::vector<rlock_lock*> forged = {
      reinterpret_cast<rlock_lock*>(&on_stack),
      reinterpret_cast<rlock_lock*>(uintptr_t{1}),
      reinterpret_cast<rlock_lock*>(UINTPTR_MAX),
      reinterpret_cast<rlock_lock*>(client_),  // a live client is not a lock
      reinterpret_cast<rlock_lock*>(reinterpret_cast<uintptr_t>(lock) + 1),  // another generation
  };
  for (rlock_lock* bad : forged) {
    SCOPED_TRACE(reinterpret_cast<uintptr_t>(bad));
    EXPECT_FAIL(rlock_acquire(bad, 0), RLOCK_EBADHANDLE, "rlock_lock");
    EXPECT_FAIL(rlock_release(bad), RLOCK_EBADHANDLE, "rlock_lock");
    EXPECT_EQ(rlock_is_held(bad), 0);
    rlock_lock_free(bad);  // ignored
    EXPECT_EQ(rlock_last_error()->code, RLOCK_EBADHANDLE);
  }
  EXPECT_EQ(on_stack, 0);
  rlock_lock* out = sentinel<rlock_lock>();
  EXPECT_FAIL(rlock_lock_new(&out, reinterpret_cast<rlock_client*>(lock), "x", nullptr),
              RLOCK_EBADHANDLE, "rlock_client");
  EXPECT_EQ(out, nullptr);
  EXPECT_FAIL(rlock_cancel_token_cancel(reinterpret_cast<rlock_cancel_token*>(lock)),
              RLOCK_EBADHANDLE, "rlock_cancel_token");
  EXPECT_FAIL(rlock_multi_release_for(reinterpret_cast<rlock_multi*>(lock), 1), RLOCK_EBADHANDLE,
              "rlock_multi");
  EXPECT_FALSE(redis_->exists(name));
  // The real ones still work after all that.
  EXPECT_NE(rlock_client_id(client_), nullptr);
  ASSERT_EQ(rlock_acquire(lock, 0), RLOCK_OK) << last_message();
  EXPECT_EQ(rlock_release(lock), RLOCK_OK) << last_message();
}

// A handle freed while another thread waits in a call on it: the wait ends (ECANCELED), nothing
// is left locked for the waiter, and the object lives until that call returned (ASan checks).
TEST_F(CapiBadInput, H10_FreeingALockOrGroupWhileAnotherThreadWaitsOnIt) {
  const std::string name = unique_name("h10-free-waiting");
  rlock_lock* holder = make_lock(name);
  ASSERT_NE(holder, nullptr);
  rlock_acquire_options ho = RLOCK_ACQUIRE_OPTIONS_INIT;
  ho.wait_ms = 0;
  ho.lease_ms = 60000;
  ho.thread_id = 1;
  ASSERT_EQ(rlock_acquire_ex(holder, &ho), RLOCK_OK) << last_message();
  const auto held = redis_->hgetall(name);

  for (bool group : {false, true}) {
    SCOPED_TRACE(group ? "rlock_multi" : "rlock_lock");
    rlock_lock* lock = nullptr;
    ASSERT_EQ(rlock_lock_new(&lock, client_, name.c_str(), nullptr), RLOCK_OK);
    rlock_multi* multi = nullptr;
    if (group) {
      ASSERT_EQ(rlock_multi_lock_new(&multi, &lock, 1), RLOCK_OK) << last_message();
      rlock_lock_free(lock);  // the group keeps its member alive
    }
    std::atomic<int> rc{1};
    std::atomic<bool> started{false};
    std::thread waiter([&] {
      rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
      ao.wait_ms = 10000;  // bounded, so a free that does not wake it fails instead of hanging
      ao.thread_id = 2;
      started = true;
      rc = group ? rlock_multi_acquire_ex(nullptr, multi, &ao) : rlock_acquire_ex(lock, &ao);
    });
    while (!started) std::this_thread::yield();
    if (!group) {
      EXPECT_TRUE(redis_->wait_numsub(lock_channel(name), 1, 5000));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto freed = Clock::now();
    if (group) {
      rlock_multi_free(multi);
    } else {
      rlock_lock_free(lock);
    }
    waiter.join();
    EXPECT_EQ(rc.load(), RLOCK_ECANCELED) << rlock_strerror(rc.load());
    EXPECT_LT(ms_since(freed), 3000);
    EXPECT_EQ(redis_->hgetall(name), held) << "the waiter left something in the lock";
    if (group) {
      EXPECT_FAIL(rlock_multi_acquire_ex(nullptr, multi, nullptr), RLOCK_EBADHANDLE, "rlock_multi");
    } else {
      EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_EBADHANDLE, "rlock_lock");
    }
  }
  EXPECT_EQ(rlock_release_for(holder, 1), RLOCK_OK) << last_message();
}

// A token freed during an acquire that uses it stays valid for that acquire, which ends as it
// would have (here: its wait passes).
TEST_F(CapiBadInput, H10_FreeingATokenInUseLeavesTheAcquireAlone) {
  const std::string name = unique_name("h10-token-in-use");
  rlock_lock* holder = make_lock(name);
  rlock_lock* lock = make_lock(name);
  ASSERT_TRUE(holder && lock);
  rlock_acquire_options ho = RLOCK_ACQUIRE_OPTIONS_INIT;
  ho.wait_ms = 0;
  ho.lease_ms = 60000;
  ho.thread_id = 1;
  ASSERT_EQ(rlock_acquire_ex(holder, &ho), RLOCK_OK) << last_message();
  rlock_cancel_token* token = nullptr;
  ASSERT_EQ(rlock_cancel_token_new(&token), RLOCK_OK);
  std::atomic<int> rc{1};
  std::thread waiter([&] {
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.wait_ms = 1500;
    ao.thread_id = 2;
    ao.cancel = token;
    rc = rlock_acquire_ex(lock, &ao);
  });
  EXPECT_TRUE(redis_->wait_numsub(lock_channel(name), 1, 5000));
  rlock_cancel_token_free(token);
  EXPECT_FAIL(rlock_cancel_token_cancel(token), RLOCK_EBADHANDLE, "rlock_cancel_token");
  waiter.join();
  EXPECT_EQ(rc.load(), RLOCK_ETIMEDOUT) << rlock_strerror(rc.load());
  EXPECT_EQ(redis_->hgetall(name).size(), 1u);
  EXPECT_EQ(rlock_release_for(holder, 1), RLOCK_OK) << last_message();
}

// Threads calling on handles while others free them (twice, at once): every call returns a
// status code, never touches freed memory (ASan/TSan builds check), and the last free wins.
TEST_F(CapiBadInput, H10_ConcurrentCallsAndFreesFromOtherThreads) {
  const std::string name = unique_name("h10-race");
  names_.push_back(name);
  // ECLOSED: a call that pinned the lock before it was freed may meet the client's free.
  const std::vector<int> allowed = {RLOCK_OK,        RLOCK_ENOTHELD,   RLOCK_ETIMEDOUT,
                                    RLOCK_ECANCELED, RLOCK_EBADHANDLE, RLOCK_ENOTOWNER,
                                    RLOCK_ECLOSED};
  std::atomic<int> unexpected{0};
  std::atomic<int> an_unexpected_code{0};
  std::atomic<int> bad_seen{0};
  for (int round = 0; round < 40; ++round) {
    rlock_client* c = nullptr;
    ASSERT_EQ(rlock_client_new_url(&c, tcp_url_.c_str()), RLOCK_OK) << last_message();
    rlock_lock* lock = nullptr;
    ASSERT_EQ(rlock_lock_new(&lock, c, name.c_str(), nullptr), RLOCK_OK);
    rlock_cancel_token* token = nullptr;
    ASSERT_EQ(rlock_cancel_token_new(&token), RLOCK_OK);
    std::atomic<bool> go{false};
    std::vector<std::thread> users;
    for (int t = 0; t < 3; ++t) {
      users.emplace_back([&, t] {
        while (!go) std::this_thread::yield();
        for (int i = 0; i < 200; ++i) {
          rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
          ao.wait_ms = 0;
          ao.lease_ms = 2000;
          ao.thread_id = 100 + t;
          ao.cancel = i % 2 == 0 ? token : nullptr;
          int codes[4] = {rlock_acquire_ex(lock, &ao), rlock_release_for(lock, 100 + t),
                          rlock_cancel_token_is_cancelled(token) == 0 ? RLOCK_OK : RLOCK_ERROR,
                          rlock_cancel(lock)};
          (void)rlock_is_held_for(lock, 100 + t);
          rlock_lock* extra = nullptr;
          int made = rlock_lock_new(&extra, c, name.c_str(), nullptr);
          if (made == RLOCK_OK) {
            rlock_lock_free(extra);
          } else if (made != RLOCK_EBADHANDLE) {
            ++unexpected;
            an_unexpected_code = made;
          }
          bool bad = false;
          for (int code : codes) {
            if (std::find(allowed.begin(), allowed.end(), code) == allowed.end()) {
              ++unexpected;
              an_unexpected_code = code;
            }
            bad = bad || code == RLOCK_EBADHANDLE;
          }
          if (bad) {
            ++bad_seen;
            break;
          }
        }
      });
    }
    go = true;
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 10)));
    std::thread second_free([&] { rlock_lock_free(lock); });
    rlock_lock_free(lock);
    rlock_cancel_token_free(token);
    second_free.join();
    rlock_client_free(c);
    for (std::thread& u : users) u.join();
    EXPECT_EQ(rlock_is_held_for(lock, 100), 0);
    EXPECT_FAIL(rlock_release(lock), RLOCK_EBADHANDLE, "rlock_lock");
  }
  EXPECT_EQ(unexpected.load(), 0) << "for example " << an_unexpected_code.load() << " ("
                                  << rlock_strerror(an_unexpected_code.load()) << ")";
  EXPECT_GT(bad_seen.load(), 0) << "no call ever met a freed handle: the race was not exercised";
}

// The handle table's lock is taken around fork(): a child can make handles even when another
// thread of the parent was making or freeing one at that moment (it would hang otherwise).
TEST_F(CapiBadInput, H10_ForkedChildCanMakeHandlesWhileOtherThreadsChurnThem) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> churn;
  for (int t = 0; t < 2; ++t) {
    churn.emplace_back([&] {
      while (!stop) {
        rlock_cancel_token* token = nullptr;
        if (rlock_cancel_token_new(&token) == RLOCK_OK) rlock_cancel_token_free(token);
      }
    });
  }
  int hung = 0, failed = 0;
  for (int i = 0; i < 100; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::alarm(5);  // a deadlocked child dies of SIGALRM
      rlock_cancel_token* token = nullptr;
      int rc = rlock_cancel_token_new(&token);
      if (rc == RLOCK_OK) rlock_cancel_token_free(token);
      ::_exit(rc == RLOCK_OK ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) ++hung;
    if (hung > 0) break;
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) ++failed;
  }
  stop = true;
  for (std::thread& t : churn) t.join();
  EXPECT_EQ(hung, 0) << "children hung making a handle";
  EXPECT_EQ(failed, 0);
}

// A lock handle that is a member of a group may be freed before the group (documented), but
// its lost-lock callback must not run after rlock_lock_free returned: the caller frees the
// payload then. The group's holds are still found lost (is_held 0).
TEST_F(CapiBadInput, H10_FreedGroupMemberRunsNoLostCallback) {
  rlock_client_options o = server_options();
  o.watchdog_lease_ms = 600;  // renewals every 200 ms
  rlock_client* c = make_client(o);
  ASSERT_NE(c, nullptr);
  const std::string name = unique_name("h10-member-callback");
  names_.push_back(name);
  rlock_lock* member = nullptr;
  ASSERT_EQ(rlock_lock_new(&member, c, name.c_str(), nullptr), RLOCK_OK);
  static std::atomic<int> calls{0};
  calls = 0;
  ASSERT_EQ(
      rlock_lock_set_lost_callback(
          member,
          [](rlock_lock*, const char*, size_t, int64_t, rlock_lost_reason, void*) { ++calls; },
          nullptr),
      RLOCK_OK);
  rlock_multi* group = nullptr;
  ASSERT_EQ(rlock_multi_lock_new(&group, &member, 1), RLOCK_OK) << last_message();
  rlock_lock_free(member);
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  ao.wait_ms = 0;
  ASSERT_EQ(rlock_multi_acquire_ex(nullptr, group, &ao), RLOCK_OK) << last_message();
  EXPECT_EQ(rlock_multi_is_held_for(group, RLOCK_THREAD_CURRENT), 1);
  redis_->del(name);  // the hold is lost; the next renewal finds out
  auto start = Clock::now();
  while (rlock_multi_is_held_for(group, RLOCK_THREAD_CURRENT) == 1 && ms_since(start) < 3000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(rlock_multi_is_held_for(group, RLOCK_THREAD_CURRENT), 0) << "the loss was not noticed";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(calls.load(), 0) << "the freed handle's callback ran";
  rlock_multi_free(group);
}

}  // namespace

// ---- H24: messages stay short whatever the input ---------------------------------------------

// rlock_last_error() keeps at most this many bytes of a message: the start and the end, with the
// middle elided (docs/errors.md).
constexpr size_t kMaxMessage = 1024;

TEST_F(CapiBadInput, H24_MessagesAboutHugeHostsUsersAndNamesAreCapped) {
  const std::string huge(100000, 'h');
  rlock_client* c = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new_url(&c, ("redis://" + huge + ":1").c_str()), RLOCK_ECONN, "");
  std::string m = last_message();
  EXPECT_LE(m.size(), kMaxMessage);
  EXPECT_EQ(m.rfind("cannot connect to Redis at ", 0), 0u) << m.substr(0, 200);
  EXPECT_NE(m.find("100000 bytes"), std::string::npos)
      << "the host's length is given: " << m.substr(0, 300);

  // A refused user name is quoted in the message: the middle goes, the reply at the end stays.
  const std::string hostport = tcp_url_.substr(std::string("redis://").size());
  c = sentinel<rlock_client>();
  EXPECT_FAIL(rlock_client_new_url(&c, ("redis://" + huge + ":pw@" + hostport).c_str()),
              RLOCK_EAUTH, "");
  m = last_message();
  EXPECT_LE(m.size(), kMaxMessage);
  EXPECT_EQ(m.rfind("Redis at ", 0), 0u) << m.substr(0, 200);
  EXPECT_NE(m.find("bytes elided"), std::string::npos) << m.substr(0, 300);
  EXPECT_NE(m.find("WRONGPASS"), std::string::npos)
      << "the reply at the end is kept: " << m.substr(0, 300);

  // A 100 KB lock name held by another owner.
  rlock_client_options o = server_options();
  o.max_name_len = RLOCK_HARD_MAX_NAME_LEN;
  rlock_client* big = make_client(o);
  ASSERT_NE(big, nullptr);
  rlock_lock* lock = make_lock(unique_name("huge") + std::string(100000, 'n'), nullptr, big);
  ASSERT_NE(lock, nullptr);
  rlock_acquire_options other = RLOCK_ACQUIRE_OPTIONS_INIT;
  other.wait_ms = 0;
  other.thread_id = 424242;
  ASSERT_EQ(rlock_acquire_ex(lock, &other), RLOCK_OK) << last_message();
  EXPECT_FAIL(rlock_acquire(lock, 0), RLOCK_ETIMEDOUT, "");
  EXPECT_LE(last_message().size(), kMaxMessage);
  EXPECT_EQ(rlock_release_for(lock, 424242), RLOCK_OK) << last_message();
}

// Freeing a client must not wait for the watchdog of an expirable semaphore that still holds a
// permit: its renewal task sleeps a third of the watchdog lease (10 s by default) between
// rounds, and the engine's stop waited for that sleep to end.
TEST_F(CapiBadInput, FreeingTheClientDoesNotWaitForAPermitRenewal) {
  rlock_client* client = nullptr;
  ASSERT_EQ(rlock_client_new_url(&client, tcp_url_.c_str()), RLOCK_OK) << last_message();
  const std::string name = unique_name("capi-free-renewal");
  rlock_semaphore_options opts = RLOCK_SEMAPHORE_OPTIONS_INIT;
  opts.kind = RLOCK_SEMAPHORE_EXPIRABLE;
  rlock_semaphore* sem = nullptr;
  ASSERT_EQ(rlock_semaphore_new_n(&sem, client, name.data(), name.size(), &opts), RLOCK_OK)
      << last_message();
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem, 1, 0), RLOCK_OK) << last_message();
  // Taken asynchronously, as the bindings do.
  rlock_permit_id id;
  rlock_permit_options acquire = RLOCK_PERMIT_OPTIONS_INIT;
  acquire.wait_ms = 5000;
  acquire.lease_ms = RLOCK_LEASE_WATCHDOG;
  acquire.ids = &id;
  std::atomic<int> status{1};
  ASSERT_EQ(
      rlock_semaphore_acquire_async(
          sem, &acquire,
          [](void* user, int rc, int64_t) { static_cast<std::atomic<int>*>(user)->store(rc); },
          &status),
      RLOCK_OK)
      << last_message();
  const Clock::time_point asked = Clock::now();
  while (status.load() == 1 && ms_since(asked) < 5000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(status.load(), RLOCK_OK);
  const Clock::time_point start = Clock::now();
  rlock_client_free(client);
  EXPECT_LT(ms_since(start), 2000) << "rlock_client_free waited for the permit renewal";
  rlock_semaphore_free(sem);
  redis_->command({"DEL", name, "{" + name + "}:timeout"});
}
