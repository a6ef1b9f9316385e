// rlock._native: a thin pybind11 layer over the C ABI. Policy (seconds, owners, asyncio,
// Ctrl-C) lives in the pure-Python package; this file maps handles, codes and callbacks.
//
// Rules kept here:
// - The GIL is released for every call that can do I/O or wait.
// - The error message is read from rlock_last_error() in the same native call that failed,
//   before control goes back to Python (the message is thread-local).
// - No Python exception or C++ exception leaves the lost-lock trampoline or an asynchronous
//   call's completion; both touch Python objects only with the GIL, and not after _shutdown().
// - A handle created before fork() is never freed in the child: its threads and mutexes did not
//   survive the fork, so freeing could hang. The child leaks it instead.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "rlock/rlock.h"

namespace py = pybind11;

namespace {

// ---- Errors --------------------------------------------------------------------------------

struct NativeError {
  int code;
  std::string message;
};

// A native call's status and, on failure, its message, read on the thread that made the call
// (messages are thread-local).
struct Outcome {
  int rc = RLOCK_OK;
  std::string message;
};

Outcome outcome_of(int rc) {
  Outcome out{rc, {}};
  if (rc != RLOCK_OK) {
    const rlock_error_info* info = rlock_last_error();
    out.message =
        (info->code == rc && info->message[0] != '\0') ? info->message : rlock_strerror(rc);
  }
  return out;
}

[[noreturn]] void throw_outcome(Outcome outcome) {
  throw NativeError{outcome.rc, std::move(outcome.message)};
}

void check(int rc) {
  if (rc != RLOCK_OK) throw_outcome(outcome_of(rc));
}

// code -> exception class, set once by rlock/_errors.py. Kept alive for the life of the process
// (never decref'd at exit, when the interpreter may be gone). The dict is a private copy that
// nothing mutates, so the borrowed lookups below stay valid without the GIL; atomics because
// any thread may raise while the module is still being imported by another.
std::atomic<PyObject*> g_error_classes{nullptr};  // dict
std::atomic<PyObject*> g_error_default{nullptr};  // class

void raise_native(const NativeError& e) {
  PyObject* cls = nullptr;
  PyObject* classes = g_error_classes.load();
  if (classes != nullptr) {
    py::int_ key(e.code);
    cls = PyDict_GetItemWithError(classes, key.ptr());  // borrowed
    if (cls == nullptr && PyErr_Occurred()) return;
  }
  if (cls == nullptr) {
    PyObject* fallback = g_error_default.load();
    cls = fallback != nullptr ? fallback : PyExc_RuntimeError;
  }
  py::object exc = py::reinterpret_borrow<py::object>(cls)(py::str(e.message));
  exc.attr("code") = e.code;
  PyErr_SetObject(cls, exc.ptr());
}

// ---- Shutdown handshake with lost-lock callbacks -------------------------------------------

// Callbacks run on the client's watchdog thread and need the GIL. Once the interpreter starts
// finalizing, a thread that asks for the GIL is terminated in the middle of C++ frames, so at
// exit Python calls _shutdown(): no new callback enters Python, and running ones are awaited.
std::atomic<bool> g_shutdown{false};
bool g_shutdown_done = false;  // under g_inflight_mu: _shutdown() returned
std::mutex g_inflight_mu;
std::condition_variable g_inflight_cv;
int g_inflight = 0;

bool forked_since(pid_t pid) { return getpid() != pid; }

// A Python callable that Python threads replace while a library thread reads it: without the GIL
// (free-threaded build) a bare read could take a reference to an object being freed. The old one
// is dropped after the mutex, as dropping it may run Python code. Nothing that needs the GIL or
// another lock is done under the mutex.
class GuardedCallback {
 public:
  void set(py::object fn) {
    py::object old;
    {
      std::lock_guard<std::mutex> guard(mu_);
      old = std::exchange(fn_, std::move(fn));
    }
  }

  py::object get() {
    std::lock_guard<std::mutex> guard(mu_);
    return fn_;
  }

 private:
  std::mutex mu_;
  py::object fn_ = py::none();
};

// Calls call(fn) with the GIL on a library thread (watchdog, event thread), if fn is set: never
// after _shutdown(), counted in flight meanwhile, a Python error reported as unraisable under
// `what`, and nothing unwinds into the C library.
template <class Call>
void call_from_library_thread(GuardedCallback& callback, const char* what, Call&& call) noexcept {
  {
    std::lock_guard<std::mutex> guard(g_inflight_mu);
    if (g_shutdown.load()) return;
    ++g_inflight;
  }
  try {
    py::gil_scoped_acquire gil;
    py::object fn = callback.get();
    if (!fn.is_none()) {
      try {
        call(fn);
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable(what);
      }
    }
  } catch (...) {
    // Nothing may unwind into the C library.
  }
  std::lock_guard<std::mutex> guard(g_inflight_mu);
  if (--g_inflight == 0) g_inflight_cv.notify_all();
}

// ---- The GIL -------------------------------------------------------------------------------

// Runs fn() with the GIL released. The GIL is taken back in plain code, not in a destructor:
// when the interpreter is finalizing, taking the GIL ends a non-main thread with pthread_exit,
// and that forced unwind aborts the process if it meets a noexcept frame such as a destructor
// (a daemon thread woken from a wait at exit). Through plain frames it unwinds cleanly.
template <class F>
auto without_gil(F&& fn) -> decltype(fn()) {
  using Result = decltype(fn());
  PyThreadState* state = PyEval_SaveThread();
  std::exception_ptr error;
  if constexpr (std::is_void_v<Result>) {
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
    PyEval_RestoreThread(state);
    if (error) std::rethrow_exception(error);
  } else {
    std::optional<Result> result;
    try {
      result.emplace(fn());
    } catch (...) {
      error = std::current_exception();
    }
    PyEval_RestoreThread(state);
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }
}

// The thread that imported the module: the one that finalizes the interpreter.
unsigned long g_main_thread = 0;

// The same, also from code that may run without the GIL: destructors, which are noexcept. A
// thread other than the main one that takes the GIL back once the interpreter finalizes is ended
// by pthread_exit, and that unwinding through a destructor aborts the process (a daemon thread
// dropping its last Lock at exit). So such a thread counts itself in flight, which holds
// _shutdown() (and so the finalization) back until it has the GIL again; once _shutdown() is
// over it keeps the GIL instead: no callback needs it any more, so freeing cannot wait for one.
template <class F>
void maybe_without_gil(F&& fn) {
  if (!PyGILState_Check()) {
    fn();
    return;
  }
  if (PyThread_get_thread_ident() == g_main_thread) {
    without_gil(std::forward<F>(fn));
    return;
  }
  {
    std::lock_guard<std::mutex> guard(g_inflight_mu);
    if (g_shutdown_done) {
      fn();
      return;
    }
    ++g_inflight;
  }
  struct Leave {  // after the GIL is back, also when fn threw
    ~Leave() {
      std::lock_guard<std::mutex> guard(g_inflight_mu);
      if (--g_inflight == 0) g_inflight_cv.notify_all();
    }
  } leave;
  without_gil(std::forward<F>(fn));
}

// ---- Waiting that Ctrl-C can interrupt ---------------------------------------------------------

// Python runs signal handlers (KeyboardInterrupt) only in the main thread, between bytecodes,
// so a wait inside C would hold off Ctrl-C until it ends. Here the wait runs on a helper thread
// for `owner` while the calling thread checks for signals every 50 ms. When a handler raises,
// the wait is cancelled, a lock granted at that very moment is released with undo(owner), and
// the handler's exception goes on: the caller either gets the lock or an exception, never a
// lock it does not know about.
template <class Attempt, class Undo>
Outcome wait_interruptibly(int64_t owner, Attempt&& attempt, Undo&& undo) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Outcome outcome;
  };
  rlock_cancel_token* raw_token = nullptr;
  check(rlock_cancel_token_new(&raw_token));
  std::unique_ptr<rlock_cancel_token, void (*)(rlock_cancel_token*)> token(raw_token,
                                                                           rlock_cancel_token_free);
  Shared shared;
  std::thread worker([&] {
    Outcome outcome = outcome_of(attempt(owner, raw_token));
    std::lock_guard<std::mutex> guard(shared.mu);
    shared.outcome = std::move(outcome);
    shared.done = true;
    shared.cv.notify_all();
  });
  struct Joiner {  // the worker uses this frame: it is always joined before the frame goes
    std::thread& t;
    ~Joiner() {
      if (t.joinable()) t.join();
    }
  } joiner{worker};
  for (;;) {
    const bool done = without_gil([&] {
      std::unique_lock<std::mutex> guard(shared.mu);
      return shared.cv.wait_for(guard, std::chrono::milliseconds(50), [&] { return shared.done; });
    });
    if (done) break;
    if (PyErr_CheckSignals() != 0) {  // a handler raised; its exception is pending
      rlock_cancel_token_cancel(raw_token);
      without_gil([&] {
        worker.join();
        if (shared.outcome.rc == RLOCK_OK) undo(owner);
      });
      throw py::error_already_set();
    }
  }
  without_gil([&] { worker.join(); });
  return shared.outcome;
}

void record(const py::object& receipt, py::object value) {
  if (!receipt.is_none()) receipt.attr("append")(std::move(value));
}

// ---- Asynchronous calls (rlock.asyncio) --------------------------------------------------------

// A completion runs on a library thread. It takes the GIL only to hand its outcome to the event
// loop (loop.call_soon_threadsafe); the task that waits runs it there. A waiting call holds no
// thread of ours.

