#include "exec/window_program.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/calls_in_flight.h"
#include "common/clock.h"
#include "common/copy_bytes.h"
#include "common/dtype.h"
#include "common/error.h"
#include "common/log.h"
#include "reduce/reduce.h"
#include "window_call.h"

namespace tutti::exec {

WindowProgram::Step WindowProgram::marker(OpType type, int peer, uint32_t phase) {
  Step s;
  s.type = type;
  s.peer = peer;
  s.phase = phase;
  return s;
}

bool WindowProgram::applies(const Schedule& schedule) {
  if (schedule.windowPhases == 0 && schedule.windowBytes == 0) return false;
  for (const Round& r : schedule.rounds)
    for (const Op& op : r.ops)
      if (op.type == OpType::kSend || op.type == OpType::kRecv || op.type == OpType::kRecvReduce ||
          op.type == OpType::kMix)
        return false;
  return true;
}

WindowProgram::Ref WindowProgram::resolve(const Slice& s, transport::Window& window,
                                          size_t regionBytes) {
  Ref r;
  if (s.buf == Buf::kWindow) {
    // The call adds its half's offset (0 or halfBytes) to this address: the slice must lie
    // in the part of the region a call of this schedule may use.
    TUTTI_ASSERT(s.offset + s.bytes <= regionBytes);
    r.window = window.base(s.rank) + s.offset;
    return r;
  }
  r.buf = static_cast<size_t>(s.buf);
  r.offset = s.offset;
  buffersNeeded_ = std::max(buffersNeeded_, r.buf + 1);
  return r;
}

WindowProgram::WindowProgram(const Schedule& schedule, transport::Window& window)
    : window_(&window),
      algorithm_(schedule.algorithm),
      windowBytes_(schedule.windowBytes),
      windowPhases_(schedule.windowPhases),
      finalPostOnlyForNextCall_(schedule.finalPostOnlyForNextCall),
      dtype_(schedule.dtype),
      op_(schedule.op),
      elemSize_(dtypeSize(schedule.dtype)) {
  TUTTI_ASSERT(applies(schedule));
  // A schedule that fits in half the region runs in either half (window_call.cc).
  const size_t halfBytes = WindowState::halfBytes(window.bytes());
  const bool halves = schedule.windowPhases > 0 && schedule.windowBytes <= halfBytes;
  const size_t regionBytes = halves ? halfBytes : window.bytes();
  for (const Round& round : schedule.rounds) {
    for (const Op& op : round.ops)
      if (op.type == OpType::kWait) steps_.push_back(marker(OpType::kWait, op.peer, op.phase));
    for (size_t i = 0; i < round.ops.size(); ++i) {
      const Op& op = round.ops[i];
      switch (op.type) {
        case OpType::kPost:
          steps_.push_back(marker(OpType::kPost, -1, op.phase));
          break;
        case OpType::kCopy: {
          TUTTI_ASSERT(op.src.bytes == op.dst.bytes);
          if (op.dst.bytes == 0) break;
          Step s = marker(OpType::kCopy, -1, 0);
          s.bytes = op.dst.bytes;
          s.dst = resolve(op.dst, window, regionBytes);
          s.src = resolve(op.src, window, regionBytes);
          steps_.push_back(s);
          break;
        }
        case OpType::kReduce: {
          TUTTI_ASSERT(op.src.bytes == op.dst.bytes && op.src2.bytes == op.dst.bytes);
          if (op.dst.bytes == 0) break;
          Step s = marker(OpType::kReduce, -1, 0);
          s.bytes = op.dst.bytes;
          s.dst = resolve(op.dst, window, regionBytes);
          s.src = resolve(op.src, window, regionBytes);
          s.src2 = resolve(op.src2, window, regionBytes);
          // The executor's fused chain: the reduces after this one that accumulate into the
          // same destination (dst = dst op x).
          s.chain = static_cast<uint32_t>(detail::reduceChainLength(round.ops, i));
          steps_.push_back(s);
          reduces_ = true;
          break;
        }
        case OpType::kWait:
          break;
        case OpType::kSend:
        case OpType::kRecv:
        case OpType::kRecvReduce:
        case OpType::kMix:
          TUTTI_ASSERT(false);
      }
    }
  }
}

void WindowProgram::trace(double seconds) const {
  size_t waits = 0, posts = 0, copies = 0, copyBytes = 0, reduces = 0, reduceBytes = 0;
  for (const Step& s : steps_) {
    if (s.type == OpType::kWait) ++waits;
    if (s.type == OpType::kPost) ++posts;
    if (s.type == OpType::kCopy) ++copies, copyBytes += s.bytes;
    if (s.type == OpType::kReduce) ++reduces, reduceBytes += s.bytes;
  }
  char reduction[64] = "";
  if (reduces_) snprintf(reduction, sizeof(reduction), " (%s %s)", dtypeName(dtype_), opName(op_));
  char text[320];
  snprintf(text, sizeof(text),
           "executed window program %s%s: %zu steps: window waits %zu, posts %zu, copies %zu "
           "(%zu B), reduces %zu (%zu B); %.2f us",
           algorithm_.c_str(), reduction, steps_.size(), waits, posts, copies, copyBytes, reduces,
           reduceBytes, seconds * 1e6);
  log::write(log::Level::kTrace, log::Subsys::kExec, text);
}

void WindowProgram::run(std::span<std::byte* const> buffers, const ExecOptions& options) const {
  TUTTI_ASSERT(options.window == window_ && buffers.size() >= buffersNeeded_);
  const CallsInFlight counted;
  const bool traced = log::enabled(log::Level::kTrace, log::Subsys::kExec);
  const double t0 = traced ? nowSeconds() : 0;
  const detail::WindowNeeds needs{algorithm_.c_str(), windowBytes_, windowPhases_,
                                  finalPostOnlyForNextCall_};
  const detail::WindowUse use = detail::beginWindowCall(window_, options.windowState, needs);
  const reduce::Kernel kernel = reduces_ ? reduce::kernelFor(dtype_, op_) : nullptr;
  const transport::WaitPolicy policy{options.spinUs, options.spinYield, options.timeoutSec,
                                     &options.onStall, options.yieldAboveCalls};
  const bool checkCalls = options.windowTags != nullptr;
  const size_t hb = use.base;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    switch (s.type) {
      case OpType::kWait:
        blamingPeer(s.peer, [&] { window_->wait(s.peer, use.target(s.phase), policy); });
        if (s.phase >= 1 && checkCalls) detail::checkPeerCall(use, s.peer, options);
        break;
      case OpType::kPost:
        if (use.skipFinalPost && s.phase == windowPhases_) break;
        window_->post(use.epoch + s.phase);
        break;
      case OpType::kCopy: {
        std::byte* dst = s.dst.at(buffers, hb);
        const std::byte* src = s.src.at(buffers, hb);
        copyBytes(dst, src, s.bytes);
        break;
      }
      case OpType::kReduce:
        if (s.chain == 1 || s.bytes <= detail::kReduceBlockBytes) {
          kernel(s.dst.at(buffers, hb), s.src.at(buffers, hb), s.src2.at(buffers, hb),
                 s.bytes / elemSize_);
          break;
        }
        {
          // Block by block through the whole chain, the destination staying in cache.
          const size_t block = detail::kReduceBlockBytes / elemSize_ * elemSize_;
          for (size_t off = 0; off < s.bytes; off += block) {
            const size_t len = std::min(block, s.bytes - off);
            for (size_t k = 0; k < s.chain; ++k) {
              const Step& c = steps_[i + k];
              kernel(c.dst.at(buffers, hb) + off, c.src.at(buffers, hb) + off,
                     c.src2.at(buffers, hb) + off, len / elemSize_);
            }
          }
          i += s.chain - 1;
        }
        break;
      case OpType::kSend:
      case OpType::kRecv:
      case OpType::kRecvReduce:
      case OpType::kMix:
        break;
    }
  }
  detail::endWindowCall(use, needs);
  if (traced) trace(nowSeconds() - t0);
}

}  // namespace tutti::exec
