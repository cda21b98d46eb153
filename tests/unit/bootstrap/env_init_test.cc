#include "bootstrap/env_init.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <initializer_list>
#include <utility>

#include "common/error.h"

namespace tutti::bootstrap {
namespace {

const char* kAll[] = {"TUTTI_RANK",
                      "TUTTI_WORLD_SIZE",
                      "TUTTI_LOCAL_RANK",
                      "TUTTI_ADDR",
                      "TUTTI_SECRET",
                      "TUTTI_STORE_FILE",
                      "TUTTI_PORT",
                      "RANK",
                      "WORLD_SIZE",
                      "LOCAL_RANK",
                      "MASTER_ADDR",
                      "MASTER_PORT",
                      "OMPI_COMM_WORLD_RANK",
                      "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_LOCAL_RANK",
                      "SLURM_PROCID",
                      "SLURM_NTASKS",
                      "SLURM_LOCALID",
                      "TORCHELASTIC_RUN_ID",
                      "SLURM_JOB_ID",
                      "SLURM_STEP_ID",
                      "OMPI_MCA_ess_base_jobid",
                      "SLURM_STEP_NODELIST",
                      "SLURM_JOB_NODELIST",
                      "SLURM_NODELIST",
                      "SLURM_LAUNCH_NODE_IPADDR",
                      "SLURM_STEP_RESV_PORTS",
                      "SLURM_JOBID",
                      "SLURM_STEPID",
                      "PMIX_NAMESPACE",
                      "PMIX_RANK",
                      "PMI_RANK",
                      "PMI_SIZE",
                      "PMI_FD",
                      "MPI_LOCALRANKID"};

class EnvInit : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* n : kAll) ::unsetenv(n);
  }
  static void set(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [k, v] : vars) ::setenv(k, v, 1);
  }
  static void expectInvalid(const std::string& needle) {
    try {
      launchInfoFromEnv();
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), tuttiInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
};

TEST_F(EnvInit, Tuttirun) {
  std::string secret(32, 'a');
  set({{"TUTTI_RANK", "3"},
       {"TUTTI_WORLD_SIZE", "8"},
       {"TUTTI_LOCAL_RANK", "1"},
       {"TUTTI_ADDR", "127.0.0.1:4000"},
       {"TUTTI_SECRET", secret.c_str()}});
  LaunchInfo i = launchInfoFromEnv();
  EXPECT_EQ(i.source, "tuttirun");
  EXPECT_EQ(i.rank, 3);
  EXPECT_EQ(i.nranks, 8);
  EXPECT_EQ(i.localRank, 1);
  EXPECT_EQ(i.addr, "127.0.0.1:4000");
  EXPECT_EQ(i.secretHex, secret);
}

TEST_F(EnvInit, Torchrun) {
  set({{"RANK", "2"},
       {"WORLD_SIZE", "4"},
       {"LOCAL_RANK", "0"},
       {"MASTER_ADDR", "node1"},
       {"MASTER_PORT", "29500"}});
  LaunchInfo i = launchInfoFromEnv();
  EXPECT_EQ(i.source, "torchrun");
  EXPECT_EQ(i.rank, 2);
  EXPECT_EQ(i.nranks, 4);
  EXPECT_EQ(i.localRank, 0);
  EXPECT_EQ(i.addr, "node1:29501");  // MASTER_PORT + 1: torch's store holds MASTER_PORT
  EXPECT_EQ(i.secretHex.size(), 32u);
  // Same job, same derived secret; another job id, another secret.
  EXPECT_EQ(launchInfoFromEnv().secretHex, i.secretHex);
  set({{"TORCHELASTIC_RUN_ID", "job42"}});
  EXPECT_NE(launchInfoFromEnv().secretHex, i.secretHex);
}