void ignore_completion(void*, int, int64_t) noexcept {}

// The ids an expirable acquire writes (rlock_permit_options.ids), shared by its completion and
// its undo: they must stay valid until the call completed.
using PermitIds = std::shared_ptr<std::vector<rlock_permit_id>>;

// Gives back permits of a semaphore: the ids of an expirable one, else `permits`.
void give_back_permits(rlock_semaphore* sem, int64_t permits, const PermitIds& ids) noexcept {
  if (ids) {
    rlock_permit_release_n(sem, ids->data(), ids->size());
  } else {
    rlock_semaphore_release(sem, permits);
  }
}

// Gives back a grant that no task will ever learn about. A lock's release is only started, not
// waited for. The handle may be freed by then: handles are checked values, and freeing it
// released a lock's grant (a semaphore's permits go back by this call, or by their lease).
struct Undo {
  rlock_lock* lock = nullptr;
  rlock_multi* group = nullptr;
  int64_t owner = 0;
  rlock_semaphore* sem = nullptr;  // a semaphore's grant: `permits`, or `ids` (expirable)
  int64_t permits = 0;
  PermitIds ids;

  // `may_block`: the caller is a library thread, which may make the (synchronous) semaphore
  // release itself; otherwise, as the C ABI has no asynchronous one, a thread of its own does.
  void operator()(bool may_block = true) const noexcept {
    if (lock != nullptr) rlock_release_async(lock, owner, ignore_completion, nullptr);
    if (group != nullptr) rlock_multi_release_async(group, owner, ignore_completion, nullptr);
    if (sem == nullptr) return;
    if (may_block) {
      give_back_permits(sem, permits, ids);
      return;
    }
    try {
      std::thread([sem = sem, permits = permits, ids = ids] {
        give_back_permits(sem, permits, ids);
      }).detach();
    } catch (...) {
      // No thread to be had: the permits stay taken (expirable ones until their lease ends).
    }
  }
};

py::str text_of(const std::string& message) {
  PyObject* text =
      PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "replace");
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

// What the event loop runs for one completion: callback(status, value, message), once (value:
// an int, or the permit ids of an expirable acquire as a list of str). One dropped without
// having run (its loop was closed with it still queued) gives back the grant it carried; that
// only starts a release, so the GIL may be held meanwhile.
class Delivery {
 public:
  Delivery(py::object callback, int status, py::object value, std::string message, Undo undo)
      : callback_(std::move(callback)),
        status_(status),
        value_(std::move(value)),
        message_(std::move(message)),
        undo_(std::move(undo)) {}
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;
  ~Delivery() {
    if (callback_ && !forked_since(pid_)) undo_(false);  // never ran
  }

  void run() {
    if (!callback_) return;
    py::object callback = std::move(callback_);
    callback(status_, value_, text_of(message_));
  }

  // Never to run: the caller gives the grant back itself.
  void disarm() { callback_ = py::object(); }

 private:
  py::object callback_;  // empty once run
  int status_;
  py::object value_;
  std::string message_;
  Undo undo_;  // empty unless this is a grant
  pid_t pid_ = getpid();
};

// One asynchronous call in flight: where its outcome goes, kept alive until it completed.
struct Completion {
  py::object loop;
  py::object callback;
  Undo undo;          // set by acquires: how to give the grant back
  int64_t token = 0;  // a fenced acquire's opts->token
  PermitIds ids;      // an expirable acquire's ids, handed over as its value
};

py::list ids_list(const std::vector<rlock_permit_id>& ids) {
  py::list out;
  for (const rlock_permit_id& id : ids) out.append(py::str(id.hex));
  return out;
}

// Hands the outcome to c's loop, with the GIL. Returns what is left to undo (without the GIL)
// when the loop is closed: a grant nobody will receive.
Undo hand_to_loop(Completion* c, int status, int64_t value, std::string message) {
  py::gil_scoped_acquire gil;
  std::unique_ptr<Completion> owned(c);  // its objects are released with the GIL held
  const Undo undo = status == RLOCK_OK ? owned->undo : Undo{};
  py::object delivery;
  try {
    py::object shown = status == RLOCK_OK && owned->ids ? py::object(ids_list(*owned->ids))
                                                        : py::object(py::int_(value));
    delivery = py::cast(new Delivery(std::move(owned->callback), status, std::move(shown),
                                     std::move(message), undo),
                        py::return_value_policy::take_ownership);
    owned->loop.attr("call_soon_threadsafe")(delivery);
    return Undo{};
  } catch (py::error_already_set& e) {
    // RuntimeError: the loop is closed. Anything else is a bug worth reporting.
    if (!e.matches(PyExc_RuntimeError)) e.discard_as_unraisable("rlock.asyncio completion");
  } catch (...) {
  }
  if (delivery) delivery.cast<Delivery&>().disarm();
  return undo;
}

// rlock_completion_cb of every call started here. No exception leaves it.
void complete(void* user, int status, int64_t value) noexcept {
  auto* c = static_cast<Completion*>(user);
  Undo undo;
  std::string message;
  try {
    message = outcome_of(status).message;  // thread-local: read it here
  } catch (...) {
  }
  bool shutting_down = false;
  {
    std::lock_guard<std::mutex> guard(g_inflight_mu);
    shutting_down = g_shutdown.load();
    if (!shutting_down) ++g_inflight;
  }
  if (shutting_down) {  // Python is going away: c is leaked (its objects need the GIL)
    if (status == RLOCK_OK) c->undo();
    return;
  }
  try {
    undo = hand_to_loop(c, status, value, std::move(message));
  } catch (...) {
    // Nothing may unwind into the C library.
  }
  undo();
  std::lock_guard<std::mutex> guard(g_inflight_mu);
  if (--g_inflight == 0) g_inflight_cv.notify_all();
}

std::unique_ptr<Completion> new_completion(py::object loop, py::object callback) {
  auto c = std::make_unique<Completion>();
  c->loop = std::move(loop);
  c->callback = std::move(callback);
  return c;
}

// Starts one call: start(user) -> status. On success the completion belongs to `complete`.
template <class Start>
int start_async(std::unique_ptr<Completion>& c, Start&& start) {
  int rc = start(c.get());
  if (rc == RLOCK_OK) c.release();  // may be running already: not touched again here
  return rc;
}

rlock_acquire_options acquire_options(int64_t wait_ms, int64_t lease_ms, int64_t owner,
                                      rlock_cancel_token* cancel, int64_t* token) {
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = owner;
  opts.cancel = cancel;
  opts.token = token;
  return opts;
}

int64_t resolved_owner(int64_t thread_id) {
  return thread_id != 0 ? thread_id : rlock_current_thread_id();
}

// ---- Handles ---------------------------------------------------------------------------------

