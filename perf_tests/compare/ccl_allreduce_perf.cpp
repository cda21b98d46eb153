// ccl_allreduce_perf: oneCCL allreduce (float32 sum, host buffers) with all_reduce_perf's sweep,
// timing and table, for side-by-side comparison (tools/compare/peers.py builds and runs it; it
// is not part of the CMake build). Bootstrap without MPI: rank 0 creates oneCCL's main KVS and
// writes its address to a file in the -F directory; the other ranks read it. Start it N times:
//   ccl_allreduce_perf -R <rank> -S <N> -F <fresh dir> -b 8 -e 64M -f 4 -n 20 -w 5
// (-R/-S may instead come from PMI_RANK/PMI_SIZE or OMPI_COMM_WORLD_RANK/SIZE when a launcher
// starts it.) Each process should also have CCL_PROCESS_LAUNCHER=none, CCL_LOCAL_RANK and
// CCL_LOCAL_SIZE set (peers.py does), and CCL_ATL_TRANSPORT=ofi with a libfabric that has the
// shm or tcp provider (or mpi with a libmpi.so.12).
//   g++ -O2 -std=c++17 -I<venv>/include ccl_allreduce_perf.cpp -L<venv>/lib -lccl \
//       -Wl,-rpath,<venv>/lib -o ccl_allreduce_perf
#include <oneapi/ccl.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "compare_table.h"

namespace {

struct Ccl {
  ccl::communicator* comm = nullptr;
  int rank = 0, size = 1;
};

void barrier(Ccl& c) { ccl::barrier(*c.comm).wait(); }

// Small exchange of one double (rank 0's value, sum, min or max).
double reduceTime(Ccl& c, double sec, int average) {
  double in = average == 0 && c.rank != 0 ? 0.0 : sec, out = 0;
  ccl::allreduce(&in, &out, 1, ccl::datatype::float64,
                 average == 2   ? ccl::reduction::min
                 : average == 3 ? ccl::reduction::max
                                : ccl::reduction::sum,
                 *c.comm)
      .wait();
  return average == 1 ? out / c.size : out;
}

// Runs `iters` allreduces of count floats, each waited for; in place when send == recv.
void allreduce(Ccl& c, const float* send, float* recv, size_t count, int iters) {
  for (int i = 0; i < iters; ++i) {
    ccl::allreduce(send, recv, count, ccl::reduction::sum, *c.comm).wait();
  }
}

double bench(Ccl& c, const cmp_opts& o, float* send, float* recv, size_t count, bool inPlace,
             int* errors, uint64_t* seed) {
  barrier(c);
  const double t0 = cmp_now();
  allreduce(c, inPlace ? recv : send, recv, count, o.iters);
  const double sec = reduceTime(c, (cmp_now() - t0) / o.iters, o.average);
  long wrong = 0;
  if (o.check) {
    ++*seed;
    cmp_fill_n(inPlace ? recv : send, count, c.rank, *seed, c.size);
    allreduce(c, inPlace ? recv : send, recv, count, 1);
    const long mine = cmp_wrong(recv, count, *seed, c.size);
    if (mine) ++*errors;
    double in = static_cast<double>(mine);
    wrong = static_cast<long>(reduceTime(c, in, 1) * c.size + 0.5);
  }
  return c.rank == 0 ? cmp_result(sec, count, c.size, wrong, o.check) : 0.0;
}

int envInt(const char* a, const char* b) {
  const char* v = getenv(a);
  if (!v) v = getenv(b);
  return v ? atoi(v) : -1;
}

// Rank 0 publishes the main KVS address in <dir>/kvs.addr (written, then renamed); the others
// wait for it (60 s).
std::shared_ptr<ccl::kvs> bootstrap(int rank, const std::string& dir) {
  const std::string path = dir + "/kvs.addr";
  if (rank == 0) {
    auto kvs = ccl::create_main_kvs();
    ccl::kvs::address_type addr = kvs->get_address();
    const std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary);
      f.write(addr.data(), static_cast<std::streamsize>(addr.size()));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      perror("ccl_allreduce_perf: rename");
      exit(1);
    }
    return kvs;
  }
  ccl::kvs::address_type addr;
  for (int tries = 0;; ++tries) {
    std::ifstream f(path, std::ios::binary);
    if (f && f.read(addr.data(), static_cast<std::streamsize>(addr.size()))) break;
    if (tries > 60000) {
      fprintf(stderr, "ccl_allreduce_perf: rank %d: no %s after 60 s\n", rank, path.c_str());
      exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return ccl::create_kvs(addr);
}

}  // namespace

int main(int argc, char** argv) {
  cmp_opts o;
  if (cmp_parse(argc, argv, &o)) return 1;
  if (o.rank < 0) o.rank = envInt("PMI_RANK", "OMPI_COMM_WORLD_RANK");
  if (o.size < 1) o.size = envInt("PMI_SIZE", "OMPI_COMM_WORLD_SIZE");
  if (o.rank < 0 || o.size < 1 || !o.store) {
    fprintf(stderr, "ccl_allreduce_perf: -R rank -S size -F dir are required\n");
    return 1;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int errors = 0;
  try {
    ccl::init();
    auto kvs = bootstrap(o.rank, o.store);
    ccl::communicator comm = ccl::create_communicator(o.size, o.rank, kvs);
    Ccl c;
    c.comm = &comm;
    c.rank = o.rank;
    c.size = o.size;

    std::vector<float> send(o.maxBytes / sizeof(float) + 1),
        recv(o.maxBytes / sizeof(float) + 1);
    if (o.rank == 0) {
      ccl::library_version v = ccl::get_library_version();
      char lib[160];
      snprintf(lib, sizeof lib, "oneCCL %s (ATL transport %s, allreduce %s)", v.full,
               getenv("CCL_ATL_TRANSPORT") ? getenv("CCL_ATL_TRANSPORT") : "default",
               getenv("CCL_ALLREDUCE") ? getenv("CCL_ALLREDUCE") : "auto");
      cmp_header("ccl_allreduce_perf", lib, &o, o.size);
    }
    for (int w = 0; w < o.warmup; ++w) {
      allreduce(c, send.data(), recv.data(), o.maxBytes / sizeof(float), 1);
    }
    int nbw = 0;
    double bwsum = 0;
    uint64_t seed = 0;
    for (size_t size = o.minBytes; size <= o.maxBytes; size = cmp_next(&o, size)) {
      const size_t count = size / sizeof(float);
      if (o.rank == 0) cmp_line_start(count);
      cmp_fill_n(send.data(), count, o.rank, 99, o.size);
      bwsum += bench(c, o, send.data(), recv.data(), count, false, &errors, &seed);
      bwsum += bench(c, o, send.data(), recv.data(), count, true, &errors, &seed);
      nbw += 2;
      if (o.rank == 0) printf("\n");
      if (size == 0 && o.stepFactor > 1) break;
    }
    const int total = static_cast<int>(reduceTime(c, static_cast<double>(errors), 1) * c.size + 0.5);
    if (o.rank == 0) cmp_footer("ccl_allreduce_perf", total, nbw ? bwsum / nbw : 0);
    barrier(c);
    errors = total;
  } catch (const std::exception& e) {
    fprintf(stderr, "ccl_allreduce_perf: rank %d: %s\n", o.rank, e.what());
    return 2;
  }
  return errors ? 1 : 0;
}
