#include "group_fusion.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "address_ranges.h"
#include "arg_checks.h"
#include "comm/call_tag.h"
#include "common/clock.h"
#include "common/dtype.h"
#include "common/error.h"

// Test-only (tests/multiproc/fusion_identity_mutation_test.cc): a program that defines this to
// return true takes the members' shapes out of packed and fused calls' tags (the mismatch check
// of issue 68's F1 removed), to show that its tests then fail. No other program defines it, so
// the weak reference is null.
extern "C" __attribute__((weak, visibility("default"))) bool tuttiTestFusedIdentityOff();

namespace tutti::api {

namespace {

bool identityOff() { return tuttiTestFusedIdentityOff != nullptr && tuttiTestFusedIdentityOff(); }

size_t bytesOf(const FusibleCall& c) { return std::max(c.sendBytes, c.recvBytes); }

bool reducing(const FusibleCall& c) { return algo::reduces(c.coll); }

bool packable(const FusibleCall& c) {
  return c.coll == algo::Coll::kAllReduce && c.sendBytes <= kFuseMemberBytes;
}

bool sameKind(const FusibleCall& a, const FusibleCall& b) {
  return rawEnum(a.dtype) == rawEnum(b.dtype) && rawEnum(a.op) == rawEnum(b.op);
}

// The end of the run of all-reduces packable with calls[begin] (begin + 1 when it is not): it
// ends before a call that reads what an earlier call of the run writes.
size_t packedRunEnd(const std::vector<RecordedCall>& calls, size_t begin) {
  const auto& first = calls[begin].fusible;
  if (!first || !packable(*first)) return begin + 1;
  AddressRanges written(std::min(calls.size() - begin, kFuseRunCalls));
  size_t bytes = 0, end = begin;
  for (; end < calls.size() && end - begin < kFuseRunCalls && calls[end].fusible; ++end) {
    const FusibleCall& c = *calls[end].fusible;
    if (!packable(c) || !sameKind(*first, c) || bytes + bytesOf(c) > kFuseRunBytes ||
        written.overlaps(c.send, c.sendBytes))
      break;
    written.add(c.recv, c.recvBytes);
    bytes += bytesOf(c);
  }
  return std::max(end, begin + 1);
}

// The end of the run of calls that may fuse with calls[begin] (begin when it may not): it ends
// before a call whose result depends on its order with an earlier call of the run (it reads or
// writes what an earlier one writes, or writes what an earlier one reads).
size_t fusedRunEnd(const std::vector<RecordedCall>& calls, size_t begin) {
  const FusibleCall* reducer = nullptr;
  const size_t most = std::min(calls.size() - begin, kFuseRunCalls);
  AddressRanges read(most), written(most);
  size_t bytes = 0, end = begin;
  for (; end < calls.size() && end - begin < kFuseRunCalls && calls[end].fusible; ++end) {
    const FusibleCall& c = *calls[end].fusible;
    if (reducing(c) && reducer != nullptr && !sameKind(*reducer, c)) break;
    if (bytes + bytesOf(c) > kFuseRunBytes) break;
    if (written.overlaps(c.send, c.sendBytes) || written.overlaps(c.recv, c.recvBytes) ||
        read.overlaps(c.recv, c.recvBytes))
      break;
    if (reducing(c) && reducer == nullptr) reducer = &c;
    read.add(c.send, c.sendBytes);
    written.add(c.recv, c.recvBytes);
    bytes += bytesOf(c);
  }
  return end;
}

// The digest of the calls' shapes in call order (collective, count, datatype, op, and whether
// it packs): what the tag of their packed or fused call carries, so that ranks whose calls
// differ in any member fail with a mismatch instead of combining unlike data.
uint64_t shapeDigestOf(const std::vector<const FusibleCall*>& calls) {
  ShapeDigest d;
  for (const FusibleCall* c : calls)
    d.add(static_cast<uint64_t>(c->coll))
        .add(c->count)
        .add(static_cast<uint64_t>(rawEnum(c->dtype)))
        .add(static_cast<uint64_t>(rawEnum(c->op)))
        .add(packable(*c) ? 1 : 0);
  return d.value();
}

// "allreduce(count 16), allgather(count 5)": the calls, for a mismatch's error.
std::string describeCalls(const std::vector<const FusibleCall*>& calls) {
  constexpr size_t kNamed = 8;
  std::string text;
  for (size_t k = 0; k < calls.size() && k < kNamed; ++k)
    text += std::string(k > 0 ? ", " : "") + algo::collName(calls[k]->coll) + "(count " +
            std::to_string(calls[k]->count) + ")";
  if (calls.size() > kNamed) text += ", ... (" + std::to_string(calls.size()) + " calls)";
  return text;
}

// Runs call(); a mismatch it throws also names this rank's member calls.
template <typename Call>
void namingMembersOnMismatch(const std::vector<const FusibleCall*>& calls, const char* what,
                             Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    if (e.code() != tuttiInvalidUsage) throw;
    throw Error(e.code(), std::string(e.what()) + "; this rank's " + what +
                              " calls: " + describeCalls(calls));
  }
}

// The calls' inputs one after another in one buffer (all of one datatype).
std::vector<std::byte> packInputs(const std::vector<const FusibleCall*>& members) {
  size_t total = 0;
  for (const FusibleCall* a : members) total += a->sendBytes;
  std::vector<std::byte> packed(total);
  size_t at = 0;
  for (const FusibleCall* a : members) {
    if (a->sendBytes > 0) std::memcpy(packed.data() + at, a->send, a->sendBytes);
    at += a->sendBytes;
  }
  return packed;
}

// The packed results back into the calls' outputs; each call is counted with `share` seconds.
void unpackOutputs(const std::vector<const FusibleCall*>& members,
                   const std::vector<std::byte>& packed, double share) {
  size_t at = 0;
  for (const FusibleCall* a : members) {
    if (a->recvBytes > 0) std::memcpy(a->recv, packed.data() + at, a->recvBytes);
    at += a->recvBytes;
    if (a->perf != nullptr) a->perf->add(a->perfName, bytesOf(*a), share, true);
  }
}

void runPacked(Communicator& comm, const std::vector<RecordedCall>& calls, size_t begin,
               size_t end) {
  std::vector<const FusibleCall*> members;
  size_t count = 0;
  for (size_t k = begin; k < end; ++k) {
    members.push_back(&*calls[k].fusible);
    count += calls[k].fusible->count;
  }
  std::vector<std::byte> packed = packInputs(members);
  const double t0 = nowSeconds();
  namingMembersOnMismatch(members, "packed", [&] {
    if (identityOff()) [[unlikely]]
      comm.allReduce(packed.data(), packed.data(), count, members[0]->dtype, members[0]->op);
    else
      comm.packedAllReduce(packed.data(), packed.data(), count, members[0]->dtype, members[0]->op,
                           members.size(), shapeDigestOf(members));
  });
  unpackOutputs(members, packed, (nowSeconds() - t0) / static_cast<double>(members.size()));
}

// Runs calls [begin, end) as one fused call (their small all-reduces packed into one member);
// false, having run nothing, when the run is only small all-reduces (packed on their own they
// may use the shared window) or the communicator cannot fuse it.
bool runFused(Communicator& comm, const std::vector<RecordedCall>& calls, size_t begin,
              size_t end) {
  std::vector<const FusibleCall*> all, packed, others;
  for (size_t k = begin; k < end; ++k) {
    all.push_back(&*calls[k].fusible);
    (packable(*calls[k].fusible) ? packed : others).push_back(&*calls[k].fusible);
  }
  if (others.empty()) return false;
  if (packed.size() == 1) {  // nothing to pack it with: a member of its own
    others.insert(others.begin(), packed[0]);
    packed.clear();
  }
  std::vector<std::byte> buffer = packInputs(packed);
  std::vector<Communicator::FusedCall> members;
  if (!packed.empty()) {
    size_t count = 0;
    for (const FusibleCall* a : packed) count += a->count;
    members.push_back({algo::Coll::kAllReduce, buffer.data(), buffer.data(), count,
                       packed[0]->dtype, packed[0]->op});
  }
  for (const FusibleCall* c : others)
    members.push_back({c->coll, c->send, c->recv, c->count, c->dtype, c->op});
  const double t0 = nowSeconds();
  bool fused = false;
  namingMembersOnMismatch(all, "fused", [&] {
    fused = comm.fusedCollectives(members, identityOff() ? 0 : shapeDigestOf(all));
  });
  if (!fused) return false;
  const double share = (nowSeconds() - t0) / static_cast<double>(end - begin);
  unpackOutputs(packed, buffer, share);
  for (const FusibleCall* c : others)
    if (c->perf != nullptr) c->perf->add(c->perfName, bytesOf(*c), share, true);
  return true;
}

// Calls [begin, end) in order, consecutive small all-reduces packed.
void runPackedOrAlone(Communicator& comm, const std::vector<RecordedCall>& calls, size_t begin,
                      size_t end) {
  while (begin < end) {
    const size_t stop = std::min(end, packedRunEnd(calls, begin));
    if (stop - begin >= 2)
      runPacked(comm, calls, begin, stop);
    else
      calls[begin].run();
    begin = stop;
  }
}

}  // namespace

void runRecordedCalls(Communicator& comm, const std::vector<RecordedCall>& calls) {
  for (size_t begin = 0; begin < calls.size();) {
    // The fusible calls from begin on: only a stretch holding more than all-reduces that pack
    // may pay for a fused run (runFused); one of packable all-reduces packs.
    size_t end = begin;
    bool mixed = false;
    for (; end < calls.size() && calls[end].fusible; ++end)
      mixed = mixed || !packable(*calls[end].fusible);
    if (mixed) {
      end = fusedRunEnd(calls, begin);
      if (end - begin >= 2 && runFused(comm, calls, begin, end)) {
        begin = end;
        continue;
      }
    }
    end = std::max(end, begin + 1);
    runPackedOrAlone(comm, calls, begin, end);
    begin = end;
  }
}

}  // namespace tutti::api