// Takes mu exclusively for closing a handle. Calls in flight hold it shared, and a blocking
// acquire may hold it for long, so wake_waiters() (a cancel) runs until the lock is ours; a
// call that slipped in after one cancel is woken by the next.
template <class WakeWaiters>
std::unique_lock<std::shared_mutex> exclusive(std::shared_mutex& mu, WakeWaiters wake_waiters) {
  for (;;) {
    {
      std::shared_lock<std::shared_mutex> shared(mu);
      wake_waiters();
    }
    std::unique_lock<std::shared_mutex> guard(mu, std::try_to_lock);
    if (guard.owns_lock()) return guard;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// An rlock handle shared by Python threads: calls hold it shared (with the GIL released), and
// close() frees it once no call is in flight, waking a blocking acquire first with Cancel.
template <class T, int (*Cancel)(T*), void (*Free)(T*)>
class Handle {
 public:
  Handle(T* raw, const char* closed_message) : raw_(raw), closed_message_(closed_message) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { close(); }

  void close() {
    maybe_without_gil([this] {
      std::unique_lock<std::shared_mutex> guard = exclusive(mu_, [this] {
        if (raw_ != nullptr) Cancel(raw_);
      });
      T* raw = std::exchange(raw_, nullptr);
      if (raw != nullptr && !forked_since(pid_)) Free(raw);
    });
  }

  // Runs fn(raw) with the handle kept open; the caller has released the GIL (close() may hold
  // mu_ while it waits for a callback that needs the GIL).
  template <class F>
  auto locked(F&& fn) {
    std::shared_lock<std::shared_mutex> guard(mu_);
    if (raw_ == nullptr) throw NativeError{RLOCK_ECLOSED, closed_message_};
    return fn(raw_);
  }

  // Runs fn(raw) with the GIL released and the handle kept open.
  template <class F>
  auto call(F&& fn) {
    return without_gil([&] { return locked(std::forward<F>(fn)); });
  }

  T* raw() {
    return call([](T* raw) { return raw; });
  }

  // One acquire through attempt(raw, wait_ms, owner, cancel_token) -> status. True when
  // acquired, false when the wait ran out; raises otherwise. `interruptible` (main thread
  // only): a busy lock is waited for by wait_interruptibly, so signal handlers (Ctrl-C) run
  // meanwhile, and undo(raw, owner) gives back a lock granted just as one raises.
  // `probes` (NULL for groups, whose every round counts as a try-once anyway) counts the first
  // attempts below that the statistics must not show as timed out (see ProbeCount).
  template <class Attempt, class Undo>
  bool acquire(int64_t wait_ms, int64_t thread_id, rlock_cancel_token* token, bool interruptible,
               Attempt attempt, Undo undo, std::atomic<uint64_t>* probes) {
    if (!interruptible || wait_ms == 0 || token != nullptr) {
      int rc = call([&](T* raw) { return attempt(raw, wait_ms, thread_id, token); });
      if (rc == RLOCK_ETIMEDOUT) return false;
      check(rc);
      return true;
    }
    // Kept open with the GIL held meanwhile; taken without it, as close() may hold mu_ while it
    // waits for a callback that needs the GIL. The first attempt runs in the same release of
    // the GIL: most acquires end there.
    std::shared_lock<std::shared_mutex> guard;
    T* raw = nullptr;
    // Counted before the attempt and taken back unless it timed out, so that the statistics
    // never show more timeouts than the caller saw.
    if (probes != nullptr) probes->fetch_add(1);
    int rc = without_gil([&] {
      guard = std::shared_lock<std::shared_mutex>(mu_);
      raw = raw_;
      return raw == nullptr ? RLOCK_ECLOSED : attempt(raw, 0, thread_id, nullptr);
    });
    if (rc != RLOCK_ETIMEDOUT) {  // uncontended: no helper thread
      if (probes != nullptr) probes->fetch_sub(1);
      if (raw == nullptr) throw NativeError{RLOCK_ECLOSED, closed_message_};
      check(rc);
      return true;
    }
    const int64_t owner = thread_id != 0 ? thread_id : rlock_current_thread_id();
    Outcome outcome = wait_interruptibly(
        owner, [&](int64_t o, rlock_cancel_token* t) { return attempt(raw, wait_ms, o, t); },
        [&](int64_t o) { undo(raw, o); });
    if (outcome.rc == RLOCK_ETIMEDOUT) return false;
    if (outcome.rc != RLOCK_OK) throw_outcome(std::move(outcome));
    return true;
  }

 private:
  std::shared_mutex mu_;
  T* raw_;
  const char* closed_message_;
  pid_t pid_ = getpid();
};

// The TLS fields of rlock_client_options (version 3), as the Python layer passes them: paths
// and names as bytes (file names need not be UTF-8), None for "not set".
struct TlsArgs {
  int tls = 0;
  std::optional<std::string> ca_file;
  std::optional<std::string> ca_dir;
  std::optional<std::string> cert_file;
  std::optional<std::string> key_file;
  std::optional<std::string> server_name;
  int verify = RLOCK_TLS_VERIFY_FULL;
  int min_version = RLOCK_TLS_1_2;
  int sentinel_tls = RLOCK_SENTINEL_TLS_AUTO;
};

// A C string ends at its first NUL: a value with one would reach the library cut short.
void check_no_nul(const std::string& value, const char* what) {
  if (value.find('\0') != std::string::npos) {
    throw NativeError{RLOCK_EINVAL, std::string(what) +
                                        " contains a NUL character; it cannot be passed to the "
                                        "C library"};
  }
}

const char* c_text(const std::optional<std::string>& value, const char* what) {
  if (!value) return nullptr;
  check_no_nul(*value, what);
  return value->c_str();
}

// Points opts' TLS fields at args' strings (which must outlive the call).
void apply_tls(rlock_client_options& opts, const TlsArgs& args) {
  opts.tls = args.tls;
  opts.tls_ca_file = c_text(args.ca_file, "ssl_ca_certs");
  opts.tls_ca_dir = c_text(args.ca_dir, "ssl_ca_path");
  opts.tls_cert_file = c_text(args.cert_file, "ssl_certfile");
  opts.tls_key_file = c_text(args.key_file, "ssl_keyfile");
  opts.tls_server_name = c_text(args.server_name, "ssl_server_name");
  opts.tls_verify = args.verify;
  opts.tls_min_version = args.min_version;
  opts.sentinel_tls = args.sentinel_tls;
}

// The try-once first attempt of an interruptible acquire (Handle::acquire) is the binding's
// own: when it times out, the caller's one acquire goes on waiting, yet the library counted a
// timed-out acquire. stats() subtracts those, and never reports less than it reported before
// (a snapshot taken while one is in flight would otherwise dip for a moment).
struct ProbeCount {
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> reported{0};

  uint64_t timed_out(uint64_t counted) {
    const uint64_t probes = timeouts.load();
    const uint64_t value = counted > probes ? counted - probes : 0;
    uint64_t before = reported.load();
    while (value > before && !reported.compare_exchange_weak(before, value)) {
    }
    return value > before ? value : before;
  }
};

class NativeClient {
 public:
  NativeClient(const std::string& url, int64_t connect_timeout_ms, int64_t command_timeout_ms,
               int pool_size, int64_t watchdog_lease_ms, int64_t poll_cap_ms, uint64_t max_name_len,
               const TlsArgs& tls, int stats_mode, const std::optional<std::string>& key_prefix) {
    check_no_nul(url, "url");
    if (key_prefix) check_no_nul(*key_prefix, "key_prefix");
    rlock_client_options opts;
    check(rlock_client_options_init(&opts, RLOCK_CLIENT_OPTIONS_VERSION));
    opts.url = url.c_str();
    opts.connect_timeout_ms = connect_timeout_ms;
    opts.command_timeout_ms = command_timeout_ms;
    opts.pool_size = pool_size;
    opts.watchdog_lease_ms = watchdog_lease_ms;
    opts.poll_cap_ms = poll_cap_ms;
    opts.max_name_len = static_cast<size_t>(max_name_len);
    apply_tls(opts, tls);
    opts.stats = stats_mode;
    opts.key_prefix = key_prefix ? key_prefix->c_str() : nullptr;
    rlock_client* client = nullptr;
    check(without_gil([&] { return rlock_client_new(&client, &opts); }));
    client_ = client;
    id_ = rlock_client_id(client);
  }

  ~NativeClient() { close(); }

  // mu_ is taken without the GIL: a call holding it shared (set_event_callback(None)) may be
  // waiting for an event callback that needs the GIL.
  void close() {
    maybe_without_gil([this] {
      rlock_client* client;
      {
        std::unique_lock<std::shared_mutex> guard(mu_);
        client = std::exchange(client_, nullptr);
      }
      if (client == nullptr || forked_since(pid_)) return;  // see the file comment
      rlock_client_free(client);                            // releases holds: round trips
    });
  }

  bool closed() {
    std::shared_lock<std::shared_mutex> guard(mu_);
    return client_ == nullptr;
  }

  const std::string& id() const { return id_; }

  const std::shared_ptr<ProbeCount>& probes() const { return probes_; }

  // Runs fn(client) with the client kept open for the duration.
  template <class F>
  auto with_client(F&& fn) {
    std::shared_lock<std::shared_mutex> guard(mu_);
    if (client_ == nullptr) throw NativeError{RLOCK_ECLOSED, "the client is closed"};
    return fn(client_);
  }

  // rlock_client_stats as a dict of its fields; each histogram as (count, sum_us, buckets), and
  // acquires_failed_by_code as {code: count} for the codes seen (leaderships_revoked_by_reason
  // likewise, by rlock_revoke_reason). No I/O: the GIL is kept.
  py::dict stats() {
    rlock_stats s;
    std::memset(&s, 0, sizeof s);
    s.version = RLOCK_STATS_VERSION;
    check(with_client([&](rlock_client* c) { return rlock_client_stats(&s, c); }));
    py::dict d;
    d["enabled"] = s.enabled != 0;
    d["acquires_granted"] = s.acquires_granted;
    d["acquires_timed_out"] = s.enabled != 0 ? probes_->timed_out(s.acquires_timed_out) : 0;
    d["acquires_canceled"] = s.acquires_canceled;
    d["acquires_failed"] = s.acquires_failed;
    py::dict by_code;
    for (int i = 0; i < RLOCK_STATS_CODES; ++i) {
      if (s.acquires_failed_by_code[i] != 0) by_code[py::int_(-i)] = s.acquires_failed_by_code[i];
    }
    d["acquires_failed_by_code"] = by_code;
    d["releases"] = s.releases;
    d["releases_failed"] = s.releases_failed;
    d["locks_lost_gone"] = s.locks_lost_gone;
    d["locks_lost_unreachable"] = s.locks_lost_unreachable;
    d["locks_lost_expired"] = s.locks_lost_expired;
    d["renewals_sent"] = s.renewals_sent;
    d["renewals_failed"] = s.renewals_failed;
    d["reconnects"] = s.reconnects;
    d["failovers"] = s.failovers;
    d["cluster_redirects"] = s.cluster_redirects;
    d["scripts_sent"] = s.scripts_sent;
    d["events_dropped"] = s.events_dropped;
    d["holds"] = s.holds;
    d["waiters"] = s.waiters;
    d["acquire_wait"] = histogram(s.acquire_wait);
    d["hold"] = histogram(s.hold);
    d["handoff"] = histogram(s.handoff);
    d["command_rtt"] = histogram(s.command_rtt);
    d["elections_won"] = s.elections_won;
    py::dict by_reason;
    for (int i = 0; i < RLOCK_STATS_REVOKE_REASONS; ++i) {
      if (s.leaderships_revoked_by_reason[i] != 0) {
        by_reason[py::int_(i)] = s.leaderships_revoked_by_reason[i];
      }
    }
    d["leaderships_revoked"] = s.leaderships_revoked;
    d["leaderships_revoked_by_reason"] = by_reason;
    d["leaders"] = s.leaders;
    d["tls_handshakes"] = s.tls_handshakes;
    d["tls_sessions_resumed"] = s.tls_sessions_resumed;
    return d;
  }

  // fn(kind, unix_time_us, name: bytes, owner: bytes, thread_id, duration_us, token, reason,
  // detail: str) on the client's event thread, or None to stop the events.
  void set_event_callback(py::object fn) {
    if (fn.is_none()) {
      // Returns once a callback running on the event thread has returned; it may be waiting
      // for the GIL.
      check(without_gil([&] {
        return with_client(
            [&](rlock_client* c) { return rlock_client_set_event_callback(c, nullptr, nullptr); });
      }));
      event_callback_.set(py::none());
      return;
    }
    event_callback_.set(std::move(fn));
    check(without_gil([&] {
      return with_client([&](rlock_client* c) {
        return rlock_client_set_event_callback(c, &NativeClient::event_trampoline, this);
      });
    }));
  }

  void watch_key_events(int kinds) {
    check(without_gil([&] {
      return with_client([&](rlock_client* c) { return rlock_client_watch_key_events(c, kinds); });
    }));
  }

 private:
  static py::tuple histogram(const rlock_histogram& h) {
    py::list buckets(RLOCK_HISTOGRAM_BUCKETS);
    for (size_t i = 0; i < RLOCK_HISTOGRAM_BUCKETS; ++i) buckets[i] = py::int_(h.buckets[i]);
    return py::make_tuple(h.count, h.sum_us, buckets);
  }

  // Runs on the client's event thread, as lost_trampoline does on the watchdog's: with the GIL,
  // never after _shutdown(), and nothing unwinds into the library.
  static void event_trampoline(const rlock_event* event, void* payload) noexcept {
    auto* self = static_cast<NativeClient*>(payload);
    call_from_library_thread(self->event_callback_, "rlock event handler", [&](py::object& fn) {
      fn(static_cast<int>(event->kind), event->unix_time_us,
         py::bytes(event->name, event->name_len), py::bytes(event->owner, event->owner_len),
         event->thread_id, event->duration_us, event->token, event->reason,
         text_of(std::string(event->detail, event->detail_len)));
    });
  }

  std::shared_mutex mu_;
  rlock_client* client_ = nullptr;
  std::string id_;
  pid_t pid_ = getpid();
  std::shared_ptr<ProbeCount> probes_ = std::make_shared<ProbeCount>();
  // Declared after client_ but only dropped by the destructor after close() freed the client,
  // which waits for a running event callback.
  GuardedCallback event_callback_;
};

class CancelToken {
 public:
  CancelToken() { check(rlock_cancel_token_new(&token_)); }
  ~CancelToken() {
    if (!forked_since(pid_)) rlock_cancel_token_free(token_);
  }
  void cancel() { check(rlock_cancel_token_cancel(token_)); }
  rlock_cancel_token* get() const { return token_; }

 private:
  rlock_cancel_token* token_ = nullptr;
  pid_t pid_ = getpid();
};

rlock_cancel_token* token_of(const py::object& cancel) {
  if (cancel.is_none()) return nullptr;
  return cancel.cast<CancelToken&>().get();
}

// One owner's view of a lock (rlock_lock_state), read by field name in Python.
struct LockState {
  bool locked = false;
  bool held_by_me = false;
  int64_t hold_count = 0;
  int64_t ttl_ms = 0;
  int64_t owner_count = 0;
  py::object owner = py::none();  // bytes, or None when nobody holds it
  int64_t owner_hold_count = 0;
  int mode = RLOCK_MODE_NONE;  // an rlock_lock_mode
};

rlock_lock* new_lock(NativeClient& client, const py::bytes& name, int kind, int64_t lease_ms,
                     int64_t spin_initial_ms, int64_t spin_max_ms, int64_t fair_wait_ms,
                     const std::optional<py::bytes>& owner_id) {
  rlock_lock_options opts;
  check(rlock_lock_options_init(&opts, RLOCK_LOCK_OPTIONS_VERSION));
  opts.kind = static_cast<rlock_lock_kind>(kind);
  opts.lease_ms = lease_ms;
  opts.spin_initial_ms = spin_initial_ms;
  opts.spin_max_ms = spin_max_ms;
  opts.fair_wait_ms = fair_wait_ms;
  std::string_view id;
  if (owner_id) {
    id = *owner_id;
    opts.owner_id = id.data();
    opts.owner_id_len = id.size();
  }
  std::string_view view = name;
  rlock_lock* lock = nullptr;
  check(client.with_client([&](rlock_client* c) {
    return rlock_lock_new_n(&lock, c, view.data(), view.size(), &opts);
  }));
  return lock;
}

class NativeLock {
 public:
  NativeLock(NativeClient& client, const py::bytes& name, int kind, int64_t lease_ms,
             int64_t spin_initial_ms, int64_t spin_max_ms, int64_t fair_wait_ms,
             const std::optional<py::bytes>& owner_id)
      : handle_(new_lock(client, name, kind, lease_ms, spin_initial_ms, spin_max_ms, fair_wait_ms,
                         owner_id),
                "the lock handle is closed"),
        probes_(client.probes()) {}

  // Frees the handle (no network call: a hold left expires by its lease). rlock_lock_free
  // waits for a lost-lock callback running on the watchdog thread, which may need the GIL:
  // Handle::close releases it.
  void close() { handle_.close(); }

  template <class F>
  auto call(F&& fn) {
    return handle_.call(std::forward<F>(fn));
  }

  // True when acquired, False when the wait ran out (RLOCK_ETIMEDOUT); raises otherwise. When
  // acquired, True is also appended to `receipt` (a list, or None) before returning, so a caller
  // interrupted right after this returns can still tell that it holds the lock.
  // `interruptible` (main thread only): signal handlers run while waiting (Ctrl-C).
  bool acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, const py::object& cancel,
               bool want_token, bool interruptible, const py::object& receipt) {
    auto attempt = [=](rlock_lock* lock, int64_t wait, int64_t owner, rlock_cancel_token* token) {
      rlock_acquire_options opts;
      int r = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
      if (r != RLOCK_OK) return r;
      int64_t fencing_token = 0;
      opts.wait_ms = wait;
      opts.lease_ms = lease_ms;
      opts.thread_id = owner;
      opts.cancel = token;
      opts.token = want_token ? &fencing_token : nullptr;
      return rlock_acquire_ex(lock, &opts);
    };
    if (!handle_.acquire(
            wait_ms, thread_id, token_of(cancel), interruptible, attempt,
            [](rlock_lock* lock, int64_t owner) { rlock_release_for(lock, owner); },
            &probes_->timeouts)) {
      return false;
    }
    record(receipt, py::bool_(true));
    return true;
  }

  void release(int64_t thread_id) {
    check(call([&](rlock_lock* lock) { return rlock_release_for(lock, thread_id); }));
  }

  // Starts an acquire; done(status, value, message) then runs once on `loop` (value: the
  // fencing token when want_token). A grant that cannot reach the loop is released.
  void acquire_async(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, const py::object& cancel,
                     bool want_token, py::object loop, py::object done) {
    rlock_cancel_token* token = token_of(cancel);
    std::unique_ptr<Completion> c = new_completion(std::move(loop), std::move(done));
    check(call([&](rlock_lock* lock) {
      const int64_t owner = resolved_owner(thread_id);
      c->undo.lock = lock;
      c->undo.owner = owner;
      const rlock_acquire_options opts =
          acquire_options(wait_ms, lease_ms, owner, token, want_token ? &c->token : nullptr);
      return start_async(
          c, [&](Completion* user) { return rlock_acquire_async(lock, &opts, complete, user); });
    }));
  }

  void release_async(int64_t thread_id, py::object loop, py::object done) {
    std::unique_ptr<Completion> c = new_completion(std::move(loop), std::move(done));
    check(call([&](rlock_lock* lock) {
      return start_async(c, [&](Completion* user) {
        return rlock_release_async(lock, thread_id, complete, user);
      });
    }));
  }

  void extend_async(int64_t lease_ms, int64_t thread_id, py::object loop, py::object done) {
    std::unique_ptr<Completion> c = new_completion(std::move(loop), std::move(done));
    check(call([&](rlock_lock* lock) {
      return start_async(c, [&](Completion* user) {
        return rlock_extend_async(lock, thread_id, lease_ms, complete, user);
      });
    }));
  }

  void extend(int64_t lease_ms, int64_t thread_id) {
    check(call([&](rlock_lock* lock) { return rlock_extend_for(lock, thread_id, lease_ms); }));
  }

  void extend_by(int64_t add_ms, int64_t thread_id) {
    check(call([&](rlock_lock* lock) { return rlock_extend_by_for(lock, thread_id, add_ms); }));
  }

  bool force_unlock() {
    int deleted = 0;
    check(call([&](rlock_lock* lock) { return rlock_force_unlock(&deleted, lock); }));
    return deleted == 1;
  }

  void cancel() {
    check(call([&](rlock_lock* lock) { return rlock_cancel(lock); }));
  }

  bool is_held(int64_t thread_id) {
    return call([&](rlock_lock* lock) { return rlock_is_held_for(lock, thread_id); }) == 1;
  }

  bool is_lost(int64_t thread_id) {
    return call([&](rlock_lock* lock) { return rlock_is_lost_for(lock, thread_id); }) == 1;
  }

  py::object token(int64_t thread_id) {
    int64_t value = 0;
    int rc = call([&](rlock_lock* lock) { return rlock_lock_token_for(&value, lock, thread_id); });
    if (rc == RLOCK_ENOTHELD) return py::none();
    check(rc);
    return py::int_(value);
  }

  LockState query(int64_t thread_id) {
    rlock_lock_state state;
    std::string owner;
    bool has_owner = false;
    int rc = call([&](rlock_lock* lock) {
      state.version = RLOCK_LOCK_STATE_VERSION;
      int r = rlock_query_for(&state, lock, thread_id);
      if (r == RLOCK_OK && state.owner != nullptr) {  // borrowed: copy before returning
        owner.assign(state.owner, state.owner_len);
        has_owner = true;
      }
      return r;
    });
    check(rc);
    LockState out;
    out.locked = state.locked == 1;
    out.held_by_me = state.held_by_me == 1;
    out.hold_count = state.hold_count;
    out.ttl_ms = state.ttl_ms;
    out.owner_count = state.owner_count;
    if (has_owner) out.owner = py::bytes(owner);
    out.owner_hold_count = state.owner_hold_count;
    out.mode = state.mode;
    return out;
  }

  // fn(name: bytes, thread_id: int, reason: int) on the watchdog thread, or None to clear.
  // Threads may call it at once: the registration is made once (register_mu_, without the
  // GIL), and callback_ is a GuardedCallback.
  void set_lost_callback(py::object fn) {
    if (!fn.is_none()) {
      without_gil([this] {
        std::lock_guard<std::mutex> guard(register_mu_);
        if (registered_) return;
        check(handle_.locked([this](rlock_lock* lock) {
          return rlock_lock_set_lost_callback(lock, &NativeLock::lost_trampoline, this);
        }));
        registered_ = true;
      });
    }
    callback_.set(std::move(fn));
  }

  rlock_lock* raw() { return handle_.raw(); }

 private:
  static void lost_trampoline(rlock_lock*, const char* name, size_t name_len, int64_t thread_id,
                              rlock_lost_reason reason, void* payload) noexcept {
    auto* self = static_cast<NativeLock*>(payload);
    call_from_library_thread(self->callback_, "rlock lost-lock callback", [&](py::object& fn) {
      fn(py::bytes(name, name_len), thread_id, static_cast<int>(reason));
    });
  }

  // Declared before handle_ so that it outlives it: freeing the handle waits for a running
  // callback, which reads callback_.
  GuardedCallback callback_;
  std::mutex register_mu_;
  bool registered_ = false;  // under register_mu_
  Handle<rlock_lock, rlock_cancel, rlock_lock_free> handle_;
  std::shared_ptr<ProbeCount> probes_;  // the client's
};

rlock_multi* new_group(const py::list& members, bool redlock) {
  std::vector<rlock_lock*> raw;
  for (auto item : members) raw.push_back(item.cast<NativeLock&>().raw());
  rlock_multi* group = nullptr;
  check(redlock ? rlock_redlock_new(&group, raw.data(), raw.size())
                : rlock_multi_lock_new(&group, raw.data(), raw.size()));
  return group;
}

class NativeMulti {
 public:
  NativeMulti(const py::list& members, bool redlock)
      : handle_(new_group(members, redlock), "the lock group is closed") {}

  void close() { handle_.close(); }

  template <class F>
  auto call(F&& fn) {
    return handle_.call(std::forward<F>(fn));
  }

  // The validity in ms when acquired (also appended to `receipt`), None when the wait ran out.
  // `interruptible` as for NativeLock::acquire.
  py::object acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, const py::object& cancel,
                     bool interruptible, const py::object& receipt) {
    int64_t validity = 0;
    auto attempt = [&validity, lease_ms](rlock_multi* group, int64_t wait, int64_t owner,
                                         rlock_cancel_token* token) {
      rlock_acquire_options opts;
      int r = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
      if (r != RLOCK_OK) return r;
      opts.wait_ms = wait;
      opts.lease_ms = lease_ms;
      opts.thread_id = owner;
      opts.cancel = token;
      return rlock_multi_acquire_ex(&validity, group, &opts);
    };
    if (!handle_.acquire(
            wait_ms, thread_id, token_of(cancel), interruptible, attempt,
            [](rlock_multi* group, int64_t owner) { rlock_multi_release_for(group, owner); },
            nullptr)) {
      return py::none();
    }
    py::int_ result(validity);
    record(receipt, result);
    return std::move(result);
  }

  void release(int64_t thread_id) {
    check(call([&](rlock_multi* group) { return rlock_multi_release_for(group, thread_id); }));
  }

  // As NativeLock::acquire_async; done's value is the validity in ms of a grant.
  void acquire_async(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, const py::object& cancel,
                     py::object loop, py::object done) {
    rlock_cancel_token* token = token_of(cancel);
    std::unique_ptr<Completion> c = new_completion(std::move(loop), std::move(done));
    check(call([&](rlock_multi* group) {
      const int64_t owner = resolved_owner(thread_id);
      c->undo.group = group;
      c->undo.owner = owner;
      const rlock_acquire_options opts = acquire_options(wait_ms, lease_ms, owner, token, nullptr);
      return start_async(c, [&](Completion* user) {
        return rlock_multi_acquire_async(group, &opts, complete, user);
      });
    }));
  }

  void release_async(int64_t thread_id, py::object loop, py::object done) {
    std::unique_ptr<Completion> c = new_completion(std::move(loop), std::move(done));
    check(call([&](rlock_multi* group) {
      return start_async(c, [&](Completion* user) {
        return rlock_multi_release_async(group, thread_id, complete, user);
      });
    }));
  }

  bool is_held(int64_t thread_id) {
    return call([&](rlock_multi* group) { return rlock_multi_is_held_for(group, thread_id); }) == 1;
  }

  void cancel() {
    check(call([&](rlock_multi* group) { return rlock_multi_cancel(group); }));
  }

 private:
  Handle<rlock_multi, rlock_multi_cancel, rlock_multi_free> handle_;
};

