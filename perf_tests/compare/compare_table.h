/* Shared by the comparison drivers (mpi_allreduce_perf.c, gloo_allreduce_perf.cc): the flags,
 * size sweep, float32-sum data, check and nccl-tests table of all_reduce_perf, so that
 * tools/compare/compare.py parses all three alike. Header-only C (also compiles as C++). */
#ifndef TUTTI_PERF_COMPARE_TABLE_H_
#define TUTTI_PERF_COMPARE_TABLE_H_

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  size_t minBytes, maxBytes, stepBytes, stepFactor;
  int iters, warmup, check, average;
  const char* algo;  /* driver-specific (gloo: ring, bcube, hd) */
  int rank, size;    /* gloo: -R/-S (MPI: from MPI) */
  const char* store; /* gloo: -F file store directory */
} cmp_opts;

static double cmp_parse_size(const char* v) {
  double size;
  char lit[2] = {0, 0};
  int n = sscanf(v, "%lf %1s", &size, lit);
  if (n == 1) return size;
  if (n != 2) return -1;
  switch (lit[0]) {
    case 'G':
    case 'g':
      return size * 1024.0 * 1024 * 1024;
    case 'M':
    case 'm':
      return size * 1024.0 * 1024;
    case 'K':
    case 'k':
      return size * 1024.0;
  }
  return -1;
}

/* nccl-tests defaults; returns 0 on success. */
static int cmp_parse(int argc, char** argv, cmp_opts* o) {
  int c;
  o->minBytes = o->maxBytes = 32u << 20;
  o->stepBytes = 1u << 20;
  o->stepFactor = 1;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  o->average = 1;
  o->algo = "ring";
  o->rank = -1;
  o->size = -1;
  o->store = NULL;
  while ((c = getopt(argc, argv, "b:e:i:f:n:w:c:a:A:R:S:F:h")) != -1) {
    switch (c) {
      case 'b':
        o->minBytes = (size_t)cmp_parse_size(optarg);
        break;
      case 'e':
        o->maxBytes = (size_t)cmp_parse_size(optarg);
        break;
      case 'i':
        o->stepBytes = strtoul(optarg, NULL, 0);
        break;
      case 'f':
        o->stepFactor = strtoul(optarg, NULL, 0);
        break;
      case 'n':
        o->iters = atoi(optarg);
        break;
      case 'w':
        o->warmup = atoi(optarg);
        break;
      case 'c':
        o->check = atoi(optarg);
        break;
      case 'a':
        o->average = atoi(optarg);
        break;
      case 'A':
        o->algo = optarg;
        break;
      case 'R':
        o->rank = atoi(optarg);
        break;
      case 'S':
        o->size = atoi(optarg);
        break;
      case 'F':
        o->store = optarg;
        break;
      default:
        fprintf(stderr,
                "usage: %s [-b min] [-e max] [-f factor | -i step] [-n iters] [-w warmup] "
                "[-c 0/1] [-a 0/1/2/3] [-A algo] [-R rank -S size -F storedir (gloo)]\n",
                argv[0]);
        return 1;
    }
  }
  if (o->iters < 1 || o->minBytes > o->maxBytes) return 1;
  return 0;
}

static size_t cmp_next(const cmp_opts* o, size_t size) {
  return o->stepFactor > 1 ? size * o->stepFactor : size + o->stepBytes;
}

/* Input of rank r: small integers, exact in float for any sum order (as all_reduce_perf). */
static float cmp_value(int rank, size_t i, uint64_t seed, int nranks) {
  int64_t k = 240 / (nranks > 0 ? nranks : 1);
  if (k < 2) k = 2;
  if (k > 16) k = 16;
  return (float)((7 * i + 3 * (uint64_t)rank + seed) % (uint64_t)k);
}
static void cmp_fill_n(float* buf, size_t count, int rank, uint64_t seed, int nranks) {
  for (size_t i = 0; i < count; ++i) buf[i] = cmp_value(rank, i, seed, nranks);
}
static long cmp_wrong(const float* got, size_t count, uint64_t seed, int nranks) {
  long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float e = 0;
    for (int r = 0; r < nranks; ++r) e += cmp_value(r, i, seed, nranks);
    wrong += got[i] != e;
  }
  return wrong;
}

static void cmp_float_str(double value, int width, char* out, size_t n) {
  int power = 0;
  for (uint64_t v = 1; value >= (double)v && power < 20; v *= 10) power++;
  if (power < width - 2)
    snprintf(out, n, "%*.2f", width, value);
  else if (power < width - 1)
    snprintf(out, n, "%*.1f", width, value);
  else if (power < width + 1)
    snprintf(out, n, "%*.0f", width, value);
  else
    snprintf(out, n, "%*.1e", width, value);
}

static void cmp_header(const char* program, const char* library, const cmp_opts* o, int nranks) {
  printf("# %s: %s, float32 sum, %d ranks\n", program, library, nranks);
  printf(
      "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: 1 validation: %d graph: 0\n",
      o->minBytes, o->maxBytes, o->stepFactor > 1 ? o->stepFactor : o->stepBytes,
      o->stepFactor > 1 ? "factor" : "bytes", o->warmup, o->iters, o->check);
  printf("#\n");
  printf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
      "\n",
      "", "", "", "", "");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count",
         "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
         "#wrong");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
         "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static void cmp_line_start(size_t count) {
  printf("%12zu  %12zu  %8s  %6s  %6i", count * sizeof(float), count, "float", "sum", -1);
}

/* Prints one time/algbw/busbw/#wrong group; returns busbw. */
static double cmp_result(double sec, size_t count, int nranks, long wrong, int checked) {
  char t[32], a[32], b[32];
  double algbw = sec > 0 ? (double)(count * sizeof(float)) / 1.0e9 / sec : 0;
  double busbw = algbw * 2.0 * (nranks - 1) / nranks;
  cmp_float_str(sec * 1e6, 7, t, sizeof t);
  cmp_float_str(algbw, 6, a, sizeof a);
  cmp_float_str(busbw, 6, b, sizeof b);
  if (checked)
    printf("  %7s  %6s  %6s  %6g", t, a, b, (double)wrong);
  else
    printf("  %7s  %6s  %6s    N/A", t, a, b);
  return busbw;
}

static void cmp_footer(const char* program, int errors, double avgBw) {
  printf("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
  printf("# %-20s : %g %s\n", "Avg bus bandwidth", avgBw, "");
  printf("#\n");
  printf("# Collective test concluded: %s\n\n", program);
}

static double cmp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* TUTTI_PERF_COMPARE_TABLE_H_ */
