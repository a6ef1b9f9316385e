// rlock-c (the C ABI) and hiredis-floor (the same scripts over bare hiredis).
#include <rlock/rlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "bench.hpp"

namespace bench {
namespace {

// ---- rlock-c ----

std::string rlock_failure(const char* doing) {
  return std::string(doing) + ": " + rlock_last_error()->message;
}

// One client and one handle per name, shared by every thread: rlock handles are thread-safe
// and the owner is the calling thread.
class RlockC : public Contender {
 public:
  RlockC(const Options& o, const std::vector<std::string>& names) {
    rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
    opts.url = o.url.c_str();
    // rlock-c-nostats measures what the statistics cost.
    opts.stats = o.contender == "rlock-c-nostats" ? RLOCK_STATS_OFF : RLOCK_STATS_ON;
    if (rlock_client_new(&client_, &opts) != RLOCK_OK) {
      throw Failure(rlock_failure("rlock_client_new"));
    }
    for (const std::string& name : names) {
      rlock_lock* lock = nullptr;
      if (rlock_lock_new(&lock, client_, name.c_str(), nullptr) != RLOCK_OK) {
        throw Failure(rlock_failure("rlock_lock_new"));
      }
      locks_.push_back(lock);
    }
  }
  ~RlockC() override {
    for (rlock_lock* lock : locks_) rlock_lock_free(lock);
    rlock_client_free(client_);
  }

  std::unique_ptr<Worker> worker() override { return std::make_unique<W>(locks_); }

 private:
  class W : public Worker {
   public:
    explicit W(const std::vector<rlock_lock*>& locks) : locks_(locks) {}
    bool pair(size_t k) override {
      rlock_lock* lock = locks_[k];
      int rc = rlock_acquire(lock, RLOCK_WAIT_FOREVER);
      if (rc == RLOCK_ETIMEDOUT || rc == RLOCK_ECANCELED) return false;
      if (rc != RLOCK_OK) throw Failure(rlock_failure("rlock_acquire"));
      if (rlock_release(lock) != RLOCK_OK) throw Failure(rlock_failure("rlock_release"));
      return true;
    }

   private:
    const std::vector<rlock_lock*>& locks_;
  };

