// Group calls: between tuttiGroupStart and tuttiGroupEnd, operations are recorded per thread
// and issued together at the end: per communicator, its collectives in call order, then all
// of its point-to-point operations at once (so grouped sends and receives cannot deadlock);
// several communicators progress at the same time, one thread each. Inits started in the
// group finish at its end, before its calls run.
#pragma once

#include <functional>

#include "comm/communicator.h"
#include "tutti/tutti.h"

namespace tutti::api {

int groupDepth();
void deferCollective(tuttiComm_t comm, std::function<void()> run);
void deferP2p(tuttiComm_t comm, const P2pOp& op);
// An init started inside a group on its own thread: tuttiGroupEnd joins it first.
void deferInit(tuttiComm_t comm);

}  // namespace tutti::api
