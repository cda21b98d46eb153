// tuttirun -np N [--hosts h0,h1,.. | --hosts-file F] [-x VAR=val]... [--tag-output]
//          [--timeout S] cmd args...
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "launcher.h"

namespace {

void usage(FILE* f) {
  std::fprintf(
      f,
      "usage: tuttirun -np N [--hosts H,H.. | --hosts-file F] [-x VAR=val]... [--tag-output]\n"
      "                [--timeout S] [--bind none|numa|core] cmd [args...]\n"
      "  -np N, -n N      number of ranks (all on this host unless --hosts)\n"
      "  --hosts H[:S],.. run the ranks in these network namespaces (/var/run/netns/H,\n"
      "                   needs root): blocks of S (default ceil(N/hosts)) ranks per\n"
      "                   host in order; TUTTI_ADDR is then rank 0's namespace address\n"
      "  --hosts-file F   the same, one H[:S] per line ('#' comments)\n"
      "  -x VAR=val       set VAR in every rank (-x VAR passes the current value)\n"
      "  --tag-output     prefix every output line with [rank]\n"
      "  --timeout S      stop the job after S seconds (exit code 124)\n"
      "  --bind M         TUTTI_BIND=M in every rank: none, numa or core (each rank binds\n"
      "                   itself when it creates its first communicator)\n"
      "Each rank gets TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK, TUTTI_ADDR "
      "(rank 0 serves the TCP store there) and TUTTI_SECRET, and torch's RANK, WORLD_SIZE,\n"
      "LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT (a port of its own), and,\n"
      "unless set, OMP_NUM_THREADS = max(1, cores / ranks on the host), as torchrun does.\n");
}

[[noreturn]] void bad(const std::string& msg) {
  std::fprintf(stderr, "tuttirun: %s\n", msg.c_str());
  usage(stderr);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  tutti::tuttirun::Options o;
  int i = 1;
  auto value = [&](const char* flag) -> std::string {
    if (i + 1 >= argc) bad(std::string(flag) + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-np" || a == "-n" || a == "--np") {
      std::string v = value(a.c_str());
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n <= 0 || n > 4096)
        bad("-np '" + v + "': expected a rank count 1..4096");
      o.nranks = static_cast<int>(n);
    } else if (a == "-x") {
      std::string v = value("-x");
      size_t eq = v.find('=');
      std::string name = v.substr(0, eq);
      if (name.empty()) bad("-x '" + v + "': expected VAR=value");
      if (eq == std::string::npos) {
        const char* cur = std::getenv(name.c_str());
        if (cur) o.env.emplace_back(name, cur);
      } else {
        o.env.emplace_back(name, v.substr(eq + 1));
      }
    } else if (a == "--hosts" || a == "--hosts-file") {
      std::string v = value(a.c_str());
      if (!o.hosts.empty()) bad("give --hosts or --hosts-file once");
      try {
        if (a == "--hosts-file") {
          tutti::tuttirun::parseHostsFile(v, &o.hosts, &o.slots);
        } else {
          size_t b = 0;
          for (;;) {
            size_t c = v.find(',', b);
            tutti::tuttirun::parseHostEntry(v.substr(b, c - b), &o.hosts, &o.slots);
            if (c == std::string::npos) break;
            b = c + 1;
          }
        }
      } catch (const std::exception& e) {
        bad(a + ": " + e.what());
      }
    } else if (a == "--tag-output") {
      o.tagOutput = true;
    } else if (a == "--timeout") {
      std::string v = value("--timeout");
      char* end = nullptr;
      o.timeoutSec = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || o.timeoutSec <= 0)
        bad("--timeout '" + v + "': expected seconds > 0");
    } else if (a == "--bind") {
      std::string v = value("--bind");
      if (v != "none" && v != "numa" && v != "core")
        bad("--bind '" + v + "': use none, numa or core");
      o.env.emplace_back("TUTTI_BIND", v);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--") {
      ++i;
      break;
    } else if (!a.empty() && a[0] == '-') {
      bad("unknown option " + a);
    } else {
      break;
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.nranks <= 0) bad("-np N is required");
  if (o.command.empty()) bad("no command given");
  try {
    return tutti::tuttirun::runJob(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tuttirun: %s\n", e.what());
    return 1;
  }
}
