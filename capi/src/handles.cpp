#include "handles.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <new>

namespace rlock::capi {

std::atomic<uint32_t> Handles::forks_{0};

Handles& Handles::instance() {
  static Handles* table = [] {
    auto* t = new Handles();  // never freed: see the header
    register_fork_handlers();
    return t;
  }();
  return *table;
}

void Handles::register_fork_handlers() {
  // The table's mutex is held across fork(), so a child can make handles (a new client) even if
  // another thread of the parent was allocating or recycling a slot at that moment. The child
  // counts the fork before any of its code runs: from then on every handle made before it is
  // refused (Pin::Forked), and its objects are never destroyed in the child.
  ::pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                   [] {
                     forks_.fetch_add(1, std::memory_order_relaxed);
                     instance().mutex_.unlock();
                   });
}

Handles::Handles() {
  // Address space only (no memory): one byte per (slot, generation). Smaller reservations are
  // tried when the process is short of address space.
  for (unsigned index_bits = kMaxIndexBits; index_bits >= kChunkBits; --index_bits) {
    const size_t size = size_t{1} << (index_bits + kGenBits);
    void* p = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      base_ = reinterpret_cast<uintptr_t>(p);
      capacity_ = uint32_t{1} << index_bits;
      free_ = new (std::nothrow) uint32_t[capacity_];
      if (free_ == nullptr) capacity_ = 0;
      return;
    }
  }
}

Handles::Slot* Handles::slot_at(uint32_t index) const {
  Slot* chunk = chunks_[index >> kChunkBits].load(std::memory_order_acquire);
  return chunk == nullptr ? nullptr : &chunk[index & (kChunkSize - 1)];
}

uintptr_t Handles::add(Kind kind, void* object, void (*destroy)(void*)) {
  std::lock_guard<std::mutex> guard(mutex_);
  uint32_t index;
  if (free_count_ > kReuseDistance || (next_ == capacity_ && free_count_ > 0)) {
    index = free_[free_head_];
    free_head_ = (free_head_ + 1) % capacity_;
    --free_count_;
  } else if (next_ < capacity_) {
    index = next_;
    if ((index & (kChunkSize - 1)) == 0 && chunks_[index >> kChunkBits].load() == nullptr) {
      Slot* chunk = new (std::nothrow) Slot[kChunkSize];
      if (chunk == nullptr) return 0;
      for (uint32_t i = 0; i < kChunkSize; ++i) chunk[i].index = index + i;
      chunks_[index >> kChunkBits].store(chunk, std::memory_order_release);
    }
    ++next_;
  } else {
    return 0;
  }
  Slot* slot = slot_at(index);
  const uint64_t gen = slot->state.load(std::memory_order_relaxed) >> 32;
  slot->kind = kind;
  slot->object = object;
  slot->destroy = destroy;
  slot->forks = forks();
  slot->state.store(gen << 32 | kLive, std::memory_order_release);
  const uint64_t offset = (uint64_t{index} << kGenBits) | (gen & ((uint64_t{1} << kGenBits) - 1));
  return base_ + static_cast<uintptr_t>(offset);
}

Handles::Slot* Handles::pin(uintptr_t handle, Kind kind, Pin* why) {
  *why = Pin::Bad;
  if (handle < base_ || capacity_ == 0) return nullptr;
  const uint64_t offset = handle - base_;
  const uint64_t index = offset >> kGenBits;
  const uint64_t gen = offset & ((uint64_t{1} << kGenBits) - 1);
  if (index >= capacity_) return nullptr;
  Slot* slot = slot_at(static_cast<uint32_t>(index));
  if (slot == nullptr) return nullptr;
  uint64_t s = slot->state.load(std::memory_order_acquire);
  for (;;) {
    if ((s & kLive) == 0 || ((s >> 32) & ((uint64_t{1} << kGenBits) - 1)) != gen) return nullptr;
    if ((s & kRefs) == kRefs) return nullptr;  // 2^31 calls at once: refuse rather than overflow
    if (slot->state.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                          std::memory_order_acquire)) {
      break;
    }
  }
  if (slot->kind != kind) {  // a live handle of another type
    unpin(slot);
    return nullptr;
  }
  if (slot->forks != forks()) {
    // The parent's object. Nothing in this process ever kills its slot (see *_free), so this
    // unpin cannot be the last one of a dead slot: the object is never destroyed here.
    unpin(slot);
    *why = Pin::Forked;
    return nullptr;
  }
  *why = Pin::Ok;
  return slot;
}

void Handles::unpin(Slot* slot) {
  const uint64_t prev = slot->state.fetch_sub(1, std::memory_order_acq_rel);
  if ((prev & kRefs) == 1 && (prev & kLive) == 0) retire(slot);
}

bool Handles::kill(Slot* slot) {
  uint64_t s = slot->state.load(std::memory_order_relaxed);
  while ((s & kLive) != 0) {
    if (slot->state.compare_exchange_weak(s, s & ~kLive, std::memory_order_acq_rel)) return true;
  }
  return false;
}

void Handles::retire(Slot* slot) {
  // Dead with no pins: nobody else can reach the object any more.
  slot->destroy(slot->object);
  slot->object = nullptr;
  slot->destroy = nullptr;
  const uint64_t gen = slot->state.load(std::memory_order_relaxed) >> 32;
  slot->state.store((gen + 1) << 32, std::memory_order_release);
  std::lock_guard<std::mutex> guard(mutex_);
  free_[(free_head_ + free_count_) % capacity_] = slot->index;
  ++free_count_;
}

}  // namespace rlock::capi