// ---- Semaphores and latches ------------------------------------------------------------------

rlock_semaphore* new_semaphore(NativeClient& client, const py::bytes& name, int kind,
                               int64_t lease_ms) {
  rlock_semaphore_options opts;
  check(rlock_semaphore_options_init(&opts, RLOCK_SEMAPHORE_OPTIONS_VERSION));
  opts.kind = static_cast<rlock_semaphore_kind>(kind);
  opts.lease_ms = lease_ms;
  std::string_view view = name;
  rlock_semaphore* sem = nullptr;
  check(client.with_client([&](rlock_client* c) {
    return rlock_semaphore_new_n(&sem, c, view.data(), view.size(), &opts);
  }));
  return sem;
}

// rlock_permit_options of one acquire; `ids` (room for `permits` ids) for an expirable one.
rlock_permit_options permit_options(int64_t permits, int64_t wait_ms, int64_t lease_ms,
                                    rlock_cancel_token* cancel, rlock_permit_id* ids) {
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;
  opts.permits = permits;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.cancel = cancel;
  opts.ids = ids;
  return opts;
}

// The room for the ids of an acquire of `permits` (the library checks the count; a count it
// refuses gets no room to speak of).
std::vector<rlock_permit_id> id_room(int64_t permits) {
  const bool sane = permits >= 1 && permits <= RLOCK_MAX_PERMITS_PER_CALL;
  return std::vector<rlock_permit_id>(sane ? static_cast<size_t>(permits) : 1);
}

