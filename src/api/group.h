// Group calls: between tuttiGroupStart and tuttiGroupEnd, operations are recorded per thread
// and issued together at the end: per communicator, its collectives in call order, then all
// of its point-to-point operations at once (so grouped sends and receives cannot deadlock);
// several communicators progress at the same time, one thread each. Inits started in the
// group finish at its end, before its calls run. A communicator's calls in one group name one
// stream: NULL (or a cudaStream_t) and they run inside tuttiGroupEnd, or one host stream and
// tuttiGroupEnd enqueues them there as one task (in the communicator's call order).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "comm/communicator.h"
#include "group_fusion.h"
#include "host_stream.h"
#include "tutti/tutti.h"

namespace tutti::api {

int groupDepth();
// Throw tuttiInvalidUsage when an earlier call of the group on comm named another stream.
// fusible: set for a call of host buffers that group_fusion.h may fuse or pack with others.
// estimate: the call's time under the cost model (tuttiGroupSimulateEnd; null: none).
void deferCollective(tuttiComm_t comm, std::function<void()> run,
                     std::shared_ptr<HostStream> stream, std::optional<FusibleCall> fusible,
                     std::function<double(Communicator&)> estimate);
// The cost model's time of a recorded call named fn (a C entry point) with info, or null for
// a call the model cannot price (tuttiNeighborAllReduce, tuttiAllReduceCompressed).
std::function<double(Communicator&)> estimateOf(std::string_view fn, const CallInfo& info);
void deferP2p(tuttiComm_t comm, const P2pOp& op, std::shared_ptr<HostStream> stream);
// An init started inside a group on its own thread: tuttiGroupEnd joins it first.
void deferInit(tuttiComm_t comm);
// Whether `function` (a C entry point's name) is a call an open group records: a collective,
// a send or a receive.
bool recordedByGroups(std::string_view function);
// A call the open group would have recorded was refused (code, text as the call returned
// them): the outermost tuttiGroupEnd then fails with it and runs none of the group's calls on
// this thread, as ncclGroupEnd does, instead of running the group without it.
void noteRefusedInGroup(tuttiResult_t code, const std::string& text);

}  // namespace tutti::api
