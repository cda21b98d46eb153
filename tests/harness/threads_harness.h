// Runs body(rank) on nranks threads, joins them all, then rethrows the first exception any
// rank threw (the others' are dropped). gtest assertions inside body work as usual.
#pragma once

#include <functional>

namespace tutti::test {

void runThreads(int nranks, std::function<void(int rank)> body);

}  // namespace tutti::test
