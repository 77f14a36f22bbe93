/*
 * The book's Happycoin miner in C (Multithreaded JavaScript, chapter 1's happycoin-threads.c
 * shape): pthreads, one plain loop per thread over draws / threads, the digit-by-digit isHappy
 * loop, happiness checked before divisibility by 10000. The random source is SplitMix64, the
 * same generator corepool's happycoin command uses, so both do identical work per draw.
 *
 *   cc -O2 -pthread -o happycoin happycoin.c
 *   ./happycoin THREADS DRAWS   → {"ms":…, "count":…, "coins":["…", …]}
 *
 * "ms" is the wall time from the first pthread_create to the last pthread_join.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static uint64_t sum_digits_squared(uint64_t num) {
  uint64_t total = 0;
  while (num > 0) {
    uint64_t num_mod_base = num % 10;
    total += num_mod_base * num_mod_base;
    num = num / 10;
  }
  return total;
}

/* num != 0 is not in the book: 0 is a fixed point and would loop forever (a 1-in-2^64 draw). */
static bool is_happy(uint64_t num) {
  while (num != 1 && num != 4 && num != 0) {
    num = sum_digits_squared(num);
  }
  return num == 1;
}

static bool is_happycoin(uint64_t num) {
  return is_happy(num) && num % 10000 == 0;
}

struct job {
  uint64_t attempts;
  uint64_t seed;
  uint64_t *coins;
  size_t count;
  size_t capacity;
};

static void *get_happycoins(void *arg) {
  struct job *job = arg;
  uint64_t state = job->seed;
  for (uint64_t i = 0; i < job->attempts; i++) {
    uint64_t random_num = splitmix64(&state);
    if (is_happycoin(random_num)) {
      if (job->count == job->capacity) {
        job->capacity = job->capacity ? job->capacity * 2 : 64;
        job->coins = realloc(job->coins, job->capacity * sizeof(uint64_t));
        if (!job->coins) abort();
      }
      job->coins[job->count++] = random_num;
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s THREADS DRAWS\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  uint64_t draws = strtoull(argv[2], NULL, 10);
  if (threads < 1) return 2;

  pthread_t *thread = calloc(threads, sizeof(pthread_t));
  struct job *jobs = calloc(threads, sizeof(struct job));
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t base = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;

  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int i = 0; i < threads; i++) {
    jobs[i].attempts = draws / threads + ((uint64_t)i < draws % threads ? 1 : 0);
    jobs[i].seed = base ^ ((uint64_t)(i + 1) * 0xD1B54A32D192ED03ULL);
    pthread_create(&thread[i], NULL, get_happycoins, &jobs[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(thread[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);

  double ms = (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6;
  size_t count = 0;
  for (int i = 0; i < threads; i++) count += jobs[i].count;
  printf("{\"ms\":%.3f,\"count\":%zu,\"coins\":[", ms, count);
  const char *sep = "";
  for (int i = 0; i < threads; i++) {
    for (size_t j = 0; j < jobs[i].count; j++) {
      printf("%s\"%" PRIu64 "\"", sep, jobs[i].coins[j]);
      sep = ",";
    }
    free(jobs[i].coins);
  }
  printf("]}\n");
  free(jobs);
  free(thread);
  return 0;
}
