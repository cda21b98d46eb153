// The tuning cache file: its text (model keys, calibrated links, learned choices) round-trips;
// a corrupt file is ignored with a warning naming it and replaced by the next write; writers
// in several processes at once lose no line and never leave half a file; the directory
// follows TUTTI_TUNING_CACHE, XDG_CACHE_HOME and HOME; a calibration that failed is planned
// with but not cached. The cache cannot hurt a job (issue 68 F4, F9): a FIFO, a device or an
// oversized file at its path is ignored at once, a lock held elsewhere is waited for 2 s at
// most, values it cannot hold are refused on read and never written.
#include "tuning/tuning_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>

#include "common/error.h"
#include "harness/temp_dir.h"
#include "tuning/self_tuning.h"

namespace tutti::tuning {
namespace {

TEST(TuningCache, RecordTextRoundTrips) {
  TuningRecord r;
  r.model.intraHost = {2.5e-6, 1.0 / 9e9};
  r.model.gammaPerByte = 1.0 / 15e9;
  r.calibrated.insert("shm");
  r.choices[tuneKeyOf(algo::Coll::kAllReduce, 4, 1, 1 << 20, true)] = "tree";
  r.choices[tuneKeyOf(algo::Coll::kAllGather, 2, 2, 64, false)] = "ring";
  r.evidence[tuneKeyOf(algo::Coll::kAllReduce, 4, 1, 1 << 20, true)].addJob(
      {{"tree", 1.0e-3}, {"direct", 1.08e-3}});
  std::string text = tuningRecordText(r);
  EXPECT_NE(
      text.find("evidence allreduce n4 h1 b20 w1 1 tree:1.0000:0.001 direct:1.0800:0.00108\n"),
      std::string::npos)
      << text;
  TuningRecord back = parseTuningRecord(text, "t");
  EXPECT_NEAR(back.model.intraHost.alpha, 2.5e-6, 1e-12);
  EXPECT_NEAR(1e-9 / back.model.intraHost.beta, 9.0, 1e-4);
  EXPECT_NEAR(1e-9 / back.model.gammaPerByte, 15.0, 1e-4);
  EXPECT_EQ(back.calibrated, r.calibrated);
  EXPECT_EQ(back.choices, r.choices);
  ASSERT_EQ(back.evidence.size(), 1u);
  EXPECT_EQ(back.evidence.begin()->second.text(), r.evidence.begin()->second.text());
  EXPECT_EQ(tuningRecordText(back), text);
  EXPECT_EQ(back.model.windowReadBeta, -1);  // not measured: not written
  EXPECT_EQ(text.find("window.read_gbps"), std::string::npos);
  // Calibrating shm records its window reads; calibrating tcp leaves them.
  CostModel shm = r.model;
  shm.windowReadBeta = 1.0 / 12e9;
  shm.windowReadBetaSmall = 1.0 / 40e9;
  setCalibrated(back, "shm", shm);
  CostModel tcp = r.model;
  tcp.windowReadBeta = 1.0 / 3e9;
  tcp.windowReadBetaSmall = 1.0 / 7e9;
  setCalibrated(back, "tcp", tcp);
  TuningRecord again = parseTuningRecord(tuningRecordText(back), "t");
  EXPECT_NEAR(1e-9 / again.model.windowReadBeta, 12.0, 1e-4);
  EXPECT_NEAR(1e-9 / again.model.windowReadBetaSmall, 40.0, 1e-4);
  EXPECT_NE(tuningRecordText(back).find("window.read_gbps 12\n"), std::string::npos);
  EXPECT_NE(tuningRecordText(back).find("window.read_small_gbps 40\n"), std::string::npos);
  // The model keys alone are a tuning file: the same parser reads both.
  EXPECT_NEAR(parseTuningRecord("shm.alpha_us 7\n", "t").model.intraHost.alpha, 7e-6, 1e-12);
}

TEST(TuningCache, BadLinesNameTheFileAndLine) {
  for (const char* bad :
       {"choice allreduce n4 h1 b3 w1 nosuchalgo\n", "choice allreduce n4 h1 w1 ring\n",
        "calibrated gpu\n", "shm.gbps -1\n", "bogus 1\n", "choice\n", "evidence\n",
        "evidence allreduce n4 h1 b3 w1\n", "evidence allreduce n4 h1 b3 w1 1 ring:1:0.001\n",
        "evidence allreduce n4 h1 b3 w1 1 ring:1:0.001 nosuchalgo:1.1:0.001\n",
        "evidence allreduce n4 h1 b3 1 ring:1:0.001 tree:1.1:0.001\n"}) {
    try {
      parseTuningRecord(std::string("# ok\n") + bad, "cachefile");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cachefile line 2"), std::string::npos) << e.what();
    }
  }
}

TEST(TuningCache, ACorruptFileIsIgnoredWithAWarningAndReplacedByTheNextWrite) {
  test::TempDir dir;
  TuningCache cache(dir.path() + "/sub/dir", "hwloc#abc");
  EXPECT_EQ(cache.read(), "");  // none yet
  cache.update([](TuningRecord& r) { r.calibrated.insert("shm"); });
  ASSERT_NE(cache.read().find("calibrated shm"), std::string::npos);
  { std::ofstream(cache.path()) << "shm.alpha_us 3\n\x01\x02 garbage here\n"; }
  testing::internal::CaptureStderr();
  EXPECT_EQ(cache.read(), "");
  std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("tuning cache ignored"), std::string::npos) << warned;
  EXPECT_NE(warned.find(cache.path()), std::string::npos) << warned;
  testing::internal::CaptureStderr();
  cache.update([](TuningRecord& r) {
    r.choices[tuneKeyOf(algo::Coll::kAllReduce, 2, 1, 8, true)] = "direct";
  });
  testing::internal::GetCapturedStderr();
  std::string text = cache.read();
  EXPECT_NE(text.find("choice allreduce n2 h1 b3 w1 direct"), std::string::npos) << text;
  EXPECT_EQ(text.find("garbage"), std::string::npos) << text;
  // Other hardware, other file.
  EXPECT_NE(TuningCache(dir.path(), "hwloc#abd").path(),
            TuningCache(dir.path(), "hwloc#abc").path());
}

TEST(TuningCache, AFailedCalibrationIsPlannedWithButNotCachedSoTheNextCommunicatorTriesAgain) {
  test::TempDir dir;
  for (bool keep : {false, true}) {
    auto writer = std::make_unique<TuningCache>(dir.path() + (keep ? "/kept" : "/failed"), "hw");
    const std::string path = writer->path();
    SelfTuning st(TuneSettings{}, "", ModelSource::kCache, std::move(writer), true);
    ASSERT_TRUE(st.needsCalibration(FitLink::kShm));
    CostModel m = CostModel::builtin();
    m.intraHost.alpha = 7e-6;
    st.calibrated(FitLink::kShm, m, keep);
    EXPECT_FALSE(st.needsCalibration(FitLink::kShm));  // not again in this communicator
    ASSERT_NE(st.model(), nullptr);
    EXPECT_EQ(st.model()->intraHost.alpha, 7e-6);
    std::string text = TuningCache(dir.path() + (keep ? "/kept" : "/failed"), "hw").read();
    EXPECT_EQ(text.find("calibrated shm") != std::string::npos, keep) << path << ":\n" << text;
    SelfTuning next(TuneSettings{}, text, ModelSource::kCache, nullptr, true);
    EXPECT_EQ(next.needsCalibration(FitLink::kShm), !keep);
  }
}

TEST(TuningCache, ConcurrentWritersLoseNoLineAndLeaveAWholeFile) {
  test::TempDir dir;
  constexpr int kWriters = 4, kEach = 25;
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      TuningCache cache(dir.path(), "hwloc#same");
      for (int i = 0; i < kEach; ++i) {
        cache.update([&](TuningRecord& r) {
          r.choices[tuneKeyOf(algo::Coll::kAllReduce, 2 + w, 1, size_t{1} << i, true)] = "ring";
        });
        // A reader between the writes always sees a whole file.
        if (TuningCache(dir.path(), "hwloc#same").read().empty()) _exit(3);
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  }
  TuningCache cache(dir.path(), "hwloc#same");
  TuningRecord r = parseTuningRecord(cache.read(), cache.path());
  EXPECT_EQ(r.choices.size(), static_cast<size_t>(kWriters * kEach));
  // No temporary file is left behind.
  EXPECT_EQ(system(("test -z \"$(ls " + dir.path() + " | grep tmp)\"").c_str()), 0);
}

TEST(TuningCache, DirectoryFollowsTheSettingThenXdgThenHome) {
  const char* keep[] = {"TUTTI_TUNING_CACHE", "XDG_CACHE_HOME", "HOME"};
  std::string saved[3];
  bool had[3];
  for (int i = 0; i < 3; ++i) {
    const char* v = getenv(keep[i]);
    had[i] = v != nullptr;
    if (v) saved[i] = v;
  }
  setenv("HOME", "/home/u", 1);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("TUTTI_TUNING_CACHE");
  EXPECT_EQ(tuningCacheDir(), "/home/u/.cache/tutti");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(tuningCacheDir(), "/xdg/tutti");
  setenv("TUTTI_TUNING_CACHE", "/elsewhere", 1);
  EXPECT_EQ(tuningCacheDir(), "/elsewhere");
  for (const char* off : {"off", "0", "none"}) {
    setenv("TUTTI_TUNING_CACHE", off, 1);
    EXPECT_EQ(tuningCacheDir(), "") << off;
  }
  for (int i = 0; i < 3; ++i) {
    if (had[i])
      setenv(keep[i], saved[i].c_str(), 1);
    else
      unsetenv(keep[i]);
  }
}

// F4: what sits at the cache's path cannot block or fill a job's memory.
TEST(TuningCache, AFifoADeviceOrAHugeFileAtItsPathIsIgnoredAtOnce) {
  test::TempDir dir;
  TuningCache cache(dir.path(), "hwloc#fifo");
  ASSERT_EQ(::mkfifo(cache.path().c_str(), 0600), 0);
  testing::internal::CaptureStderr();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(cache.read(), "");  // blocked forever before (no writer opens the FIFO)
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("not a regular file"), std::string::npos) << warned;
  EXPECT_NE(warned.find(cache.path()), std::string::npos) << warned;
  ASSERT_EQ(::unlink(cache.path().c_str()), 0);
  ASSERT_EQ(::symlink("/dev/zero", cache.path().c_str()), 0);  // endless
  testing::internal::CaptureStderr();
  EXPECT_EQ(cache.read(), "");
  warned = testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("not a regular file"), std::string::npos) << warned;
  ASSERT_EQ(::unlink(cache.path().c_str()), 0);
  {
    std::ofstream big(cache.path());
    for (int i = 0; i < 100000; ++i) big << "shm.alpha_us 3\n";  // 1.5 MB
  }
  testing::internal::CaptureStderr();
  EXPECT_EQ(cache.read(), "");
  warned = testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("more than a cache holds"), std::string::npos) << warned;
}

