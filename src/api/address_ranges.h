// A union of byte ranges of memory, kept as sorted disjoint intervals in one vector: add a
// range, ask whether a range overlaps any byte added. A query is a binary search; an add
// merges the intervals it touches (a move of the ones after it: cheap for the hundreds of
// calls of a group, and no allocation per range). Used to find where a group's calls start to
// depend on each other.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tutti::api {

class AddressRanges {
 public:
  // Room for `ranges` disjoint ranges before the first reallocation.
  explicit AddressRanges(size_t ranges = 0) { ranges_.reserve(ranges); }
  void add(const void* at, size_t bytes) {
    if (bytes == 0) return;
    uintptr_t begin = reinterpret_cast<uintptr_t>(at), end = begin + bytes;
    // The first interval that ends at or after begin: it and the ones after it that start at
    // or before end touch the new range.
    auto first = std::lower_bound(ranges_.begin(), ranges_.end(), begin,
                                  [](const Range& r, uintptr_t b) { return r.second < b; });
    auto last = first;
    while (last != ranges_.end() && last->first <= end) {
      begin = std::min(begin, last->first);
      end = std::max(end, last->second);
      ++last;
    }
    if (first == last) {
      ranges_.insert(first, Range{begin, end});
      return;
    }
    *first = Range{begin, end};
    ranges_.erase(first + 1, last);
  }
  bool overlaps(const void* at, size_t bytes) const {
    if (bytes == 0) return false;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(at), end = begin + bytes;
    // The first interval that ends after begin overlaps when it starts before end.
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), begin,
                               [](uintptr_t b, const Range& r) { return b < r.second; });
    return it != ranges_.end() && it->first < end;
  }

 private:
  using Range = std::pair<uintptr_t, uintptr_t>;  // [first, second), sorted, disjoint
  std::vector<Range> ranges_;
};

}  // namespace tutti::api
