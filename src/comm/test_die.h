// TUTTI_TEST_DIE_AT=<phase>:<rank> (test only): that rank kills itself (SIGKILL) when it
// reaches the phase ("setup": init, before its setup barrier; "window": shared window setup,
// "connect": connection setup, "split": a split child's setup, "shrink": a shrink's new
// communicator, in the parent's numbering; "agree": agreeing on the failed ranks).
#pragma once

namespace tutti {

void testDieAt(const char* phase, int rank);

}  // namespace tutti