// A plain (RSemaphore) or permit-expirable (RPermitExpirableSemaphore) semaphore handle.
class NativeSemaphore {
 public:
  NativeSemaphore(NativeClient& client, const py::bytes& name, int kind, int64_t lease_ms)
      : handle_(new_semaphore(client, name, kind, lease_ms), "the semaphore handle is closed"),
        expirable_(kind == RLOCK_SEMAPHORE_EXPIRABLE) {}

  void close() { handle_.close(); }

  template <class F>
  auto call(F&& fn) {
    return handle_.call(std::forward<F>(fn));
  }

  bool try_set_permits(int64_t permits, int64_t ttl_ms) {
    int set = 0;
    check(call([&](rlock_semaphore* sem) {
      return rlock_semaphore_try_set_permits(&set, sem, permits, ttl_ms);
    }));
    return set == 1;
  }

  int64_t add_permits(int64_t delta) {
    int64_t available = 0;
    check(call(
        [&](rlock_semaphore* sem) { return rlock_semaphore_add_permits(&available, sem, delta); }));
    return available;
  }

  // None when the wait ran out; else the permit ids taken (expirable), or an empty list
  // (plain), also appended to `receipt` before returning (see NativeLock::acquire).
  // `interruptible` (main thread only): signal handlers run while waiting (Ctrl-C), and
  // permits granted just as one raises are given back.
  py::object acquire(int64_t permits, int64_t wait_ms, int64_t lease_ms, const py::object& cancel,
                     bool interruptible, const py::object& receipt) {
    std::vector<rlock_permit_id> ids = id_room(permits);
    rlock_permit_id* room = expirable_ ? ids.data() : nullptr;
    auto attempt = [&](rlock_semaphore* sem, int64_t wait, int64_t, rlock_cancel_token* token) {
      const rlock_permit_options opts = permit_options(permits, wait, lease_ms, token, room);
      return rlock_semaphore_acquire_ex(sem, &opts);
    };
    auto undo = [&](rlock_semaphore* sem, int64_t) {
      PermitIds taken;
      if (expirable_) taken = std::make_shared<std::vector<rlock_permit_id>>(ids);
      give_back_permits(sem, permits, taken);
    };
    if (!handle_.acquire(wait_ms, 0, token_of(cancel), interruptible, attempt, undo, nullptr)) {
      return py::none();
    }
    py::list taken = expirable_ ? ids_list(ids) : py::list();
    record(receipt, taken);
    return std::move(taken);
  }

