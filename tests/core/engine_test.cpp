// The waiting engine on its own (no Redis): tasks' steps run one at a time, timers and wake-ups
// run them, the library threads stay within their budget, blocking callers run their own
// steps, and stop() ends every task exactly once. Also run under TSan (label "threads").
#include "rlock/core/engine.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rlock::core {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A task driven by a function of its step number; counts what happened to it.
class Probe final : public Engine::Task {
 public:
  using Plan = std::function<void(Probe&, int step)>;
  Probe(std::shared_ptr<Engine> engine, Plan plan)
      : Task(std::move(engine)), plan_(std::move(plan)) {}

  void step() override {
    if (running_.fetch_add(1) != 0) overlapped_.store(true);
    last_thread_ = std::this_thread::get_id();
    if (closed_.load()) {
      finish();
    } else {
      plan_(*this, steps_++);
    }
    running_.fetch_sub(1);
  }
  void close() override {
    closes_.fetch_add(1);
    closed_.store(true);
    wake();
  }

  void sleep_for(milliseconds ms) { sleep_until(Clock::now() + ms); }
  void finish() {
    finished_.fetch_add(1);
    done();
  }
  void poke() { wake(); }  // from another thread

  int steps() const { return steps_; }
  int finished() const { return finished_.load(); }
  int closes() const { return closes_.load(); }
  bool overlapped() const { return overlapped_.load(); }
  std::thread::id last_thread() const { return last_thread_; }

 private:
  Plan plan_;
  int steps_ = 0;
  std::atomic<int> running_{0};
  std::atomic<bool> overlapped_{false};
  std::atomic<int> finished_{0};
  std::atomic<int> closes_{0};
  std::atomic<bool> closed_{false};
  std::thread::id last_thread_;
};

