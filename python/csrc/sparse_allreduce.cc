#include "sparse_allreduce.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "types.h"

namespace tutti::torch_backend {

namespace {

// What every rank's tensor must agree on, as one number (sizes, sparse dimensions, dtype).
int64_t shapeKey(const at::Tensor& t) {
  size_t h = std::hash<int64_t>{}(t.sparse_dim()) ^ (size_t(t.scalar_type()) << 20);
  for (int64_t s : t.sizes()) h = h * 1000003u ^ std::hash<int64_t>{}(s);
  return static_cast<int64_t>(h);
}

struct Blocks {
  std::vector<size_t> counts, displs;
  size_t total = 0;
};

// counts[r] = nnz[r] * perEntry, and their prefix sums.
Blocks blocksOf(const std::vector<int64_t>& nnz, int64_t perEntry) {
  Blocks b;
  for (int64_t n : nnz) {
    b.counts.push_back(static_cast<size_t>(n * perEntry));
    b.displs.push_back(b.total);
    b.total += b.counts.back();
  }
  return b;
}

}  // namespace

tuttiResult_t sparseAllReduceSum(const at::Tensor& t, tuttiComm_t comm, int size, at::Tensor& out) {
  const at::Tensor in = t.coalesce();
  const int64_t sparseDim = in.sparse_dim();
  const at::Tensor indices = in._indices().contiguous();  // [sparseDim, nnz], int64
  const at::Tensor values = in._values().contiguous();    // [nnz, dense sizes...]
  const int64_t nnz = in._nnz();
  int64_t perValue = 1;
  for (int64_t d = 1; d < values.dim(); ++d) perValue *= values.size(d);

  // Every rank's entry count and shape key.
  const int64_t mine[2] = {nnz, shapeKey(in)};
  std::vector<int64_t> meta(2 * size);
  if (tuttiResult_t r = tuttiAllGather(mine, meta.data(), 2, tuttiInt64, comm, nullptr);
      r != tuttiSuccess)
    return r;
  std::vector<int64_t> nnzs(size);
  for (int r = 0; r < size; ++r) {
    if (meta[2 * r + 1] != mine[1])
      throw std::invalid_argument(
          "tutti allreduce (sparse): rank " + std::to_string(r) +
          "'s tensor differs from this rank's in sizes, sparse dimensions or dtype");
    nnzs[r] = meta[2 * r];
  }

  const Blocks ib = blocksOf(nnzs, sparseDim), vb = blocksOf(nnzs, perValue);
  at::Tensor allIndices = at::empty({static_cast<int64_t>(ib.total)}, indices.options());
  std::vector<int64_t> valueSizes = values.sizes().vec();
  valueSizes[0] = static_cast<int64_t>(vb.total / std::max<int64_t>(perValue, 1));
  at::Tensor allValues = at::empty(valueSizes, values.options());
  if (tuttiResult_t r =
          tuttiAllGatherV(indices.numel() ? indices.data_ptr() : nullptr, indices.numel(),
                          ib.total ? allIndices.data_ptr() : nullptr, ib.counts.data(),
                          ib.displs.data(), tuttiInt64, comm, nullptr);
      r != tuttiSuccess)
    return r;
  if (tuttiResult_t r =
          tuttiAllGatherV(values.numel() ? values.data_ptr() : nullptr, values.numel(),
                          vb.total ? allValues.data_ptr() : nullptr, vb.counts.data(),
                          vb.displs.data(), dataTypeOf(values), comm, nullptr);
      r != tuttiSuccess)
    return r;

  // Rank r's indices are a [sparseDim, nnz_r] block: side by side along the entries.
  std::vector<at::Tensor> parts;
  for (int r = 0; r < size; ++r)
    parts.push_back(
        allIndices.narrow(0, static_cast<int64_t>(ib.displs[r]), static_cast<int64_t>(ib.counts[r]))
            .view({sparseDim, nnzs[r]}));
  out = at::sparse_coo_tensor(at::cat(parts, 1), allValues, in.sizes()).coalesce();
  return tuttiSuccess;
}

}  // namespace tutti::torch_backend