TEST_F(EnvInit, TorchrunIPv6MasterAddr) {
  set({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "::1"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(launchInfoFromEnv().addr, "[::1]:29501");
}

TEST_F(EnvInit, TorchrunTuttiPortOverridesMasterPortPlusOne) {
  set({{"RANK", "0"},
       {"WORLD_SIZE", "2"},
       {"MASTER_ADDR", "h"},
       {"MASTER_PORT", "29500"},
       {"TUTTI_PORT", "41000"}});
  EXPECT_EQ(launchInfoFromEnv().addr, "h:41000");
  set({{"TUTTI_PORT", "0x"}});
  expectInvalid("TUTTI_PORT");
}

TEST_F(EnvInit, TorchrunHighestMasterPortNeedsTuttiPort) {
  set({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "65535"}});
  expectInvalid("set TUTTI_PORT");
}

TEST_F(EnvInit, OpenMpiWithTuttiAddr) {
  set({{"OMPI_COMM_WORLD_RANK", "1"},
       {"OMPI_COMM_WORLD_SIZE", "2"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"TUTTI_ADDR", "10.0.0.1:5555"},
       {"MASTER_ADDR", "ignored"},
       {"MASTER_PORT", "1"}});
  LaunchInfo i = launchInfoFromEnv();
  EXPECT_EQ(i.source, "openmpi");
  EXPECT_EQ(i.rank, 1);
  EXPECT_EQ(i.localRank, 1);
  EXPECT_EQ(i.addr, "10.0.0.1:5555");
}

// MPICH's Hydra: rank, size and local rank from PMI_RANK, PMI_SIZE, MPI_LOCALRANKID; with
// an address set it is used (no PMI exchange); with PMI_FD and no address the address comes
// through PMI-1 at rendezvous (launch_mpich_perf_test runs that under mpiexec.hydra);
// without either, the error says what to set.
TEST_F(EnvInit, Hydra) {
  set({{"PMI_RANK", "2"},
       {"PMI_SIZE", "3"},
       {"MPI_LOCALRANKID", "1"},
       {"SLURM_PROCID", "0"},
       {"SLURM_NTASKS", "1"},
       {"TUTTI_ADDR", "10.0.0.2:7000"}});
  LaunchInfo i = launchInfoFromEnv();
  EXPECT_EQ(i.source, "hydra");
  EXPECT_EQ(i.rank, 2);
  EXPECT_EQ(i.nranks, 3);
  EXPECT_EQ(i.localRank, 1);
  EXPECT_EQ(i.addr, "10.0.0.2:7000");
  EXPECT_FALSE(i.viaLauncher);
  ::unsetenv("TUTTI_ADDR");
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_NTASKS");
  set({{"PMI_FD", "9"}});
  i = launchInfoFromEnv();
  EXPECT_EQ(i.source, "hydra");
  EXPECT_TRUE(i.viaLauncher);
  EXPECT_TRUE(i.addr.empty());
  ::unsetenv("PMI_FD");
  expectInvalid("hydra launch: no rendezvous address for PMI_RANK=2");
  set({{"PMI_RANK", "3"}, {"PMI_FD", "9"}});
  expectInvalid("PMI_RANK=3 is out of range for PMI_SIZE=3");
}

TEST_F(EnvInit, Slurm) {
  set({{"SLURM_PROCID", "5"},
       {"SLURM_NTASKS", "6"},
       {"SLURM_LOCALID", "2"},
       {"MASTER_ADDR", "10.0.0.9"},
       {"MASTER_PORT", "6000"}});
  LaunchInfo i = launchInfoFromEnv();
  EXPECT_EQ(i.source, "slurm");
  EXPECT_EQ(i.rank, 5);
  EXPECT_EQ(i.nranks, 6);
  EXPECT_EQ(i.localRank, 2);
  EXPECT_EQ(i.addr, "10.0.0.9:6001");
}

TEST_F(EnvInit, SlurmAddressFromTheStepsFirstNode) {
  set({{"SLURM_PROCID", "3"},
       {"SLURM_NTASKS", "8"},
       {"SLURM_JOB_ID", "1234"},
       {"SLURM_STEP_ID", "2"},
       {"SLURM_JOB_NODELIST", "gpu[07-09,12]"},
       {"SLURM_STEP_NODELIST", "gpu[08-09]"},
       {"SLURM_LAUNCH_NODE_IPADDR", "10.1.1.1"}});
  LaunchInfo i = launchInfoFromEnv();
  EXPECT_EQ(i.source, "slurm");
  int port = 20000 + (1234 * 16 + 2) % 20000;  // docs/launching.md
  EXPECT_EQ(slurmPort(1234, 2), port);
  EXPECT_EQ(i.addr, "gpu08:" + std::to_string(port));
  EXPECT_EQ(i.bindAddr, "0.0.0.0:" + std::to_string(port));
  // Another step of the same job, another port; the job's list when the step's is absent.
  ::unsetenv("SLURM_STEP_NODELIST");
  set({{"SLURM_STEP_ID", "3"}});
  EXPECT_EQ(launchInfoFromEnv().addr, "gpu07:" + std::to_string(port + 1));
  // The launch node's address when no list is set at all.
  ::unsetenv("SLURM_JOB_NODELIST");
  EXPECT_EQ(launchInfoFromEnv().addr, "10.1.1.1:" + std::to_string(port + 1));
  // Reserved ports win over the derived one, TUTTI_PORT over both, TUTTI_ADDR over all.
  set({{"SLURM_STEP_RESV_PORTS", "12000-12003"}});
  EXPECT_EQ(launchInfoFromEnv().addr, "10.1.1.1:12000");
  set({{"TUTTI_PORT", "4321"}});
  EXPECT_EQ(launchInfoFromEnv().addr, "10.1.1.1:4321");
  set({{"TUTTI_ADDR", "h:77"}});
  EXPECT_EQ(launchInfoFromEnv().addr, "h:77");
  EXPECT_EQ(launchInfoFromEnv().bindAddr, "");
}

TEST_F(EnvInit, SlurmDerivedPortStaysInItsRange) {
  for (uint64_t job : {0ull, 1ull, 1249ull, 1250ull, 4294967295ull, 18446744073709551ull})
    for (uint64_t step : {0ull, 15ull, 4294967294ull}) {
      int p = slurmPort(job, step);
      EXPECT_GE(p, kSlurmPortBase);
      EXPECT_LT(p, kSlurmPortBase + kSlurmPortRange);
    }
  EXPECT_NE(slurmPort(7, 0), slurmPort(8, 0));
  EXPECT_NE(slurmPort(7, 0), slurmPort(7, 1));
}

TEST_F(EnvInit, SlurmWithoutAddressSaysWhatToSet) {
  set({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}});
  expectInvalid("set TUTTI_ADDR=host:port");
  set({{"SLURM_NODELIST", "n[1-2]"}});
  expectInvalid("SLURM_JOB_ID is not set");
  set({{"SLURM_JOB_ID", "12x"}});
  expectInvalid("SLURM_JOB_ID='12x'");
  set({{"SLURM_JOB_ID", "12"}, {"SLURM_NODELIST", "n[2-1]"}});
  expectInvalid("SLURM_NODELIST='n[2-1]' is not a host list");
  set({{"SLURM_NODELIST", "n[1-2]"}, {"SLURM_STEP_RESV_PORTS", "none"}});
  expectInvalid("SLURM_STEP_RESV_PORTS");
}