// F4: a lock another process holds (a stuck job) costs an update 2 s, not the job.
TEST(TuningCache, ALockHeldElsewhereIsWaitedForTwoSecondsAtMost) {
  test::TempDir dir;
  TuningCache cache(dir.path(), "hwloc#lock");
  cache.update([](TuningRecord& r) { r.calibrated.insert("shm"); });
  const std::string before = cache.read();
  const int held = ::open((cache.path() + ".lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);  // another open file description: conflicts
  testing::internal::CaptureStderr();
  const auto t0 = std::chrono::steady_clock::now();
  cache.update([](TuningRecord& r) { r.calibrated.insert("tcp"); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_GE(seconds, 1.9);
  EXPECT_LT(seconds, 4.0);
  EXPECT_NE(warned.find("held by another process"), std::string::npos) << warned;
  EXPECT_EQ(cache.read(), before);
  ::close(held);
  cache.update([](TuningRecord& r) { r.calibrated.insert("tcp"); });
  EXPECT_NE(cache.read().find("calibrated tcp"), std::string::npos);
}

// F9: values a model cannot hold are refused when read, naming the key, and a change that
// would write one leaves the file as it was (it used to write a file it then rejected, losing
// everything learned).
TEST(TuningCache, ValuesOutOfRangeAreRefusedOnReadAndNeverWritten) {
  for (const char* line : {"cores_per_host 1e15", "shm.gbps 5e-324", "tcp.gbps 0",
                           "nics_per_host 100000", "shm.alpha_us 1e9", "window.read_gbps 1e9"}) {
    try {
      parseTuningRecord(std::string(line) + "\n", "t");
      ADD_FAILURE() << line << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
      const std::string key(line, std::string(line).find(' '));
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  test::TempDir dir;
  TuningCache cache(dir.path(), "hwloc#range");
  cache.update([](TuningRecord& r) {
    r.choices[tuneKeyOf(algo::Coll::kAllReduce, 2, 1, 8, true)] = "direct";
  });
  const std::string before = cache.read();
  ASSERT_NE(before.find("choice allreduce n2 h1 b3 w1 direct"), std::string::npos);
  testing::internal::CaptureStderr();
  cache.update([](TuningRecord& r) {
    r.model.intraHost.beta = 1 / (5e-324 * 1e9);  // inf: written as a bandwidth of 0
    r.calibrated.insert("shm");
  });
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("left as it was"), std::string::npos) << warned;
  EXPECT_EQ(cache.read(), before);
}

}  // namespace
}  // namespace tutti::tuning