  rlock_client* client_ = nullptr;
  std::vector<rlock_lock*> locks_;
};

// ---- hiredis-floor ----

// What rlock sends for a watchdog hold (core/src/lock.cpp): its default watchdog lease, and
// an unlock latch kept twice the default command timeout.
constexpr char kLeaseMs[] = "30000";
constexpr char kLatchTtlMs[] = "6000";
// A lock held by another thread is given back within about one round trip.
constexpr std::chrono::microseconds kRetryPause{100};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string random_uuid() {
  std::random_device rd;
  unsigned char b[16];
  for (unsigned char& x : b) x = static_cast<unsigned char>(rd());
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

// rlock's key names (core/include/rlock/core/names.hpp) for names without '{'.
std::string tagged(const char* prefix, const std::string& name) {
  return std::string(prefix) + ":{" + name + "}";
}

class HiredisFloor : public Contender {
 public:
  HiredisFloor(const Options& o, const std::vector<std::string>& names)
      : url_(o.url), client_id_(random_uuid()), names_(names) {
    Context c = connect(url_);
    acquire_sha_ = load(c.get(), o.scripts_dir + "/acquire.lua");
    release_sha_ = load(c.get(), o.scripts_dir + "/release.lua");
    for (const std::string& name : names_) {
      channels_.push_back(tagged("redisson_lock__channel", name));
      latch_prefixes_.push_back(tagged("redisson_unlock_latch", name) + ":");
    }
  }

  std::unique_ptr<Worker> worker() override { return std::make_unique<W>(*this); }

 private:
  static std::string load(redisContext* c, const std::string& path) {
    Reply r = command(c, {"SCRIPT", "LOAD", read_script(path)});
    return std::string(r->str, r->len);
  }

  // The script as the library sends it: "-- @include NAME" lines replaced by include/NAME
  // (what cmake/EmbedScripts.cmake does at build time).
  static std::string read_script(const std::string& path) {
    std::string text = read_file(path);
    const std::string dir = path.substr(0, path.rfind('/'));
    const std::string directive = "-- @include ";
    for (size_t at = text.find(directive); at != std::string::npos; at = text.find(directive, at)) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      const std::string name = text.substr(at + directive.size(), end - at - directive.size());
      const std::string included = read_file(dir + "/include/" + name);
      text.replace(at, end + 1 - at, included);
      at += included.size();
    }
    return text;
  }

  class W : public Worker {
   public:
    explicit W(const HiredisFloor& f)
        : f_(f),
          conn_(connect(f.url_)),
          owner_(f.client_id_ + ":" + std::to_string(::syscall(SYS_gettid))),
          rng_(std::random_device{}() | 1) {
      latch_.reserve(256);
    }

    bool pair(size_t k) override {
      const std::string& name = f_.names_[k];
      const char* acquire[] = {"EVALSHA", f_.acquire_sha_.c_str(), "1", name.c_str(),
                               kLeaseMs,  owner_.c_str()};
      const size_t acquire_len[] = {7,           f_.acquire_sha_.size(), 1,
                                    name.size(), sizeof kLeaseMs - 1,    owner_.size()};
      while (!send(6, acquire, acquire_len, "acquire", [](redisReply* r) {
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
            r->element[0]->type != REDIS_REPLY_INTEGER) {
          throw Failure("acquire: unexpected reply");
        }
        return r->element[0]->integer == 1;
      })) {
        ++retries;
        std::this_thread::sleep_for(kRetryPause);
      }

      // A fresh latch per release, as rlock makes one: 16 hex digits.
      latch_.assign(f_.latch_prefixes_[k]);
      uint64_t id = next_random();
      for (int i = 0; i < 16; ++i, id >>= 4) latch_.push_back("0123456789abcdef"[id & 15]);
      const std::string& channel = f_.channels_[k];
      const char* release[] = {
          "EVALSHA", f_.release_sha_.c_str(), "3", name.c_str(), channel.c_str(), latch_.c_str(),
          kLeaseMs,  owner_.c_str(),          "1", kLatchTtlMs};
      const size_t release_len[] = {7,
                                    f_.release_sha_.size(),
                                    1,
                                    name.size(),
                                    channel.size(),
                                    latch_.size(),
                                    sizeof kLeaseMs - 1,
                                    owner_.size(),
                                    1,
                                    sizeof kLatchTtlMs - 1};
      send(10, release, release_len, "release", [](redisReply* r) {
        // 0: unlocked; anything else means this owner did not hold the lock.
        if (r->type != REDIS_REPLY_INTEGER || r->integer != 0) {
          throw Failure("release: the lock was not held by this owner");
        }
        return true;
      });
      return true;
    }

   private:
    template <typename Check>
    bool send(int argc, const char** argv, const size_t* lens, const char* doing, Check check) {
      Reply r(static_cast<redisReply*>(redisCommandArgv(conn_.get(), argc, argv, lens)));
      if (!r) throw Failure(std::string(doing) + ": " + conn_->errstr);
      if (r->type == REDIS_REPLY_ERROR) {
        throw Failure(std::string(doing) + ": " + std::string(r->str, r->len));
      }
      return check(r.get());
    }

    uint64_t next_random() {  // xorshift64
      rng_ ^= rng_ << 13;
      rng_ ^= rng_ >> 7;
      rng_ ^= rng_ << 17;
      return rng_;
    }

    const HiredisFloor& f_;
    Context conn_;
    std::string owner_;
    std::string latch_;
    uint64_t rng_;
  };

  std::string url_;
  std::string client_id_;
  std::string acquire_sha_;
  std::string release_sha_;
  const std::vector<std::string>& names_;
  std::vector<std::string> channels_;
  std::vector<std::string> latch_prefixes_;
};

}  // namespace

std::unique_ptr<Contender> make_rlock_c(const Options& o, const std::vector<std::string>& names) {
  return std::make_unique<RlockC>(o, names);
}

std::unique_ptr<Contender> make_hiredis_floor(const Options& o,
                                              const std::vector<std::string>& names) {
  return std::make_unique<HiredisFloor>(o, names);
}

}  // namespace bench