  // Starts an acquire; done(status, value, message) then runs once on `loop`, value being the
  // number of permits (plain) or the list of ids (expirable). A grant that cannot reach the
  // loop is given back.
  void acquire_async(int64_t permits, int64_t wait_ms, int64_t lease_ms, const py::object& cancel,
                     py::object loop, py::object done) {
    rlock_cancel_token* token = token_of(cancel);
    std::unique_ptr<Completion> c = new_completion(std::move(loop), std::move(done));
    if (expirable_) c->ids = std::make_shared<std::vector<rlock_permit_id>>(id_room(permits));
    check(call([&](rlock_semaphore* sem) {
      c->undo.sem = sem;
      c->undo.permits = permits;
      c->undo.ids = c->ids;
      const rlock_permit_options opts =
          permit_options(permits, wait_ms, lease_ms, token, c->ids ? c->ids->data() : nullptr);
      return start_async(c, [&](Completion* user) {
        return rlock_semaphore_acquire_async(sem, &opts, complete, user);
      });
    }));
  }

  void release(int64_t permits) {
    check(call([&](rlock_semaphore* sem) { return rlock_semaphore_release(sem, permits); }));
  }

  // False when the semaphore does not exist (nothing is created) or permits is 0.
  bool release_if_exists(int64_t permits) {
    int released = 0;
    check(call([&](rlock_semaphore* sem) {
      return rlock_semaphore_release_if_exists(&released, sem, permits);
    }));
    return released == 1;
  }

  // Expirable: sets the total of permits (available + held); the available count after it.
  int64_t set_permits(int64_t permits) {
    int64_t available = 0;
    check(call([&](rlock_semaphore* sem) {
      return rlock_semaphore_set_permits(&available, sem, permits);
    }));
    return available;
  }

  // Expirable: the ms left on a held permit's lease (LEASE_NONE: none); None when not held.
  py::object lease_time(const std::string& id) {
    check_no_nul(id, "the permit id");
    int64_t left = 0;
    const int rc =
        call([&](rlock_semaphore* sem) { return rlock_permit_lease_time(&left, sem, id.c_str()); });
    if (rc == RLOCK_ENOTHELD) return py::none();
    check(rc);
    return py::int_(left);
  }

  // All or none; ids as text (the library checks them: 32 hex digits each).
  void release_ids(const std::vector<std::string>& ids) {
    std::vector<rlock_permit_id> raw(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i].size() >= RLOCK_PERMIT_ID_SIZE || ids[i].find('\0') != std::string::npos) {
        throw NativeError{RLOCK_EINVAL, "a permit id is 32 hex digits, got " +
                                            std::to_string(ids[i].size()) + " characters"};
      }
      std::memset(raw[i].hex, 0, sizeof raw[i].hex);
      std::memcpy(raw[i].hex, ids[i].data(), ids[i].size());
    }
    check(call([&](rlock_semaphore* sem) {
      return rlock_permit_release_n(sem, raw.empty() ? nullptr : raw.data(), raw.size());
    }));
  }

  // False when the permit is not held (released, or expired).
  bool update_lease(const std::string& id, int64_t lease_ms) {
    check_no_nul(id, "the permit id");
    const int rc = call(
        [&](rlock_semaphore* sem) { return rlock_permit_update_lease(sem, id.c_str(), lease_ms); });
    if (rc == RLOCK_ENOTHELD) return false;
    check(rc);
    return true;
  }

  // (available, held by anyone (expirable), exists).
  py::tuple available() {
    int64_t available = 0, held = 0;
    int exists = 0;
    check(call([&](rlock_semaphore* sem) {
      return rlock_semaphore_available(&available, &held, &exists, sem);
    }));
    return py::make_tuple(available, held, exists == 1);
  }

  int64_t drain() {
    int64_t drained = 0;
    check(call([&](rlock_semaphore* sem) { return rlock_semaphore_drain(&drained, sem); }));
    return drained;
  }

  bool remove() {
    int deleted = 0;
    check(call([&](rlock_semaphore* sem) { return rlock_semaphore_delete(&deleted, sem); }));
    return deleted == 1;
  }

  int64_t held() {
    int64_t held = 0;
    check(call([&](rlock_semaphore* sem) { return rlock_semaphore_held(&held, sem); }));
    return held;
  }

  void cancel() {
    check(call([&](rlock_semaphore* sem) { return rlock_semaphore_cancel(sem); }));
  }

 private:
  Handle<rlock_semaphore, rlock_semaphore_cancel, rlock_semaphore_free> handle_;
  const bool expirable_;
};

rlock_latch* new_latch(NativeClient& client, const py::bytes& name) {
  std::string_view view = name;
  rlock_latch* latch = nullptr;
  check(client.with_client(
      [&](rlock_client* c) { return rlock_latch_new_n(&latch, c, view.data(), view.size()); }));
  return latch;
}

// A count-down latch handle (RCountDownLatch).
class NativeLatch {
 public:
  NativeLatch(NativeClient& client, const py::bytes& name)
      : handle_(new_latch(client, name), "the latch handle is closed") {}

  void close() { handle_.close(); }

  template <class F>
  auto call(F&& fn) {
    return handle_.call(std::forward<F>(fn));
  }

  bool try_set_count(int64_t count) {
    int set = 0;
    check(call([&](rlock_latch* latch) { return rlock_latch_try_set_count(&set, latch, count); }));
    return set == 1;
  }

  int64_t count_down() {
    int64_t left = 0;
    check(call([&](rlock_latch* latch) { return rlock_latch_count_down(&left, latch); }));
    return left;
  }

  int64_t count() {
    int64_t value = 0;
    check(call([&](rlock_latch* latch) { return rlock_latch_count(&value, latch); }));
    return value;
  }

  // True when the latch is open, False when the wait ran out. `interruptible` as for
  // NativeSemaphore::acquire (there is nothing to give back).
  bool wait(int64_t wait_ms, const py::object& cancel, bool interruptible) {
    auto attempt = [](rlock_latch* latch, int64_t wait, int64_t, rlock_cancel_token* token) {
      return rlock_latch_await(latch, wait, token);
    };
    return handle_.acquire(
        wait_ms, 0, token_of(cancel), interruptible, attempt, [](rlock_latch*, int64_t) {},
        nullptr);
  }

  void wait_async(int64_t wait_ms, const py::object& cancel, py::object loop, py::object done) {
    rlock_cancel_token* token = token_of(cancel);
    std::unique_ptr<Completion> c = new_completion(std::move(loop), std::move(done));
    check(call([&](rlock_latch* latch) {
      return start_async(c, [&](Completion* user) {
        return rlock_latch_await_async(latch, wait_ms, token, complete, user);
      });
    }));
  }

  bool remove() {
    int deleted = 0;
    check(call([&](rlock_latch* latch) { return rlock_latch_delete(&deleted, latch); }));
    return deleted == 1;
  }

  void cancel() {
    check(call([&](rlock_latch* latch) { return rlock_latch_cancel(latch); }));
  }

 private:
  Handle<rlock_latch, rlock_latch_cancel, rlock_latch_free> handle_;
};

// Elections have nothing to cancel: closing one resigns (rlock_election_free).
int no_cancel(rlock_election*) { return RLOCK_OK; }

rlock_election* new_election(NativeClient& client, const py::bytes& name, bool requeue) {
  std::string_view view = name;
  rlock_election_options opts = RLOCK_ELECTION_OPTIONS_INIT;
  opts.requeue = requeue ? 1 : 0;
  rlock_election* election = nullptr;
  check(client.with_client([&](rlock_client* c) {
    return rlock_election_new(&election, c, view.data(), view.size(), &opts);
  }));
  return election;
}

// A leader election on a name (docs/leader.md). campaign(fn) reports to
// fn(elected: bool, term: int, reason: int, code: int, message: str) on library threads (and on
// the thread calling resign or close, for the resign's own revoked): elected (reason 0), or
// revoked with an rlock_revoke_reason; code and message are the error that ended a failed
// campaign (term 0, reason FAILED).
class NativeElection {
 public:
  NativeElection(NativeClient& client, const py::bytes& name, bool requeue)
      : handle_(new_election(client, name, requeue), "the election is closed") {}

  void close() { handle_.close(); }

  void campaign(py::object fn) {
    callback_.set(std::move(fn));
    check(handle_.call([this](rlock_election* e) {
      return rlock_election_campaign(e, &NativeElection::elected, &NativeElection::revoked, this);
    }));
  }

  void resign() {
    check(handle_.call([](rlock_election* e) { return rlock_election_resign(e); }));
  }

  bool is_leader() {
    return handle_.call([](rlock_election* e) { return rlock_election_is_leader(e); }) == 1;
  }

  py::object term() {
    int64_t value = 0;
    int rc = handle_.call([&](rlock_election* e) { return rlock_election_term(&value, e); });
    if (rc == RLOCK_ENOTHELD) return py::none();
    check(rc);
    return py::int_(value);
  }

 private:
  static void elected(rlock_election*, int64_t term, void* payload) noexcept {
    auto* self = static_cast<NativeElection*>(payload);
    call_from_library_thread(self->callback_, "rlock election callback",
                             [&](py::object& fn) { fn(true, term, 0, 0, ""); });
  }

  static void revoked(rlock_election*, int64_t term, rlock_revoke_reason reason,
                      void* payload) noexcept {
    auto* self = static_cast<NativeElection*>(payload);
    // Read before taking the GIL: Python code may fail calls of its own meanwhile.
    const rlock_error_info* info = rlock_last_error();
    const int code = reason == RLOCK_REVOKED_FAILED ? static_cast<int>(info->code) : 0;
    const std::string message = reason == RLOCK_REVOKED_FAILED ? info->message : "";
    call_from_library_thread(self->callback_, "rlock election callback", [&](py::object& fn) {
      fn(false, term, static_cast<int>(reason), code, message);
    });
  }

