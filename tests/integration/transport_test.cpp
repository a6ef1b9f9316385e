// The pipelined transport against real redis-servers: many threads share few connections, so
// the one thing that must never happen is a reply reaching the wrong caller. Also: a connection
// that dies or stalls fails only the commands on it, and the next command gets a new one.
#include "rlock/core/transport.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rlock/core/config.hpp"
#include "rlock/core/error.hpp"
#include "test_redis.hpp"

namespace core = rlock::core;
using rlock_test::PrivateRedis;
using rlock_test::RedisConn;

namespace {

std::unique_ptr<core::PipelinedTransport> make_transport(const std::string& url, int connections,
                                                         int64_t command_timeout_ms = 3000) {
  core::ClientConfig config;
  config.endpoint = core::parse_url(url);
  config.pool_size = connections;
  config.command_timeout_ms = command_timeout_ms;
  auto transport = std::make_unique<core::PipelinedTransport>(config);
  transport->warm_up();
  return transport;
}

int64_t mono_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Counts the normal clients connected to the server, minus the asking connection.
int64_t other_clients(RedisConn& admin) {
  std::string list = admin.ok({"CLIENT", "LIST", "TYPE", "normal"}).str;
  int64_t lines = 0;
  for (char c : list) lines += c == '\n';
  return lines - 1;
}

TEST(Transport, EveryReplyReachesItsOwnCaller) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  // One connection for 16 threads: their commands interleave on one pipeline.
  auto transport = make_transport(server.tcp_url(), 1);
  constexpr int kThreads = 16;
  constexpr int kCalls = 1500;
  std::atomic<int> wrong{0};
  std::atomic<int> calls{0};
  std::mutex first_wrong_mutex;
  std::string first_wrong;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        // Replies of different shapes and sizes, so a misdelivery cannot pass by chance.
        std::string mine = std::to_string(t) + ":" + std::to_string(i) + std::string(i % 97, 'x');
        core::Reply r = i % 3 == 0
                            ? transport->run({"ECHO", mine})
                            : transport->run({"EVAL", "return {ARGV[1], #ARGV[1]}", "0", mine});
        bool ok = i % 3 == 0 ? r.type == core::Reply::Type::String && r.str == mine
                             : r.type == core::Reply::Type::Array && r.elements.size() == 2 &&
                                   r.elements[0].str == mine &&
                                   r.elements[1].integer == static_cast<int64_t>(mine.size());
        ++calls;
        if (!ok && wrong.fetch_add(1) == 0) {
          std::lock_guard<std::mutex> g(first_wrong_mutex);
          first_wrong = "thread " + std::to_string(t) + " call " + std::to_string(i) +
                        " got a reply that is not its own";
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(calls.load(), kThreads * kCalls);
  EXPECT_EQ(wrong.load(), 0) << first_wrong;
  EXPECT_EQ(other_clients(admin), 1) << "16 threads should have shared the one connection";
}

TEST(Transport, KilledConnectionFailsOnlyItsCommandsAndIsReplaced) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  auto transport = make_transport(server.tcp_url(), 2);
  std::atomic<bool> stop{false};
  std::atomic<int> good{0}, conn_errors{0}, other_errors{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        std::string mine = std::to_string(t) + ":" + std::to_string(i);
        try {
          core::Reply r = transport->run({"ECHO", mine});
          if (r.str == mine)
            ++good;
          else
            ++wrong;
        } catch (const core::Error& e) {
          if (e.code() == core::kConn)
            ++conn_errors;
          else
            ++other_errors;
        }
      }
    });
  }
  int kills = 0;
  for (int k = 0; k < 20; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kills += static_cast<int>(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_GT(kills, 10) << "the connections were not killed under load";
  EXPECT_GT(conn_errors.load(), 0) << "commands on killed connections should fail with RLOCK_ECONN";
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_EQ(wrong.load(), 0) << "a reply reached the wrong caller after a kill";
  EXPECT_GT(good.load(), 1000);
  // After the storm every command works again, on fresh connections.
  int64_t start = mono_ms();
  EXPECT_EQ(transport->run({"ECHO", "after"}).str, "after");
  EXPECT_LT(mono_ms() - start, 1000);
}

TEST(Transport, StalledServerFailsTheCommandAfterItsTimeoutAndTheNextOneWorks) {
  PrivateRedis server({"--enable-debug-command", "yes"});
  auto transport = make_transport(server.tcp_url(), 1, 300);
  std::atomic<int> stalled_errors{0};
  int64_t start = mono_ms();
  std::thread slow([&] {
    try {
      core::Reply r = transport->run({"DEBUG", "SLEEP", "1"});
      ADD_FAILURE() << "DEBUG SLEEP returned: " << r.str;
    } catch (const core::Error& e) {
      if (e.code() == core::kConn &&
          std::string(e.what()).find("no reply within 300 ms") != std::string::npos)
        ++stalled_errors;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Queued behind the stalled command on the same connection: fails with it.
  try {
    transport->run({"PING"});
    ADD_FAILURE() << "a command behind a stalled one returned before the server woke";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::kConn) << e.what();
  }
  slow.join();
  EXPECT_EQ(stalled_errors.load(), 1);
  EXPECT_LT(mono_ms() - start, 900) << "the timeout did not bound the wait";
  // The server wakes after 1 s; then a new connection serves the next command.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100 - (mono_ms() - start)));
  EXPECT_EQ(transport->run({"PING"}).str, "PONG");
}

TEST(Transport, RetryAfterATimeoutIsNotMadeSoTheCallEndsWithinOneTimeout) {
  PrivateRedis server({"--enable-debug-command", "yes"});
  RedisConn admin(server.unix_url());
  auto transport = make_transport(server.tcp_url(), 1, 300);
  std::thread stall([&] { admin.ok({"DEBUG", "SLEEP", "1.5"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int64_t start = mono_ms();
  try {
    transport->run_retrying({"PING"});
    ADD_FAILURE() << "PING answered by a sleeping server";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::kConn) << e.what();
  }
  int64_t took = mono_ms() - start;
  stall.join();
  // A second try on a new connection would wait another 300 ms for the same sleeping server.
  EXPECT_GE(took, 290);
  EXPECT_LT(took, 550) << "the retry doubled the call's time";
}

TEST(Transport, RetryAfterAnEarlyFailureGetsTheTimeLeft) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  auto transport = make_transport(server.tcp_url(), 1, 2000);
  // The first try's connection is killed while the command waits for its reply (BLPOP on a
  // key nobody pushes); the retry on a new connection runs within what is left of the 2 s.
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  });
  int64_t start = mono_ms();
  try {
    transport->run_retrying({"BLPOP", "never-pushed", "0"});
    ADD_FAILURE() << "BLPOP returned";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::kConn) << e.what();
  }
  int64_t took = mono_ms() - start;
  killer.join();
  EXPECT_GE(took, 1900) << "no retry after the connection was killed";
  EXPECT_LT(took, 2500) << "the retry waited a whole timeout of its own";
}

TEST(Transport, ConnectionClosedWhileIdleIsReplacedWithoutAFailure) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  auto transport = make_transport(server.tcp_url(), 1);
  EXPECT_EQ(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(transport->run({"ECHO", "still here"}).str, "still here");
}

TEST(Transport, ClosedTransportRefusesCommands) {
  PrivateRedis server;
  auto transport = make_transport(server.tcp_url(), 2);
  transport->close();
  try {
    transport->run({"PING"});
    ADD_FAILURE() << "ran a command after close";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::kClosed);
  }
}

}  // namespace
