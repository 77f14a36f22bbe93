/*
 * The machine's floor for a call that crosses to another thread and back: two threads hand a
 * turn back and forth through a futex, as a pool's submit (wake a sleeping worker) and its
 * completion (wake the sleeping caller) must. Both threads sleep between turns, like an idle
 * worker and an event loop waiting in epoll.
 *
 *   ./pingpong ROUNDS   → {"p50":…, "p99":…}   (µs per round trip)
 */
#include <linux/futex.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int turn; /* 0: the caller's turn, 1: the worker's */
static int rounds;

static void wait_while(int v) {
  while (atomic_load(&turn) == v) syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void hand_over(int to) {
  atomic_store(&turn, to);
  syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < rounds; i++) {
    wait_while(0);
    hand_over(0);
  }
  return NULL;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atoi(argv[1]) : 20000;
  if (rounds < 1) return 2;
  double *lat = malloc(sizeof(double) * rounds);
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  for (int i = 0; i < rounds; i++) {
    double t0 = now_us();
    hand_over(1);
    wait_while(1);
    lat[i] = now_us() - t0;
  }
  pthread_join(t, NULL);
  qsort(lat, rounds, sizeof(double), by_value);
  printf("{\"p50\":%.2f,\"p99\":%.2f}\n", lat[rounds / 2], lat[(long)rounds * 99 / 100]);
  free(lat);
  return 0;
}