  // Declared before handle_ so that it outlives it: freeing the handle waits for a running
  // callback, which reads callback_.
  GuardedCallback callback_;
  Handle<rlock_election, no_cancel, rlock_election_free> handle_;
};

bool fenced_write(NativeClient& client, const py::bytes& key, const py::bytes& value,
                  int64_t token) {
  std::string_view k = key;
  std::string_view v = value;
  int accepted = 0;
  check(without_gil([&] {
    return client.with_client([&](rlock_client* c) {
      return rlock_fenced_write(&accepted, c, k.data(), k.size(), v.data(), v.size(), token);
    });
  }));
  return accepted == 1;
}

// The first owner of `name` and its holder record: None when the lock is free, else
// (owner: bytes, known, host, pid, command, started_ms, since_ms).
py::object lock_holder(NativeClient& client, const py::bytes& name) {
  std::string_view n = name;
  rlock_lock_info* info = nullptr;
  check(without_gil([&] {
    return client.with_client(
        [&](rlock_client* c) { return rlock_inspect(&info, c, n.data(), n.size()); });
  }));
  std::unique_ptr<rlock_lock_info, void (*)(rlock_lock_info*)> owned(info, rlock_lock_info_free);
  if (!info->locked || info->owners_len == 0) return py::none();
  const py::bytes owner(info->owners[0].owner, info->owners[0].owner_len);
  if (info->version < 3 || info->holders_len == 0 || !info->holders[0].known) {
    return py::make_tuple(owner, false, py::none(), py::none(), py::none(), py::none(), py::none());
  }
  const rlock_holder_info& h = info->holders[0];
  const auto text = [](const char* s) {
    return py::reinterpret_steal<py::object>(
        PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(std::strlen(s)), "surrogateescape"));
  };
  return py::make_tuple(owner, true, text(h.host), h.pid, text(h.command), h.started_ms,
                        h.since_ms >= 0 ? py::object(py::int_(h.since_ms)) : py::none());
}

void set_error_classes(const py::dict& classes, const py::object& fallback) {
  static std::once_flag once;  // once per process
  std::call_once(once, [&] {
    PyObject* copy = PyDict_Copy(classes.ptr());
    if (copy == nullptr) throw py::error_already_set();
    g_error_default.store(fallback.inc_ref().ptr());
    g_error_classes.store(copy);
  });
}

// Called from an atexit handler: after it returns no lost-lock callback runs Python code.
void shutdown() {
  without_gil([] {  // a running callback may be waiting for the GIL
    std::unique_lock<std::mutex> guard(g_inflight_mu);
    g_shutdown.store(true);
    g_inflight_cv.wait(guard, [] { return g_inflight == 0; });
    g_shutdown_done = true;
  });
}

// The C library's option defaults (what rlock_*_options_init fills in), so that the Python
// layer restates none of them.
py::dict client_option_defaults() {
  rlock_client_options o;
  check(rlock_client_options_init(&o, RLOCK_CLIENT_OPTIONS_VERSION));
  py::dict d;
  d["connect_timeout_ms"] = o.connect_timeout_ms;
  d["command_timeout_ms"] = o.command_timeout_ms;
  d["pool_size"] = o.pool_size;
  d["watchdog_lease_ms"] = o.watchdog_lease_ms;
  d["poll_cap_ms"] = o.poll_cap_ms;
  d["max_name_len"] = static_cast<uint64_t>(o.max_name_len);
  return d;
}

py::dict lock_option_defaults() {
  rlock_lock_options o;
  check(rlock_lock_options_init(&o, RLOCK_LOCK_OPTIONS_VERSION));
  py::dict d;
  d["lease_ms"] = o.lease_ms;
  d["spin_initial_ms"] = o.spin_initial_ms;
  d["spin_max_ms"] = o.spin_max_ms;
  d["fair_wait_ms"] = o.fair_wait_ms;
  return d;
}

// LockState and the modes its `mode` takes.
void def_lock_state(py::module_& m) {
  m.attr("MODE_NONE") = static_cast<int>(RLOCK_MODE_NONE);
  m.attr("MODE_READ") = static_cast<int>(RLOCK_MODE_READ);
  m.attr("MODE_WRITE") = static_cast<int>(RLOCK_MODE_WRITE);
  py::class_<LockState>(m, "LockState")
      .def_readonly("locked", &LockState::locked)
      .def_readonly("held_by_me", &LockState::held_by_me)
      .def_readonly("hold_count", &LockState::hold_count)
      .def_readonly("ttl_ms", &LockState::ttl_ms)
      .def_readonly("owner_count", &LockState::owner_count)
      .def_readonly("owner", &LockState::owner)
      .def_readonly("owner_hold_count", &LockState::owner_hold_count)
      .def_readonly("mode", &LockState::mode);
}

void def_lock(py::module_& m) {
  py::class_<NativeLock>(m, "Lock")
      .def(py::init<NativeClient&, const py::bytes&, int, int64_t, int64_t, int64_t, int64_t,
                    const std::optional<py::bytes>&>(),
           py::arg("client"), py::arg("name"), py::arg("kind"), py::arg("lease_ms"),
           py::arg("spin_initial_ms"), py::arg("spin_max_ms"), py::arg("fair_wait_ms"),
           py::arg("owner_id") = py::none())
      .def("acquire", &NativeLock::acquire, py::arg("wait_ms"), py::arg("lease_ms"),
           py::arg("thread_id"), py::arg("cancel"), py::arg("want_token"),
           py::arg("interruptible") = false, py::arg("receipt") = py::none())
      .def("release", &NativeLock::release, py::arg("thread_id"))
      .def("acquire_async", &NativeLock::acquire_async, py::arg("wait_ms"), py::arg("lease_ms"),
           py::arg("thread_id"), py::arg("cancel"), py::arg("want_token"), py::arg("loop"),
           py::arg("done"))
      .def("release_async", &NativeLock::release_async, py::arg("thread_id"), py::arg("loop"),
           py::arg("done"))
      .def("extend_async", &NativeLock::extend_async, py::arg("lease_ms"), py::arg("thread_id"),
           py::arg("loop"), py::arg("done"))
      .def("extend", &NativeLock::extend, py::arg("lease_ms"), py::arg("thread_id"))
      .def("extend_by", &NativeLock::extend_by, py::arg("add_ms"), py::arg("thread_id"))
      .def("force_unlock", &NativeLock::force_unlock)
      .def("cancel", &NativeLock::cancel)
      .def("is_held", &NativeLock::is_held, py::arg("thread_id"))
      .def("is_lost", &NativeLock::is_lost, py::arg("thread_id"))
      .def("token", &NativeLock::token, py::arg("thread_id"))
      .def("query", &NativeLock::query, py::arg("thread_id"))
      .def("set_lost_callback", &NativeLock::set_lost_callback, py::arg("fn"))
      .def("close", &NativeLock::close);
}

void def_multi(py::module_& m) {
  py::class_<NativeMulti>(m, "Multi")
      .def(py::init<const py::list&, bool>(), py::arg("members"), py::arg("redlock"))
      .def("acquire", &NativeMulti::acquire, py::arg("wait_ms"), py::arg("lease_ms"),
           py::arg("thread_id"), py::arg("cancel"), py::arg("interruptible") = false,
           py::arg("receipt") = py::none())
      .def("release", &NativeMulti::release, py::arg("thread_id"))
      .def("acquire_async", &NativeMulti::acquire_async, py::arg("wait_ms"), py::arg("lease_ms"),
           py::arg("thread_id"), py::arg("cancel"), py::arg("loop"), py::arg("done"))
      .def("release_async", &NativeMulti::release_async, py::arg("thread_id"), py::arg("loop"),
           py::arg("done"))
      .def("is_held", &NativeMulti::is_held, py::arg("thread_id"))
      .def("cancel", &NativeMulti::cancel)
      .def("close", &NativeMulti::close);
}

