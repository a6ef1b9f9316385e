/*
 * rlock's asynchronous acquire driven from a single-threaded event loop (poll + eventfd).
 *
 * Completions run on the client's library threads. They do no work of their own: each one
 * records its outcome in a queue and rings an eventfd; the loop thread wakes in poll(), takes
 * the outcomes and does the work, so the program's state is touched by one thread only.
 *
 * Ten jobs want the same lock. All ten acquires are started at once and wait without holding a
 * thread; each job runs in the loop when its grant arrives, then releases asynchronously, which
 * lets the next one in. Build: cc async_poll.c $(pkg-config --cflags --libs rlock)
 * Run: ./a.out [redis://127.0.0.1:6379]   (tests/capi builds and runs it against a test server)
 */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rlock/rlock.h"

#define JOBS 10

enum step { ACQUIRED, RELEASED };

struct event {
  int job;
  enum step step;
  int status;
};

/* Filled by completions (library threads), emptied by the loop. */
static struct {
  pthread_mutex_t mutex;
  struct event items[2 * JOBS];
  int count;
  int wake_fd;
} inbox = {PTHREAD_MUTEX_INITIALIZER, {{0, ACQUIRED, 0}}, 0, -1};

struct job {
  int index;
  int64_t owner; /* the thread id the lock is held for: a job, not an OS thread */
};
static struct job jobs[JOBS];

static void post(int job, enum step step, int status) {
  pthread_mutex_lock(&inbox.mutex);
  inbox.items[inbox.count].job = job;
  inbox.items[inbox.count].step = step;
  inbox.items[inbox.count].status = status;
  inbox.count++;
  pthread_mutex_unlock(&inbox.mutex);
  uint64_t one = 1;
  if (write(inbox.wake_fd, &one, sizeof one) != sizeof one) abort();
}

static void on_acquired(void *user, int status, int64_t value) {
  (void)value;
  post(((struct job *)user)->index, ACQUIRED, status);
}

static void on_released(void *user, int status, int64_t value) {
  (void)value;
  post(((struct job *)user)->index, RELEASED, status);
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  rlock_client *client = NULL;
  rlock_lock *lock = NULL;
  if (rlock_client_new_url(&client, url) != RLOCK_OK ||
      rlock_lock_new(&lock, client, "async-poll-example", NULL) != RLOCK_OK) {
    fprintf(stderr, "setup: %s\n", rlock_last_error()->message);
    return 1;
  }
  inbox.wake_fd = eventfd(0, EFD_CLOEXEC);

  for (int i = 0; i < JOBS; ++i) {
    jobs[i].index = i;
    jobs[i].owner = 1000 + i;
    rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
    opts.thread_id = jobs[i].owner;
    opts.lease_ms = 10000;
    if (rlock_acquire_async(lock, &opts, on_acquired, &jobs[i]) != RLOCK_OK) {
      fprintf(stderr, "acquire_async: %s\n", rlock_last_error()->message);
      return 1;
    }
  }

  int finished = 0, failures = 0;
  while (finished < JOBS) {
    struct pollfd pfd = {inbox.wake_fd, POLLIN, 0};
    if (poll(&pfd, 1, 10000) <= 0) {
      fprintf(stderr, "no completion within 10 s\n");
      return 1;
    }
    uint64_t rings;
    if (read(inbox.wake_fd, &rings, sizeof rings) != sizeof rings) return 1;
    struct event got[2 * JOBS];
    pthread_mutex_lock(&inbox.mutex);
    int n = inbox.count;
    for (int i = 0; i < n; ++i) got[i] = inbox.items[i];
    inbox.count = 0;
    pthread_mutex_unlock(&inbox.mutex);

    for (int i = 0; i < n; ++i) {
      struct job *job = &jobs[got[i].job];
      if (got[i].status != RLOCK_OK) {
        fprintf(stderr, "job %d: %s\n", job->index, rlock_strerror(got[i].status));
        failures++;
        finished++;
      } else if (got[i].step == ACQUIRED) {
        printf("job %d holds the lock\n", job->index); /* the job's work, in the loop */
        if (rlock_release_async(lock, job->owner, on_released, job) != RLOCK_OK) return 1;
      } else {
        finished++;
      }
    }
  }
  rlock_lock_free(lock);
  rlock_client_free(client); /* every completion has run when this returns */
  close(inbox.wake_fd);
  printf("%d jobs done, %d failed\n", JOBS - failures, failures);
  return failures == 0 ? 0 : 1;
}