bool eventually(const std::function<bool()>& condition, int64_t timeout_ms = 10000) {
  const auto until = Clock::now() + milliseconds(timeout_ms);
  while (!condition()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

TEST(Engine, TimersRunStepsAndTheThreadsStayWithinTheBudget) {
  auto engine = std::make_shared<Engine>();
  std::vector<std::shared_ptr<Probe>> probes;
  for (int i = 0; i < 2000; ++i) {
    probes.push_back(std::make_shared<Probe>(engine, [i](Probe& p, int step) {
      if (step < 3) {
        p.sleep_for(milliseconds(5 + i % 20));
      } else {
        p.finish();
      }
    }));
    ASSERT_TRUE(engine->start(probes.back()));
  }
  ASSERT_TRUE(eventually([&] { return engine->task_count() == 0; }));
  for (auto& p : probes) {
    EXPECT_EQ(p->finished(), 1);
    EXPECT_EQ(p->steps(), 4);
    EXPECT_FALSE(p->overlapped());
  }
  EXPECT_GE(engine->worker_count(), 1);
  EXPECT_LE(engine->worker_count(), Engine::kMaxWorkers);
  engine->stop();
}

TEST(Engine, AWakeUpCutsASleepShortAndOneDuringAStepRunsItAgain) {
  auto engine = std::make_shared<Engine>();
  std::atomic<int> woken_steps{0};
  auto probe = std::make_shared<Probe>(engine, [&](Probe& p, int step) {
    if (step == 0) {
      p.sleep_for(milliseconds(60000));  // only a wake-up can end this within the test
    } else if (step == 1) {
      woken_steps++;
      p.poke();  // woken while running: runs again after this step
    } else {
      woken_steps++;
      p.finish();
    }
  });
  ASSERT_TRUE(engine->start(probe));
  ASSERT_TRUE(eventually([&] { return probe->steps() == 1; }));
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(probe->steps(), 1);
  probe->poke();
  ASSERT_TRUE(eventually([&] { return probe->finished() == 1; }));
  EXPECT_EQ(woken_steps.load(), 2);
  engine->stop();
}

TEST(Engine, RunHereRunsEveryStepOnTheCallingThread) {
  auto engine = std::make_shared<Engine>();
  std::vector<std::thread::id> threads;
  auto probe = std::make_shared<Probe>(engine, [&](Probe& p, int step) {
    threads.push_back(std::this_thread::get_id());
    if (step < 5) {
      p.sleep_for(milliseconds(2));
    } else {
      p.finish();
    }
  });
  ASSERT_TRUE(engine->run_here(probe));
  EXPECT_EQ(probe->finished(), 1);
  ASSERT_EQ(threads.size(), 6u);
  for (auto id : threads) EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_EQ(engine->worker_count(), 0) << "a blocking caller needs no library thread";
  engine->stop();
}

// Tasks that only wait for a wake-up (no timer) are owned by the engine meanwhile; stop()
// closes each one once, they end, and it returns only then. Later starts are refused.
TEST(Engine, StopClosesEveryTaskOnceAndWaitsForThem) {
  auto engine = std::make_shared<Engine>();
  std::vector<std::weak_ptr<Probe>> watched;
  std::vector<std::shared_ptr<Probe>> kept;
  for (int i = 0; i < 300; ++i) {
    auto p = std::make_shared<Probe>(engine, [](Probe&, int) {});  // sleeps until woken
    ASSERT_TRUE(engine->start(p));
    kept.push_back(p);
  }
  std::atomic<bool> blocked_done{false};
  std::thread blocked([&] {
    auto p = std::make_shared<Probe>(engine, [](Probe&, int) {});
    engine->run_here(p);
    blocked_done.store(p->finished() == 1 && p->closes() == 1);
  });
  ASSERT_TRUE(eventually([&] { return engine->task_count() == 301; }));
  for (auto& p : kept) watched.push_back(p);
  kept.clear();  // the engine alone owns them now
  for (auto& w : watched) EXPECT_FALSE(w.expired());
  engine->stop();
  blocked.join();
  EXPECT_TRUE(blocked_done.load());
  EXPECT_EQ(engine->task_count(), 0u);
  for (auto& w : watched) EXPECT_TRUE(w.expired()) << "a task outlived stop()";
  auto late = std::make_shared<Probe>(engine, [](Probe& p, int) { p.finish(); });
  EXPECT_FALSE(engine->start(late));
  EXPECT_FALSE(engine->run_here(late));
}

// A step may stop the engine (a completion freeing its client): no deadlock, every task ends.
TEST(Engine, AStepMayStopItsOwnEngine) {
  auto engine = std::make_shared<Engine>();
  std::vector<std::shared_ptr<Probe>> probes;
  for (int i = 0; i < 20; ++i) {
    probes.push_back(std::make_shared<Probe>(engine, [](Probe&, int) {}));
    ASSERT_TRUE(engine->start(probes.back()));
  }
  auto stopper = std::make_shared<Probe>(engine, [&](Probe& p, int) {
    engine->stop();
    p.finish();
  });
  ASSERT_TRUE(engine->start(stopper));
  ASSERT_TRUE(eventually([&] { return engine->task_count() == 0; }));
  for (auto& p : probes) EXPECT_EQ(p->finished(), 1);
  engine->stop();  // from outside now: joins what is left
}

// The engine's owner (a client) may be destroyed by a step on the engine's own worker: it
// stops the engine from there, and the engine goes once its workers are done.
TEST(Engine, ItsOwnerMayGoOnAWorker) {
  struct Owner {
    std::shared_ptr<Engine> engine = std::make_shared<Engine>();
    ~Owner() { engine->stop(); }
  };
  auto owner = std::make_shared<Owner>();
  std::weak_ptr<Engine> weak = owner->engine;
  std::atomic<bool> ran{false};
  auto last = std::make_shared<std::shared_ptr<Owner>>(owner);
  auto probe = std::make_shared<Probe>(owner->engine, [last, &ran](Probe& p, int) {
    p.finish();
    last->reset();  // ~Owner here, on the worker
    ran.store(true);
  });
  owner.reset();
  ASSERT_TRUE(weak.lock()->start(probe));
  probe.reset();
  ASSERT_TRUE(eventually([&] { return ran.load(); }));
  EXPECT_TRUE(eventually([&] { return weak.expired(); })) << "the engine never went";
}

// Wake-ups from many threads racing timers, finishes and stop: each task ends exactly once
// and no two steps of one task overlap.
TEST(Engine, WakeUpsRacingTimersAndStopEndEachTaskOnce) {
  for (int round = 0; round < 20; ++round) {
    auto engine = std::make_shared<Engine>();
    std::vector<std::shared_ptr<Probe>> probes;
    for (int i = 0; i < 100; ++i) {
      probes.push_back(std::make_shared<Probe>(engine, [i](Probe& p, int step) {
        if (step > 3 + i % 7) {
          p.finish();
        } else {
          p.sleep_for(milliseconds(i % 3));
        }
      }));
      ASSERT_TRUE(engine->start(probes.back()));
    }
    std::atomic<bool> go{true};
    std::vector<std::thread> wakers;
    for (int t = 0; t < 3; ++t) {
      wakers.emplace_back([&, t] {
        size_t k = static_cast<size_t>(t);
        while (go.load()) {
          probes[k % probes.size()]->poke();
          k += 7;
        }
      });
    }
    std::this_thread::sleep_for(milliseconds(round % 5));
    engine->stop();
    go.store(false);
    for (auto& w : wakers) w.join();
    for (auto& p : probes) {
      EXPECT_EQ(p->finished(), 1);
      EXPECT_FALSE(p->overlapped());
      EXPECT_LE(p->closes(), 1);
    }
  }
}

}  // namespace
}  // namespace rlock::core
