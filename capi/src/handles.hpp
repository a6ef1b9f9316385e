// The handles the C ABI gives out are not pointers to its objects. Each names a slot of one
// process-wide table by index and generation, so a freed, stale or made-up handle is recognised
// (RLOCK_EBADHANDLE) instead of being dereferenced. A call pins the slot's object with a
// reference count for its duration; freeing marks the slot dead at once, and whoever drops the
// last reference destroys the object and recycles the slot under the next generation.
//
// Handle values are addresses inside an inaccessible (PROT_NONE) reservation of this library:
// never NULL, never dereferenced, never inside another allocator's memory, so runtimes that keep
// them in pointer-typed fields (Go's garbage collector) see harmless foreign pointers.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace rlock::capi {

enum class Kind : uint32_t {
  Client = 1,
  Lock = 2,
  Multi = 3,
  Token = 4,
  Semaphore = 5,
  Latch = 6,
  Election = 7
};

class Handles {
 public:
  struct Slot {
    // generation << 32 | kLive | references. kind, object and destroy are written before the
    // release store that makes the slot live, and read only while pinned or by the destroyer.
    std::atomic<uint64_t> state{0};
    Kind kind{};
    void* object = nullptr;
    void (*destroy)(void*) = nullptr;
    uint32_t forks = 0;  // forks() when the object was stored: older ones are the parent's
    uint32_t index = 0;  // its own place in the table, set once
  };

  // What pin() found.
  enum class Pin { Ok, Bad, Forked };

  // The one table of the process. Never destroyed, so handles freed during exit still work.
  static Handles& instance();

  // Takes ownership of `object` (destroyed later with `destroy`) and returns its handle, or 0
  // when no slot is left (the caller still owns the object then).
  uintptr_t add(Kind kind, void* object, void (*destroy)(void*));

  // The slot of a live handle of `kind`, pinned; nullptr for anything else, with *why set to
  // Pin::Forked for a live handle made before the fork() that started this process (its object
  // belongs to the parent: its threads are gone and its sockets are the parent's).
  Slot* pin(uintptr_t handle, Kind kind, Pin* why);
  // Drops a pin; the last one on a dead slot destroys the object.
  void unpin(Slot* slot);
  // Marks a pinned slot dead: no new pins. false if another thread freed it first.
  static bool kill(Slot* slot);

  // How many fork()s this process descends from since the table was made: a pthread_atfork
  // child handler counts them. Read on every pin (one relaxed atomic load).
  static uint32_t forks() { return forks_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kLive = uint64_t{1} << 31;
  static constexpr uint64_t kRefs = kLive - 1;
  static constexpr unsigned kGenBits = sizeof(void*) >= 8 ? 16 : 8;
  static constexpr unsigned kMaxIndexBits = sizeof(void*) >= 8 ? 20 : 12;
  static constexpr unsigned kChunkBits = 10;
  static constexpr uint32_t kChunkSize = uint32_t{1} << kChunkBits;
  static constexpr uint32_t kMaxChunks = uint32_t{1} << (kMaxIndexBits - kChunkBits);
  // A freed slot waits behind this many others before reuse, so a stale handle meets its slot
  // under the same (truncated) generation only after about kReuseDistance << kGenBits frees.
  static constexpr size_t kReuseDistance = 1024;

  Handles();
  static void register_fork_handlers();
  Slot* slot_at(uint32_t index) const;
  void retire(Slot* slot);

  uintptr_t base_ = 0;
  uint32_t capacity_ = 0;  // slots the reservation can address
  std::atomic<Slot*> chunks_[kMaxChunks] = {};
  std::mutex mutex_;          // slot allocation only; pin/unpin never take it
  uint32_t next_ = 0;         // slots below this have been handed out at least once
  uint32_t* free_ = nullptr;  // FIFO ring of recycled slot indexes
  size_t free_head_ = 0;
  size_t free_count_ = 0;
  static std::atomic<uint32_t> forks_;
};

}  // namespace rlock::capi
