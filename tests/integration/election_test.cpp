// Leader election (rlock.h "Leader election", docs/leader.md): one leader at a time, terms that
// grow, and a leader told it lost leadership before another can act, through the C ABI.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;
using Clock = std::chrono::steady_clock;

namespace {

struct ElectionFree {
  void operator()(rlock_election* e) const { rlock_election_free(e); }
};
using Election = std::unique_ptr<rlock_election, ElectionFree>;

Election make_election(rlock_client* client, const std::string& name, int requeue = 1) {
  rlock_election_options opts = RLOCK_ELECTION_OPTIONS_INIT;
  opts.requeue = requeue;
  rlock_election* e = nullptr;
  if (rlock_election_new(&e, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_election_new failed: " + it::last_error());
  }
  return Election(e);
}

// What the callbacks of one candidate saw, in order.
struct Seen {
  struct Event {
    bool elected;
    int64_t term;
    int reason;
    std::string error;  // the thread's last error, for revoked(0, FAILED)
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Event> events;
  int running = 0;  // callbacks running now, across candidates sharing a Seen
  int overlaps = 0;

  void add(Event e) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(std::move(e));
    changed.notify_all();
  }
  // Waits for an event matching `pred`, from index `from`; its index, or -1.
  template <class Pred>
  int wait_for(Pred pred, int64_t timeout_ms, size_t from = 0) {
    std::unique_lock<std::mutex> lock(mutex);
    int found = -1;
    changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
      for (size_t i = from; i < events.size(); ++i) {
        if (pred(events[i])) {
          found = static_cast<int>(i);
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::vector<Event> copy() {
    std::lock_guard<std::mutex> lock(mutex);
    return events;
  }
};

void on_elected(rlock_election*, int64_t term, void* payload) {
  static_cast<Seen*>(payload)->add({true, term, 0, {}});
}
void on_revoked(rlock_election*, int64_t term, rlock_revoke_reason reason, void* payload) {
  static_cast<Seen*>(payload)->add(
      {false, term, static_cast<int>(reason),
       reason == RLOCK_REVOKED_FAILED ? std::string(rlock_last_error()->message) : ""});
}

int64_t elected_term(Seen& seen, int64_t timeout_ms, size_t from = 0) {
  const int i = seen.wait_for([](const Seen::Event& e) { return e.elected; }, timeout_ms, from);
  if (i < 0) return 0;
  std::lock_guard<std::mutex> lock(seen.mutex);
  return seen.events[i].term;
}

std::string token_key(const std::string& name) { return "redisson_lock_token:{" + name + "}"; }

// How long one try-acquire round trip takes here now, for the margins of the liveness bounds.
int64_t round_trip_ms(rlock_client* client, const std::string& name) {
  it::Lock probe = it::make_lock(client, name + "-probe", 1000);
  const auto start = Clock::now();
  for (int i = 0; i < 5; ++i) {
    (void)rlock_acquire(probe.get(), 0);
    (void)rlock_release(probe.get());
  }
  return std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count() / 5);
}

}  // namespace

// Three candidates on three clients: one leader at a time, each leadership with a higher term,
// and a resign hands over at once. A store keeping (term, writer) refuses no current leader.
TEST(Election, ThreeCandidatesOneLeaderAtATime) {
  const std::string name = unique_name("election-three");
  const std::string resource = name + "-store";
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  std::vector<it::Client> clients;
  std::vector<std::unique_ptr<Seen>> seen;  // outlives the elections
  std::vector<Election> elections;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(it::make_client(it::ClientSettings{2000, 0, 0}));
    elections.push_back(make_election(clients.back().get(), name));
    seen.push_back(std::make_unique<Seen>());
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(rlock_election_campaign(elections[i].get(), on_elected, on_revoked, seen[i].get()),
              RLOCK_OK)
        << it::last_error();
  }
  // Four handovers: the leader writes with its term, then resigns.
  int64_t last_term = 0;
  std::map<int, int> times_led;
  int rejoin = -1;
  for (int round = 0; round < 4; ++round) {
    int leader = -1;
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    while (leader < 0 && Clock::now() < give_up) {
      int leaders = 0;
      for (int i = 0; i < 3; ++i) {
        if (rlock_election_is_leader(elections[i].get())) {
          ++leaders;
          leader = i;
        }
      }
      ASSERT_LE(leaders, 1) << "two candidates lead at once";
      if (leader < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_GE(leader, 0) << "no leader within 10 s in round " << round;
    if (rejoin >= 0) {
      ASSERT_EQ(rlock_election_campaign(elections[rejoin].get(), on_elected, on_revoked,
                                        seen[rejoin].get()),
                RLOCK_OK);
    }
    ++times_led[leader];
    int64_t term = 0;
    ASSERT_EQ(rlock_election_term(&term, elections[leader].get()), RLOCK_OK);
    EXPECT_GT(term, last_term) << "terms must grow with every new leader";
    last_term = term;
    int accepted = -1;
    const std::string value = std::to_string(leader);
    ASSERT_EQ(rlock_fenced_write(&accepted, clients[leader].get(), resource.data(), resource.size(),
                                 value.data(), value.size(), term),
              RLOCK_OK);
    EXPECT_EQ(accepted, 1) << "the store refused the current leader";
    // The hash Redisson reads: one owner field, and the fenced lock's token counter.
    EXPECT_EQ(redis.hgetall(name).size(), 1u);
    EXPECT_EQ(redis.ok({"GET", token_key(name)}).str, std::to_string(term));
    for (int i = 0; i < 3; ++i) {
      int64_t t = 0;
      if (i != leader) {
        EXPECT_EQ(rlock_election_term(&t, elections[i].get()), RLOCK_ENOTHELD);
      }
    }
    ASSERT_EQ(rlock_election_resign(elections[leader].get()), RLOCK_OK) << it::last_error();
    EXPECT_EQ(rlock_election_is_leader(elections[leader].get()), 0);
    auto events = seen[leader]->copy();
    ASSERT_FALSE(events.empty());
    EXPECT_FALSE(events.back().elected);
    EXPECT_EQ(events.back().term, term);
    EXPECT_EQ(events.back().reason, RLOCK_REVOKED_RESIGNED);
    rejoin = leader;  // back in the race once another leads (a resign that campaigns at once
                      // may win again: the lock is not fair)
  }
  EXPECT_GE(times_led.size(), 2u) << "the lead never moved to another candidate";
  // Callbacks of each candidate alternate elected / revoked, terms matching.
  for (int i = 0; i < 3; ++i) {
    auto events = seen[i]->copy();
    for (size_t k = 0; k < events.size(); ++k) {
      EXPECT_EQ(events[k].elected, k % 2 == 0) << "candidate " << i << " event " << k;
      if (k % 2 == 1) {
        EXPECT_EQ(events[k].term, events[k - 1].term);
      }
    }
  }
  elections.clear();
  redis.del(token_key(name));
  redis.del(resource);
  redis.del("rlock_fence:{" + resource + "}");
}

// The key deleted under the leader: told GONE, and with requeue it campaigns again and wins a
// new, higher term (it is the only candidate).
TEST(Election, DeletedKeyRevokesAndRequeues) {
  const std::string name = unique_name("election-gone");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client(it::ClientSettings{1500, 0, 0});
  Seen seen;  // outlives the election, whose end may still call back
  Election election = make_election(client.get(), name);
  ASSERT_EQ(rlock_election_campaign(election.get(), on_elected, on_revoked, &seen), RLOCK_OK);
  const int64_t t1 = elected_term(seen, 5000);
  ASSERT_GT(t1, 0);
  ASSERT_EQ(rlock_election_campaign(election.get(), on_elected, on_revoked, &seen), RLOCK_EINVAL)
      << "a second campaign of one election";
  redis.del(name);
  const int revoked =
      seen.wait_for([](const Seen::Event& e) { return !e.elected; }, 5000);  // next renewal
  ASSERT_GE(revoked, 0) << "the deleted key was not noticed";
  EXPECT_EQ(seen.copy()[revoked].reason, RLOCK_REVOKED_GONE);
  EXPECT_EQ(seen.copy()[revoked].term, t1);
  const int64_t t2 = elected_term(seen, 5000, revoked + 1);
  EXPECT_GT(t2, t1);
  EXPECT_EQ(rlock_election_is_leader(election.get()), 1);
  election.reset();  // resigns
  EXPECT_EQ(redis.exists(name), 0) << "freeing the leader's election did not release the lock";
  redis.del(token_key(name));
}

// Without requeue the election stops after a loss.
TEST(Election, NoRequeueStopsAfterLoss) {
  const std::string name = unique_name("election-norequeue");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client(it::ClientSettings{1500, 0, 0});
  Seen seen;  // outlives the election, whose end may still call back
  Election election = make_election(client.get(), name, 0);
  ASSERT_EQ(rlock_election_campaign(election.get(), on_elected, on_revoked, &seen), RLOCK_OK);
  ASSERT_GT(elected_term(seen, 5000), 0);
  redis.del(name);
  ASSERT_GE(seen.wait_for([](const Seen::Event& e) { return !e.elected; }, 5000), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(seen.copy().size(), 2u) << "campaigned again without requeue";
  EXPECT_EQ(redis.exists(name), 0);
  ASSERT_EQ(rlock_election_campaign(election.get(), on_elected, on_revoked, &seen), RLOCK_OK)
      << "a stopped election campaigns again on request";
  EXPECT_GT(elected_term(seen, 5000, 2), 0);
  redis.del(token_key(name));
}

// A leader whose lease runs out while Redis stalls, and who sees it first (is_leader turns
// false) and resigns, is told the loss (UNREACHABLE), never RESIGNED: the leadership ended
// before the resign. Whichever comes first, the resign or the watchdog, one revocation says so.
TEST(Election, ResigningALapsedLeadershipIsToldItsLoss) {
  PrivateRedis server({"--enable-debug-command", "yes"});
  it::Client client = it::make_client(server.tcp_url(), it::ClientSettings{900, 0, 0});
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string name = unique_name("election-lapsed");
    Seen seen;
    Election election = make_election(client.get(), name, 0);
    ASSERT_EQ(rlock_election_campaign(election.get(), on_elected, on_revoked, &seen), RLOCK_OK);
    ASSERT_GT(elected_term(seen, 5000), 0);
    std::thread stall([&] {
      RedisConn admin(server.admin_url(), 10000);
      admin.command({"DEBUG", "SLEEP", "2"});
    });
    const auto start = Clock::now();
    while (rlock_election_is_leader(election.get()) == 1 &&
           Clock::now() - start < std::chrono::seconds(5)) {
    }
    (void)rlock_election_resign(election.get());
    stall.join();
    const int i = seen.wait_for([](const Seen::Event& e) { return !e.elected; }, 5000);
    ASSERT_GE(i, 0) << "never told";
    const std::vector<Seen::Event> events = seen.copy();
    EXPECT_EQ(events[static_cast<size_t>(i)].reason, RLOCK_REVOKED_UNREACHABLE);
    EXPECT_EQ(std::count_if(events.begin(), events.end(),
                            [](const Seen::Event& e) { return !e.elected; }),
              1);
  }
}

// Freeing the client tells the leader CLOSED before the lock is released, and the next
// candidate takes over at once (not after the lease).
TEST(Election, ClientFreeRevokesClosedAndHandsOver) {
  const std::string name = unique_name("election-close");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  it::Client c1 = it::make_client(it::ClientSettings{30000, 0, 0});
  it::Client c2 = it::make_client(it::ClientSettings{30000, 0, 0});
  Seen s1, s2;  // outlives the election, whose end may still call back
  Election e1 = make_election(c1.get(), name);
  ASSERT_EQ(rlock_election_campaign(e1.get(), on_elected, on_revoked, &s1), RLOCK_OK);
  const int64_t t1 = elected_term(s1, 5000);
  ASSERT_GT(t1, 0);
  Election e2 = make_election(c2.get(), name);
  ASSERT_EQ(rlock_election_campaign(e2.get(), on_elected, on_revoked, &s2), RLOCK_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(rlock_election_is_leader(e2.get()), 0);
  const auto freed = Clock::now();
  c1.reset();
  auto events = s1.copy();
  ASSERT_EQ(events.size(), 2u) << "revoked must have run when rlock_client_free returns";
  EXPECT_EQ(events[1].reason, RLOCK_REVOKED_CLOSED);
  EXPECT_EQ(events[1].term, t1);
  EXPECT_EQ(rlock_election_is_leader(e1.get()), 0);
  const int64_t t2 = elected_term(s2, 5000);
  EXPECT_GT(t2, t1);
  EXPECT_LT(Clock::now() - freed, std::chrono::seconds(5)) << "took over only by the lease";
  EXPECT_EQ(rlock_election_campaign(e1.get(), on_elected, on_revoked, &s1), RLOCK_ECLOSED);
  e2.reset();
  redis.del(token_key(name));
}

// A revoked(CLOSED) callback that frees its election (as a binding's close may, on the thread
// told) must not cost the hold's release: rlock_client_free still gives the key back at once.
void free_when_closed(rlock_election* election, int64_t, rlock_revoke_reason reason,
                      void* payload) {
  if (reason != RLOCK_REVOKED_CLOSED) return;
  rlock_election_free(election);
  static_cast<std::atomic<int>*>(payload)->fetch_add(1);
}

TEST(Election, FreedInItsClosedCallbackStillReleasedAtClientFree) {
  const std::string name = unique_name("election-free-closed");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  it::Client c1 = it::make_client(it::ClientSettings{30000, 0, 0});
  Seen seen;
  std::atomic<int> freed{0};
  Election e1 = make_election(c1.get(), name);
  // Elected is seen through the key; the callback pair is this test's.
  ASSERT_EQ(rlock_election_campaign(e1.get(), nullptr, free_when_closed, &freed), RLOCK_OK);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (rlock_election_is_leader(e1.get()) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(rlock_election_is_leader(e1.get()), 1);
  ASSERT_EQ(redis.exists(name), 1);
  (void)e1.release();  // the callback frees it
  c1.reset();
  EXPECT_EQ(freed.load(), 1);
  EXPECT_EQ(redis.exists(name), 0) << "the freed election's hold was left to its 30 s lease";
  redis.del(token_key(name));
}

// A callback may resign its own election: elected -> resign -> revoked RESIGNED, on one thread.
void resign_at_once(rlock_election* election, int64_t term, void* payload) {
  on_elected(election, term, payload);
  EXPECT_EQ(rlock_election_resign(election), RLOCK_OK);
}

TEST(Election, ResignFromTheElectedCallback) {
  const std::string name = unique_name("election-resign-cb");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  Seen seen;  // outlives the election, whose end may still call back
  Election election = make_election(client.get(), name);
  ASSERT_EQ(rlock_election_campaign(election.get(), resign_at_once, on_revoked, &seen), RLOCK_OK);
  ASSERT_GE(seen.wait_for([](const Seen::Event& e) { return !e.elected; }, 5000), 0);
  auto events = seen.copy();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].reason, RLOCK_REVOKED_RESIGNED);
  // revoked runs before the release: the key goes right after it.
  const auto give_up = Clock::now() + std::chrono::seconds(2);
  while (redis.exists(name) && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(redis.exists(name), 0) << "the resign from the callback did not release";
  redis.del(token_key(name));
}

// A name whose key is not a lock: the campaign ends with FAILED and a message naming it.
TEST(Election, WrongTypeKeyFailsTheCampaign) {
  const std::string name = unique_name("election-wrongtype");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  redis.ok({"SET", name, "not a lock"});
  it::Client client = it::make_client();
  Seen seen;  // outlives the election, whose end may still call back
  Election election = make_election(client.get(), name);
  ASSERT_EQ(rlock_election_campaign(election.get(), on_elected, on_revoked, &seen), RLOCK_OK);
  const int i = seen.wait_for([](const Seen::Event& e) { return !e.elected; }, 5000);
  ASSERT_GE(i, 0);
  auto e = seen.copy()[i];
  EXPECT_EQ(e.term, 0);
  EXPECT_EQ(e.reason, RLOCK_REVOKED_FAILED);
  EXPECT_NE(e.error.find("not a lock"), std::string::npos) << e.error;
  EXPECT_EQ(redis.ok({"GET", name}).str, "not a lock");
  redis.del(name);
}

TEST(Election, BadArguments) {
  it::Client client = it::make_client();
  rlock_election* e = nullptr;
  EXPECT_EQ(rlock_election_new(&e, client.get(), nullptr, 0, nullptr), RLOCK_EINVAL);
  EXPECT_EQ(rlock_election_new(&e, client.get(), "", 0, nullptr), RLOCK_EINVAL);
  EXPECT_EQ(rlock_election_new(nullptr, client.get(), "x", 1, nullptr), RLOCK_EINVAL);
  EXPECT_EQ(rlock_election_new(&e, nullptr, "x", 1, nullptr), RLOCK_EINVAL);
  rlock_election_options opts = RLOCK_ELECTION_OPTIONS_INIT;
  opts.requeue = 2;
  EXPECT_EQ(rlock_election_new(&e, client.get(), "x", 1, &opts), RLOCK_EINVAL);
  EXPECT_NE(std::string(rlock_last_error()->message).find("requeue"), std::string::npos);
  opts = RLOCK_ELECTION_OPTIONS_INIT;
  opts.version = 99;
  EXPECT_EQ(rlock_election_new(&e, client.get(), "x", 1, &opts), RLOCK_EVERSION);
  EXPECT_EQ(rlock_election_options_init(&opts, 1), RLOCK_OK);
  EXPECT_EQ(opts.requeue, 1);
  EXPECT_EQ(rlock_election_campaign(nullptr, nullptr, nullptr, nullptr), RLOCK_EINVAL);
  EXPECT_EQ(rlock_election_resign(nullptr), RLOCK_EINVAL);
  EXPECT_EQ(rlock_election_is_leader(nullptr), 0);
  int64_t term = -1;
  EXPECT_EQ(rlock_election_term(&term, nullptr), RLOCK_EINVAL);
  rlock_election_free(nullptr);
  ASSERT_EQ(rlock_election_new(&e, client.get(), "x", 1, nullptr), RLOCK_OK);
  EXPECT_EQ(rlock_election_term(&term, e), RLOCK_ENOTHELD);
  EXPECT_EQ(rlock_election_resign(e), RLOCK_OK) << "resign of an idle election";
  rlock_election_free(e);
  EXPECT_EQ(rlock_election_resign(e), RLOCK_EBADHANDLE);
}

// FAULTS.md: a leader killed (SIGKILL) is replaced within the lease + 200 ms; a leader paused
// (SIGSTOP) past its lease is replaced likewise, and once resumed is told it lost before any
// write of its lands: the store keeps the new leader's value.
TEST(Election, KilledAndPausedLeaderAreReplaced) {
  constexpr int64_t kLeaseMs = 1000;
  const std::string name = unique_name("election-kill");
  const std::string resource = name + "-store";
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client(it::ClientSettings{kLeaseMs, 0, 0});
  const int64_t margin_ms = 200 + 10 * round_trip_ms(client.get(), name);

  for (int signal_no : {SIGKILL, SIGSTOP}) {
    SCOPED_TRACE(signal_no == SIGKILL ? "SIGKILL" : "SIGSTOP");
    Process worker(
        {RLOCK_IT_WORKER, "elect", it::server_url(), name, resource, std::to_string(kLeaseMs)});
    std::string line;
    ASSERT_TRUE(worker.read_line(&line, 10000)) << "the worker was not elected";
    ASSERT_EQ(line.rfind("elected ", 0), 0u) << line;
    const int64_t t1 = std::stoll(line.substr(8));
    ASSERT_TRUE(worker.read_line(&line, 5000));
    ASSERT_EQ(line.rfind("write " + std::to_string(t1) + " accepted", 0), 0u) << line;

    Seen seen;  // outlives the election, whose end may still call back
    Election candidate = make_election(client.get(), name);
    ASSERT_EQ(rlock_election_campaign(candidate.get(), on_elected, on_revoked, &seen), RLOCK_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(rlock_election_is_leader(candidate.get()), 0);

    const auto stopped = Clock::now();
    worker.kill(signal_no);
    const int64_t t2 = elected_term(seen, kLeaseMs + 10000);
    const auto took_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stopped).count();
    ASSERT_GT(t2, t1);
    std::printf("failover after %s: %lld ms (bound %lld)\n",
                signal_no == SIGKILL ? "SIGKILL" : "SIGSTOP", static_cast<long long>(took_ms),
                static_cast<long long>(kLeaseMs + margin_ms));
    EXPECT_LE(took_ms, kLeaseMs + margin_ms);
    const std::string mine = "test:" + std::to_string(t2);
    int accepted = -1;
    ASSERT_EQ(rlock_fenced_write(&accepted, client.get(), resource.data(), resource.size(),
                                 mine.data(), mine.size(), t2),
              RLOCK_OK);
    EXPECT_EQ(accepted, 1);

    if (signal_no == SIGSTOP) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      worker.kill(SIGCONT);
      bool revoked = false;
      const auto give_up = Clock::now() + std::chrono::seconds(5);
      while (!revoked && Clock::now() < give_up && worker.read_line(&line, 5000)) {
        if (line.rfind("write " + std::to_string(t1) + " accepted", 0) == 0) {
          ADD_FAILURE() << "the paused leader wrote after it was replaced: " << line;
        }
        if (line.rfind("revoked " + std::to_string(t1) + " ", 0) == 0) revoked = true;
      }
      EXPECT_TRUE(revoked) << "the resumed leader was not told it lost leadership";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // its loop keeps running
      worker.kill(SIGKILL);
      while (worker.read_line(&line, 2000)) {
        EXPECT_NE(line.rfind("write " + std::to_string(t1) + " accepted", 0), 0u) << line;
      }
    }
    EXPECT_EQ(redis.ok({"GET", resource}).str, mine) << "a write of the old leader landed";
    EXPECT_EQ(rlock_election_is_leader(candidate.get()), 1);
    candidate.reset();
  }
  redis.del(token_key(name));
  redis.del(resource);
  redis.del("rlock_fence:{" + resource + "}");
}

// Freeing candidates while the lead moves among them: a grant that races a free is given back
// before rlock_election_free returns, so nothing is left held once they are all freed.
TEST(Election, FreeingEveryCandidateLeavesNothingHeld) {
  const std::string name = unique_name("election-free-all");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  std::vector<it::Client> clients;
  for (int i = 0; i < 2; ++i) clients.push_back(it::make_client());
  for (int round = 0; round < 5; ++round) {
    Seen seen;  // outlives the elections
    std::vector<Election> elections;
    for (int i = 0; i < 40; ++i) {
      elections.push_back(make_election(clients[static_cast<size_t>(i % 2)].get(), name));
      ASSERT_EQ(rlock_election_campaign(elections.back().get(), on_elected, on_revoked, &seen),
                RLOCK_OK);
    }
    ASSERT_GT(elected_term(seen, 5000), 0);
    elections.clear();  // each leader's free wakes the next candidate, freed just after
    EXPECT_EQ(redis.exists(name), 0) << "a freed candidate still holds the lock, round " << round;
    redis.del(name);
  }
  redis.del(token_key(name));
}

namespace {

// The client's ELECTED and REVOKED events, in order.
struct LeaderEvents {
  struct Seen {
    rlock_event_kind kind;
    std::string name, owner;
    int64_t token;
    int reason;
  };
  std::mutex mutex;
  std::vector<Seen> events;
  std::vector<Seen> wait_for_count(size_t n, int64_t timeout_ms) {
    const auto give_up = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (events.size() >= n || Clock::now() >= give_up) return events;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
};

void on_leader_event(const rlock_event* e, void* payload) {
  if (e->kind != RLOCK_EVENT_ELECTED && e->kind != RLOCK_EVENT_REVOKED) return;
  auto* log = static_cast<LeaderEvents*>(payload);
  std::lock_guard<std::mutex> lock(log->mutex);
  log->events.push_back({e->kind, std::string(e->name, e->name_len),
                         std::string(e->owner, e->owner_len), e->token, e->reason});
}

bool wait_until(const std::function<bool()>& done, int64_t timeout_ms) {
  const auto give_up = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (Clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

// Statistics version 2 and the ELECTED / REVOKED events, for an election with no callbacks:
// a win, a loss (the key deleted: GONE) and a requeued win, then a resign.
TEST(Election, CountedAndReportedWithoutCallbacks) {
  const std::string name = unique_name("election-observed");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client(it::ClientSettings{1500, 0, 0});
  LeaderEvents log;  // outlives the client
  ASSERT_EQ(rlock_client_set_event_callback(client.get(), on_leader_event, &log), RLOCK_OK);
  Election election = make_election(client.get(), name);

  rlock_stats st = it::read_stats(client.get());
  EXPECT_EQ(st.enabled, 1);
  EXPECT_EQ(st.elections_won, 0u);
  EXPECT_EQ(st.leaders, 0);
  EXPECT_EQ(st.leaderships_revoked, 0u);

  ASSERT_EQ(rlock_election_campaign(election.get(), nullptr, nullptr, nullptr), RLOCK_OK);
  ASSERT_TRUE(wait_until([&] { return rlock_election_is_leader(election.get()) == 1; }, 5000));
  int64_t t1 = 0;
  ASSERT_EQ(rlock_election_term(&t1, election.get()), RLOCK_OK);
  st = it::read_stats(client.get());
  EXPECT_EQ(st.elections_won, 1u);
  EXPECT_EQ(st.leaders, 1);
  EXPECT_EQ(st.leaderships_revoked, 0u);

  // A version 1 caller: its struct ends before the election fields, which stay untouched.
  rlock_stats v1;
  std::memset(&v1, 0x5a, sizeof v1);
  v1.version = 1;
  ASSERT_EQ(rlock_client_stats(&v1, client.get()), RLOCK_OK);
  EXPECT_EQ(v1.enabled, 1);
  EXPECT_EQ(v1.elections_won, 0x5a5a5a5a5a5a5a5aull) << "a version 1 read wrote past its struct";
  EXPECT_EQ(v1.leaders, 0x5a5a5a5a5a5a5a5all);

  // Lost (GONE) at the next renewal, then won again: the only candidate.
  redis.del(name);
  ASSERT_TRUE(wait_until(
      [&] {
        const rlock_stats s = it::read_stats(client.get());
        return s.elections_won == 2 && s.leaders == 1;
      },
      5000))
      << "no loss and second win seen in the statistics";
  int64_t t2 = 0;
  ASSERT_EQ(rlock_election_term(&t2, election.get()), RLOCK_OK);
  EXPECT_GT(t2, t1);

  ASSERT_EQ(rlock_election_resign(election.get()), RLOCK_OK) << it::last_error();
  st = it::read_stats(client.get());
  EXPECT_EQ(st.elections_won, 2u);
  EXPECT_EQ(st.leaders, 0);
  EXPECT_EQ(st.leaderships_revoked, 2u);
  for (int r = 0; r < RLOCK_STATS_REVOKE_REASONS; ++r) {
    const uint64_t want = r == RLOCK_REVOKED_GONE || r == RLOCK_REVOKED_RESIGNED ? 1 : 0;
    EXPECT_EQ(st.leaderships_revoked_by_reason[r], want) << "reason " << r;
  }

  const auto events = log.wait_for_count(4, 5000);
  ASSERT_EQ(events.size(), 4u);
  const rlock_event_kind kinds[] = {RLOCK_EVENT_ELECTED, RLOCK_EVENT_REVOKED, RLOCK_EVENT_ELECTED,
                                    RLOCK_EVENT_REVOKED};
  const int64_t terms[] = {t1, t1, t2, t2};
  const int reasons[] = {0, RLOCK_REVOKED_GONE, 0, RLOCK_REVOKED_RESIGNED};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(events[i].kind, kinds[i]) << "event " << i;
    EXPECT_EQ(events[i].token, terms[i]) << "event " << i;
    EXPECT_EQ(events[i].reason, reasons[i]) << "event " << i;
    EXPECT_EQ(events[i].name, name);
    EXPECT_FALSE(events[i].owner.empty());
    EXPECT_EQ(events[i].owner, events[0].owner) << "one election, one owner";
  }
  election.reset();
  redis.del(token_key(name));
}

// With statistics off, leaderships are not counted (events still come).
TEST(Election, NotCountedWithStatsOff) {
  const std::string name = unique_name("election-stats-off");
  LockKeys keys(name);
  RedisConn redis(test_redis_url());
  const std::string url = it::server_url();
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.stats = RLOCK_STATS_OFF;
  rlock_client* raw = nullptr;
  ASSERT_EQ(rlock_client_new(&raw, &opts), RLOCK_OK) << it::last_error();
  it::Client client(raw);
  LeaderEvents log;
  ASSERT_EQ(rlock_client_set_event_callback(client.get(), on_leader_event, &log), RLOCK_OK);
  Election election = make_election(client.get(), name);
  ASSERT_EQ(rlock_election_campaign(election.get(), nullptr, nullptr, nullptr), RLOCK_OK);
  ASSERT_TRUE(wait_until([&] { return rlock_election_is_leader(election.get()) == 1; }, 5000));
  const rlock_stats st = it::read_stats(client.get());
  EXPECT_EQ(st.enabled, 0);
  EXPECT_EQ(st.elections_won, 0u);
  EXPECT_EQ(st.leaders, 0);
  ASSERT_EQ(rlock_election_resign(election.get()), RLOCK_OK);
  EXPECT_EQ(log.wait_for_count(2, 5000).size(), 2u);
  election.reset();
  redis.del(token_key(name));
}
