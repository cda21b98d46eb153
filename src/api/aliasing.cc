#include "aliasing.h"

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/error.h"

namespace tutti::api {

void checkAliasing(const CallBuffers& b, std::ptrdiff_t inPlaceOffset) {
  if (b.sendBytes == 0 || b.recvBytes == 0 || b.send == nullptr || b.recv == nullptr) return;
  const auto s = reinterpret_cast<uintptr_t>(b.send);
  const auto r = reinterpret_cast<uintptr_t>(b.recv);
  if (s >= r + b.recvBytes || r >= s + b.sendBytes) return;  // disjoint
  const std::ptrdiff_t offset = static_cast<std::ptrdiff_t>(s - r);
  if (offset == inPlaceOffset) return;
  std::ostringstream os;
  os << "sendbuff " << b.send << " (" << b.sendBytes << " B) and recvbuff " << b.recv << " ("
     << b.recvBytes << " B) overlap; the only overlap allowed is in place, with "
     << "sendbuff = recvbuff";
  if (inPlaceOffset != 0)
    os << (inPlaceOffset > 0 ? " + " : " - ") << std::abs(inPlaceOffset) << " B";
  fail(tuttiInvalidArgument, os.str());
}

}  // namespace tutti::api
