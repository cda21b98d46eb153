#include "compress/compressed_allreduce.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <thread>

#include "common/dtype.h"
#include "common/error.h"
#include "common/log.h"

namespace tutti::compress {

// One thread that runs one job at a time for its owner, kept for the owner's lifetime.
class HelperThread {
 public:
  HelperThread() : thread_([this] { loop(); }) {}
  ~HelperThread() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;

  // Runs job on the helper thread (job must not throw); the previous job must have been
  // waited for.
  void start(std::function<void()> job) {
    {
      std::lock_guard lock(mu_);
      job_ = std::move(job);
      done_ = false;
    }
    cv_.notify_all();
  }
  // Returns once the job given to start() has returned.
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return job_ != nullptr || stop_; });
      if (job_ == nullptr) return;  // stopping
      auto job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      job();
      lock.lock();
      done_ = true;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool done_ = true;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

namespace {

void writeResult(std::span<const float> acc, void* recv, tuttiDataType_t dtype) {
  if (dtype == tuttiFloat32) {
    std::memcpy(recv, acc.data(), acc.size_bytes());
    return;
  }
  auto* out = static_cast<uint16_t*>(recv);
  for (size_t i = 0; i < acc.size(); ++i)
    out[i] = dtype == tuttiFloat16 ? floatToHalf(acc[i]) : floatToBf16(acc[i]);
}

// Pipelined: payloads of at least this (4 bytes per element), in chunks of about kChunkBytes
// of input, at most kMaxChunks.
constexpr size_t kPipelineMinBytes = size_t{4} << 20;
constexpr size_t kChunkBytes = size_t{1} << 20, kMaxChunks = 16;

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

CompressedAllReduce::CompressedAllReduce(int rank, int nranks, AllGather allGather)
    : rank_(rank), nranks_(nranks), allGather_(std::move(allGather)) {}

CompressedAllReduce::~CompressedAllReduce() = default;

const Codec& CompressedAllReduce::codecFor(const std::string& spec) {
  if (!codec_ || spec != lastSpec_) {
    try {
      codec_ = makeCodec(spec);
    } catch (const Error& e) {
      codec_.reset();
      lastSpec_.clear();
      fail(tuttiInvalidArgument, "invalid compressor \"", spec,
           "\" (expected none, topk:ratio=R, topk:k=K or qsgd:s=S[,b=B]): ", e.what());
    }
    lastSpec_ = spec;
  }
  return *codec_;
}

void CompressedAllReduce::finishCall(uint64_t key, size_t wireBytes, size_t count) {
  ++steps_[key];
  stats_.wireBytesLastCall = wireBytes;
  stats_.denseBytesLastCall = 4 * count;
  stats_.wireBytesTotal += wireBytes;
  stats_.calls += 1;
  stats_.errorFeedbackKeys = ef_.keys();
}

// Encode, all-gather and decode chunk by chunk, the all-gathers on the helper thread, so that
// they overlap the encoding of later chunks and the decoding of earlier ones. The chunks'
// payloads are the whole payload's bytes (regrouped per chunk) and the result is the same,
// bit for bit.
size_t CompressedAllReduce::runPipelined(const Codec& codec, std::span<const float> in,
                                         std::span<float> out, StepInfo step) {
  const size_t nranks = static_cast<size_t>(nranks_), d = in.size(), align = codec.chunkAlign();
  const size_t chunks = std::clamp<size_t>(4 * d / kChunkBytes, 1, kMaxChunks);
  const size_t per = ((d + chunks - 1) / chunks + align - 1) / align * align;
  struct Chunk {
    size_t begin, n, cap, off;
  };
  std::vector<Chunk> plan;
  size_t total = 0;
  for (size_t b = 0; b < d; b += per) {
    const size_t n = std::min(per, d - b), cap = codec.maxEncodedBytes(n);
    plan.push_back({b, n, cap, total});
    total += cap;
  }
  mine_.resize(total);
  all_.resize(total * nranks);
  std::mutex m;
  std::condition_variable cv;
  size_t encoded = 0, gathered = 0;
  bool cancel = false;
  std::exception_ptr commError;
  if (!helper_) helper_ = std::make_unique<HelperThread>();
  helper_->start([&] {
    try {
      for (size_t j = 0; j < plan.size(); ++j) {
        {
          std::unique_lock lock(m);
          cv.wait(lock, [&] { return encoded > j || cancel; });
          if (cancel) return;
        }
        allGather_(mine_.data() + plan[j].off, all_.data() + nranks * plan[j].off, plan[j].cap,
                   tuttiUint8);
        std::lock_guard lock(m);
        gathered = j + 1;
        cv.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(m);
      commError = std::current_exception();
      cv.notify_all();
    }
  });
  try {
    for (size_t j = 0; j < plan.size(); ++j) {
      step.offset = plan[j].begin;
      codec.encode(in.subspan(plan[j].begin, plan[j].n),
                   std::span(mine_).subspan(plan[j].off, plan[j].cap), step);
      std::lock_guard lock(m);
      encoded = j + 1;
      cv.notify_all();
    }
    std::vector<std::span<const std::byte>> wires(nranks);
    for (size_t j = 0; j < plan.size(); ++j) {
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return gathered > j || commError; });
        if (commError) break;
      }
      for (size_t r = 0; r < nranks; ++r)
        wires[r] = std::span(all_).subspan(nranks * plan[j].off + r * plan[j].cap, plan[j].cap);
      codec.decodeSum(wires, out.subspan(plan[j].begin, plan[j].n));
    }
  } catch (...) {
    {
      std::lock_guard lock(m);
      cancel = true;
      cv.notify_all();
    }
    helper_->wait();
    throw;
  }
  helper_->wait();
  if (commError) std::rethrow_exception(commError);
  return total;
}

