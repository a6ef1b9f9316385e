// What every asynchronous call shares: a task of one step on a library thread, and the handing
// of an outcome to the caller's completion.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "rlock/core/engine.hpp"
#include "rlock/core/error.hpp"

namespace rlock::core {

// A task of one step: a release, an extend or a group member's call on a library thread.
class OneStep final : public Engine::Task {
 public:
  OneStep(std::shared_ptr<Engine> engine, std::function<void()> body)
      : Task(std::move(engine)), body_(std::move(body)) {}
  void step() override {
    body_();
    body_ = nullptr;
    done();
  }
  void close() override {}  // runs anyway: the client's state answers it (closed)

 private:
  std::function<void()> body_;
};

// Runs a completion with a failure's message as the thread's last error. Nothing it throws gets
// out: it runs on a library thread, and there is nobody to tell.
template <typename Call>
void deliver(int code, const std::string& message, bool transient, Call&& call) noexcept {
  try {
    if (code != kOk) set_last_error(code, message, transient);
    call();
  } catch (...) {
  }
}

}  // namespace rlock::core
