// Top-k, row scatter-add and product-key scoring on own kernels (cuda_kernels.h): stage the
// caller's host data, launch, queue the copies back.
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_staging.h"

namespace adaptd::kernels::gpu {

absl::Status TopKOnDevice(CudaResources& r, int rows, int n, const float* x, int64_t ldx, int k,
                          int32_t* idx, float* val) {
  WorkspacePlan plan;
  const size_t x_at = plan.Add<float>(static_cast<size_t>(rows) * n);
  const size_t idx_at = plan.Add<int32_t>(static_cast<size_t>(rows) * k);
  const size_t val_at = plan.Add<float>(static_cast<size_t>(rows) * k);
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  float* d_x = WorkspacePlan::At<float>(*base, x_at);
  int32_t* d_idx = WorkspacePlan::At<int32_t>(*base, idx_at);
  float* d_val = WorkspacePlan::At<float>(*base, val_at);
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), x, ldx, rows, n, d_x));
  CUDA_RETURN_IF_ERROR(LaunchTopK(rows, n, d_x, n, k, d_idx, d_val, r.stream()));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToHost(r.stream(), d_idx, rows, k, idx, k));
  return CopyToHost(r.stream(), d_val, rows, k, val, k);
}

absl::Status RowScatterAddOnDevice(CudaResources& r, int rows, int n, const int64_t* dst_rows,
                                   float alpha, const float* src, int64_t lds, float* dst,
                                   int64_t ldd, int dst_count) {
  WorkspacePlan plan;
  const size_t rows_at = plan.Add<int64_t>(rows);
  const size_t src_at = plan.Add<float>(static_cast<size_t>(rows) * n);
  const size_t dst_at = plan.Add<float>(static_cast<size_t>(dst_count) * n);
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  int64_t* d_rows = WorkspacePlan::At<int64_t>(*base, rows_at);
  float* d_src = WorkspacePlan::At<float>(*base, src_at);
  float* d_dst = WorkspacePlan::At<float>(*base, dst_at);
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), dst_rows, rows, 1, rows, d_rows));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), src, lds, rows, n, d_src));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), dst, ldd, dst_count, n, d_dst));
  CUDA_RETURN_IF_ERROR(LaunchRowScatterAdd(rows, n, d_rows, alpha, d_src, d_dst, r.stream()));
  return CopyToHost(r.stream(), d_dst, dst_count, n, dst, ldd);
}

absl::Status ProductKeyScoresOnDevice(CudaResources& r, const ProductKeyQuery& p) {
  const int key_dim = 2 * p.half;
  const size_t score_rows = static_cast<size_t>(p.count) * 2;
  WorkspacePlan plan;
  const size_t q_at = plan.Add<float>(static_cast<size_t>(p.count) * key_dim);
  const size_t t0_at = plan.Add<float>(static_cast<size_t>(p.half) * p.n);
  const size_t t1_at = plan.Add<float>(static_cast<size_t>(p.half) * p.n);
  const size_t scores_at = plan.Add<float>(score_rows * p.n);
  const size_t idx_at = plan.Add<int32_t>(score_rows * p.k);
  const size_t val_at = plan.Add<float>(score_rows * p.k);
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  float* d_q = WorkspacePlan::At<float>(*base, q_at);
  float* d_t0 = WorkspacePlan::At<float>(*base, t0_at);
  float* d_t1 = WorkspacePlan::At<float>(*base, t1_at);
  float* d_scores = WorkspacePlan::At<float>(*base, scores_at);
  int32_t* d_idx = WorkspacePlan::At<int32_t>(*base, idx_at);
  float* d_val = WorkspacePlan::At<float>(*base, val_at);
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), p.q, p.ldq, p.count, key_dim, d_q));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), p.tables[0], p.n, p.half, p.n, d_t0));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), p.tables[1], p.n, p.half, p.n, d_t1));
  CUDA_RETURN_IF_ERROR(LaunchProductKeyScores(static_cast<int>(p.count), p.half, p.n, d_q, d_t0,
                                              d_t1, p.eps, d_scores, r.stream()));
  CUDA_RETURN_IF_ERROR(
      LaunchTopK(static_cast<int>(score_rows), p.n, d_scores, p.n, p.k, d_idx, d_val, r.stream()));
  CUDA_KERNELS_RETURN_IF_ERROR(
      CopyToHost(r.stream(), d_idx, static_cast<int64_t>(score_rows), p.k, p.idx, p.k));
  return CopyToHost(r.stream(), d_val, static_cast<int64_t>(score_rows), p.k, p.score, p.k);
}

}  // namespace adaptd::kernels::gpu