void CompressedAllReduce::run(const void* send, void* recv, size_t count, tuttiDataType_t dtype,
                              const std::string& spec, uint64_t key, bool useEf) {
  std::lock_guard lock(mutex_);
  const Codec& codec = codecFor(spec);
  const size_t nranks = static_cast<size_t>(nranks_);
  const StepInfo step{0, static_cast<uint32_t>(rank_), steps_[key], key};
  if (!useEf && codec.fixedSize() && codec.chunkAlign() > 0 && 4 * count >= kPipelineMinBytes &&
      nranks > 1) {
    std::span<const float> in(static_cast<const float*>(send), count);
    if (dtype != tuttiFloat32) {  // widen once; the result goes through acc_
      conv_.resize(count);
      const auto* h = static_cast<const uint16_t*>(send);
      for (size_t i = 0; i < count; ++i)
        conv_[i] = dtype == tuttiFloat16 ? halfToFloat(h[i]) : bf16ToFloat(h[i]);
      in = conv_;
      acc_.resize(count);
    }
    std::span<float> out =
        dtype == tuttiFloat32 ? std::span(static_cast<float*>(recv), count) : std::span(acc_);
    const auto t0 = std::chrono::steady_clock::now();
    const size_t n = runPipelined(codec, in, out, step);
    TUTTI_INFO(kCompress, "tuttiAllReduceCompressed " << codec.describe() << " d=" << count
                                                      << ": pipelined " << msSince(t0) << " ms, "
                                                      << n << " B");
    if (dtype != tuttiFloat32) writeResult(acc_, recv, dtype);
    finishCall(key, n, count);
    return;
  }
  const size_t cap = codec.maxEncodedBytes(count);
  mine_.resize(cap);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const size_t n = ef_.encode(key, send, count, dtype, codec, mine_, step, useEf);
  const auto t1 = Clock::now();

  // Payload lengths: known in advance for fixed-size codecs, else all-gathered first.
  std::vector<uint64_t> lens(nranks, cap);
  size_t slot = cap;
  if (!codec.fixedSize()) {
    uint64_t my = n;
    allGather_(&my, lens.data(), 1, tuttiUint64);
    slot = *std::max_element(lens.begin(), lens.end());
    for (size_t r = 0; r < nranks; ++r)
      TUTTI_CHECK_ARG(lens[r] <= cap, "rank ", r, " sent ", lens[r], " payload bytes, more than ",
                      cap, " (mismatched count or compressor?)");
  }
  std::fill(mine_.begin() + static_cast<std::ptrdiff_t>(n),
            mine_.begin() + static_cast<std::ptrdiff_t>(slot), std::byte{0});  // padding
  all_.resize(slot * nranks);
  allGather_(mine_.data(), all_.data(), slot, tuttiUint8);

  const auto t2 = Clock::now();
  // Sum in rank order (decodeSum: bitwise the zero-fill + decodeAccumulate loop); float32
  // results go straight into recv (send is no longer read: in place is fine).
  std::vector<std::span<const std::byte>> wires(nranks);
  for (size_t r = 0; r < nranks; ++r) wires[r] = std::span(all_).subspan(r * slot, lens[r]);
  if (dtype == tuttiFloat32) {
    codec.decodeSum(wires, std::span(static_cast<float*>(recv), count));
  } else {
    acc_.resize(count);
    codec.decodeSum(wires, acc_);
    writeResult(acc_, recv, dtype);
  }

  const auto t3 = Clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  TUTTI_INFO(kCompress, "tuttiAllReduceCompressed "
                            << codec.describe() << " d=" << count << (useEf ? " ef" : "")
                            << ": encode " << ms(t0, t1) << " ms, all-gather " << ms(t1, t2)
                            << " ms, decode " << ms(t2, t3) << " ms, " << n << " B");
  finishCall(key, n, count);
}

tuttiCompressionStats_t CompressedAllReduce::stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CompressedAllReduce::resetKey(uint64_t key) {
  std::lock_guard lock(mutex_);
  ef_.reset(key);
  steps_.erase(key);
  stats_.errorFeedbackKeys = ef_.keys();
}

}  // namespace tutti::compress