void def_semaphores(py::module_& m) {
  m.attr("SEMAPHORE_PLAIN") = static_cast<int>(RLOCK_SEMAPHORE_PLAIN);
  m.attr("SEMAPHORE_EXPIRABLE") = static_cast<int>(RLOCK_SEMAPHORE_EXPIRABLE);
  m.attr("LEASE_NONE") = static_cast<int64_t>(RLOCK_LEASE_NONE);
  m.attr("MAX_PERMITS_PER_CALL") = static_cast<int64_t>(RLOCK_MAX_PERMITS_PER_CALL);
  py::class_<NativeSemaphore>(m, "Semaphore")
      .def(py::init<NativeClient&, const py::bytes&, int, int64_t>(), py::arg("client"),
           py::arg("name"), py::arg("kind"), py::arg("lease_ms"))
      .def("try_set_permits", &NativeSemaphore::try_set_permits, py::arg("permits"),
           py::arg("ttl_ms"))
      .def("add_permits", &NativeSemaphore::add_permits, py::arg("delta"))
      .def("acquire", &NativeSemaphore::acquire, py::arg("permits"), py::arg("wait_ms"),
           py::arg("lease_ms"), py::arg("cancel"), py::arg("interruptible") = false,
           py::arg("receipt") = py::none())
      .def("acquire_async", &NativeSemaphore::acquire_async, py::arg("permits"), py::arg("wait_ms"),
           py::arg("lease_ms"), py::arg("cancel"), py::arg("loop"), py::arg("done"))
      .def("release", &NativeSemaphore::release, py::arg("permits"))
      .def("release_ids", &NativeSemaphore::release_ids, py::arg("ids"))
      .def("update_lease", &NativeSemaphore::update_lease, py::arg("id"), py::arg("lease_ms"))
      .def("release_if_exists", &NativeSemaphore::release_if_exists, py::arg("permits"))
      .def("set_permits", &NativeSemaphore::set_permits, py::arg("permits"))
      .def("lease_time", &NativeSemaphore::lease_time, py::arg("id"))
      .def("available", &NativeSemaphore::available)
      .def("drain", &NativeSemaphore::drain)
      .def("delete", &NativeSemaphore::remove)
      .def("held", &NativeSemaphore::held)
      .def("cancel", &NativeSemaphore::cancel)
      .def("close", &NativeSemaphore::close);
  py::class_<NativeElection>(m, "Election")
      .def(py::init<NativeClient&, const py::bytes&, bool>(), py::arg("client"), py::arg("name"),
           py::arg("requeue"))
      .def("campaign", &NativeElection::campaign, py::arg("fn"))
      .def("resign", &NativeElection::resign)
      .def("is_leader", &NativeElection::is_leader)
      .def("term", &NativeElection::term)
      .def("close", &NativeElection::close);
  py::class_<NativeLatch>(m, "Latch")
      .def(py::init<NativeClient&, const py::bytes&>(), py::arg("client"), py::arg("name"))
      .def("try_set_count", &NativeLatch::try_set_count, py::arg("count"))
      .def("count_down", &NativeLatch::count_down)
      .def("count", &NativeLatch::count)
      .def("wait", &NativeLatch::wait, py::arg("wait_ms"), py::arg("cancel"),
           py::arg("interruptible") = false)
      .def("wait_async", &NativeLatch::wait_async, py::arg("wait_ms"), py::arg("cancel"),
           py::arg("loop"), py::arg("done"))
      .def("delete", &NativeLatch::remove)
      .def("cancel", &NativeLatch::cancel)
      .def("close", &NativeLatch::close);
}

// The Client constructor Python sees: the C options' fields by name.
std::unique_ptr<NativeClient> new_client(
    const std::string& url, int64_t connect_timeout_ms, int64_t command_timeout_ms, int pool_size,
    int64_t watchdog_lease_ms, int64_t poll_cap_ms, uint64_t max_name_len, int tls,
    std::optional<std::string> tls_ca_file, std::optional<std::string> tls_ca_dir,
    std::optional<std::string> tls_cert_file, std::optional<std::string> tls_key_file,
    std::optional<std::string> tls_server_name, int tls_verify, int tls_min_version,
    int sentinel_tls, int stats, std::optional<std::string> key_prefix) {
  TlsArgs args;
  args.tls = tls;
  args.ca_file = std::move(tls_ca_file);
  args.ca_dir = std::move(tls_ca_dir);
  args.cert_file = std::move(tls_cert_file);
  args.key_file = std::move(tls_key_file);
  args.server_name = std::move(tls_server_name);
  args.verify = tls_verify;
  args.min_version = tls_min_version;
  args.sentinel_tls = sentinel_tls;
  return std::make_unique<NativeClient>(url, connect_timeout_ms, command_timeout_ms, pool_size,
                                        watchdog_lease_ms, poll_cap_ms, max_name_len, args, stats,
                                        key_prefix);
}

// The values of rlock_client_options' TLS choices, so that Python restates none of them.
void def_tls_constants(py::module_& m) {
  m.attr("TLS_VERIFY_FULL") = static_cast<int>(RLOCK_TLS_VERIFY_FULL);
  m.attr("TLS_VERIFY_CA") = static_cast<int>(RLOCK_TLS_VERIFY_CA);
  m.attr("TLS_VERIFY_NONE") = static_cast<int>(RLOCK_TLS_VERIFY_NONE);
  m.attr("TLS_1_2") = static_cast<int>(RLOCK_TLS_1_2);
  m.attr("TLS_1_3") = static_cast<int>(RLOCK_TLS_1_3);
  m.attr("SENTINEL_TLS_AUTO") = static_cast<int>(RLOCK_SENTINEL_TLS_AUTO);
  m.attr("SENTINEL_TLS_ON") = static_cast<int>(RLOCK_SENTINEL_TLS_ON);
  m.attr("SENTINEL_TLS_OFF") = static_cast<int>(RLOCK_SENTINEL_TLS_OFF);
}

// The statistics' constants of rlock.h (rlock.EventKind's values are checked against the
// header by tests/python/test_header_tables.py, as LostReason's).
void def_stats_constants(py::module_& m) {
  m.attr("STATS_ON") = static_cast<int>(RLOCK_STATS_ON);
  m.attr("STATS_OFF") = static_cast<int>(RLOCK_STATS_OFF);
  const int64_t* bounds = rlock_histogram_bounds_us();
  py::tuple bounds_us(RLOCK_HISTOGRAM_BOUNDS);
  for (size_t i = 0; i < RLOCK_HISTOGRAM_BOUNDS; ++i) bounds_us[i] = py::int_(bounds[i]);
  m.attr("HISTOGRAM_BOUNDS_US") = bounds_us;
}

}  // namespace

// Free-threaded CPython (3.13t+): the module's state is guarded by its own mutexes, not by the
// GIL (docs/threading.md), so importing it leaves the GIL off.
PYBIND11_MODULE(_native, m, py::mod_gil_not_used()) {
  m.doc() = "rlock's native layer over the C ABI. Use the rlock package, not this module.";
  g_main_thread =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const NativeError& e) {
      raise_native(e);
    }
  });

  m.attr("WAIT_FOREVER") = RLOCK_WAIT_FOREVER;
  m.attr("LEASE_WATCHDOG") = RLOCK_LEASE_WATCHDOG;
  m.attr("MAX_DURATION_MS") = RLOCK_MAX_DURATION_MS;
  m.attr("HARD_MAX_NAME_LEN") = static_cast<uint64_t>(RLOCK_HARD_MAX_NAME_LEN);
  m.attr("DEFAULT_MAX_NAME_LEN") = static_cast<uint64_t>(RLOCK_DEFAULT_MAX_NAME_LEN);
  m.attr("KIND_REENTRANT") = static_cast<int>(RLOCK_LOCK_REENTRANT);
  m.attr("KIND_FENCED") = static_cast<int>(RLOCK_LOCK_FENCED);
  m.attr("KIND_SPIN") = static_cast<int>(RLOCK_LOCK_SPIN);
  m.attr("KIND_FAIR") = static_cast<int>(RLOCK_LOCK_FAIR);
  m.attr("KIND_READ") = static_cast<int>(RLOCK_LOCK_READ);
  m.attr("KIND_WRITE") = static_cast<int>(RLOCK_LOCK_WRITE);
  m.attr("KIND_NON_REENTRANT") = static_cast<int>(RLOCK_LOCK_NON_REENTRANT);
  m.attr("KIND_NON_REENTRANT_FAIR") = static_cast<int>(RLOCK_LOCK_NON_REENTRANT_FAIR);

  def_lock_state(m);

  m.def("version", [] { return std::string(rlock_version_string()); });
  m.def("current_thread_id", [] { return rlock_current_thread_id(); });
  m.def("_set_error_classes", &set_error_classes);
  m.def("client_option_defaults", &client_option_defaults);
  m.def("lock_option_defaults", &lock_option_defaults);
  m.def("_shutdown", &shutdown);
  m.def("fenced_write", &fenced_write, py::arg("client"), py::arg("key"), py::arg("value"),
        py::arg("token"));
  m.def("lock_holder", &lock_holder, py::arg("client"), py::arg("name"));

  // What an event loop runs to hand over one completion (see Delivery); made only here.
  py::class_<Delivery>(m, "_Delivery").def("__call__", &Delivery::run);

  def_tls_constants(m);
  def_stats_constants(m);
  py::class_<NativeClient>(m, "Client")
      .def(py::init(&new_client), py::arg("url"), py::arg("connect_timeout_ms"),
           py::arg("command_timeout_ms"), py::arg("pool_size"), py::arg("watchdog_lease_ms"),
           py::arg("poll_cap_ms"), py::arg("max_name_len"), py::kw_only(), py::arg("tls") = 0,
           py::arg("tls_ca_file") = py::none(), py::arg("tls_ca_dir") = py::none(),
           py::arg("tls_cert_file") = py::none(), py::arg("tls_key_file") = py::none(),
           py::arg("tls_server_name") = py::none(),
           py::arg("tls_verify") = static_cast<int>(RLOCK_TLS_VERIFY_FULL),
           py::arg("tls_min_version") = static_cast<int>(RLOCK_TLS_1_2),
           py::arg("sentinel_tls") = static_cast<int>(RLOCK_SENTINEL_TLS_AUTO),
           py::arg("stats") = static_cast<int>(RLOCK_STATS_ON), py::arg("key_prefix") = py::none())
      .def_property_readonly("id", &NativeClient::id)
      .def("stats", &NativeClient::stats)
      .def("set_event_callback", &NativeClient::set_event_callback, py::arg("fn"))
      .def("watch_key_events", &NativeClient::watch_key_events, py::arg("kinds"))
      .def_property_readonly("closed", &NativeClient::closed)
      .def("close", &NativeClient::close);

  py::class_<CancelToken>(m, "CancelToken").def(py::init<>()).def("cancel", &CancelToken::cancel);

  def_lock(m);
  def_multi(m);
  def_semaphores(m);
}