TEST_F(EnvInit, StoreFileNeedsNoAddress) {
  set({{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "1"}, {"TUTTI_STORE_FILE", "/tmp/x"}});
  EXPECT_EQ(launchInfoFromEnv().addr, "");
}

TEST_F(EnvInit, Malformed) {
  expectInvalid("no launcher variables");
  set({{"TUTTI_RANK", "abc"}, {"TUTTI_WORLD_SIZE", "4"}, {"TUTTI_ADDR", "h:1"}});
  expectInvalid("TUTTI_RANK='abc'");
  set({{"TUTTI_RANK", "4"}});
  expectInvalid("TUTTI_RANK=4 is out of range for TUTTI_WORLD_SIZE=4");
  set({{"TUTTI_RANK", "-1"}});
  expectInvalid("TUTTI_RANK=-1");
  set({{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "0"}});
  expectInvalid("TUTTI_WORLD_SIZE=0");
  set({{"TUTTI_WORLD_SIZE", "4"}, {"TUTTI_LOCAL_RANK", "x1"}});
  expectInvalid("TUTTI_LOCAL_RANK='x1'");
  ::unsetenv("TUTTI_LOCAL_RANK");
  set({{"TUTTI_ADDR", "nohostport"}});
  expectInvalid("TUTTI_ADDR='nohostport'");
  set({{"TUTTI_ADDR", "h:99999"}});
  expectInvalid("TUTTI_ADDR");
  set({{"TUTTI_ADDR", "h:1"}, {"TUTTI_SECRET", "1234"}});
  expectInvalid("TUTTI_SECRET");
  clear();
  set({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  expectInvalid("no rendezvous address for RANK=1");
  set({{"MASTER_ADDR", "h"}});
  expectInvalid("MASTER_PORT");
  set({{"MASTER_PORT", "port"}});
  expectInvalid("MASTER_PORT");
  clear();
  set({{"SLURM_PROCID", "1"}});
  expectInvalid("SLURM_NTASKS is not set");
  set({{"SLURM_NTASKS", "2x"}});
  expectInvalid("SLURM_NTASKS='2x'");
}

}  // namespace
}  // namespace tutti::bootstrap
