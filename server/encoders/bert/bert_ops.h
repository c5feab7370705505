// The element-wise parts of the BERT forward pass, on row-major float matrices
// (rows × cols, leading dimension = cols). Each is a single pass over its rows.
#ifndef ADAPTD_SERVER_ENCODERS_BERT_BERT_OPS_H_
#define ADAPTD_SERVER_ENCODERS_BERT_BERT_OPS_H_

#include <cstdint>

namespace adaptd::bert {

// x = LayerNorm(x + bias + residual) · gamma + beta, per row; `residual` may be null.
// Statistics: float partial sums in 16 lanes, folded and finished in double.
void BiasResidualLayerNorm(int64_t rows, int64_t cols, float* x, const float* bias,
                           const float* residual, const float* gamma, const float* beta,
                           double eps);

// x = GELU(x + bias) with the exact form 0.5·v·(1 + erf(v/√2)); `bias` may be null.
void BiasGelu(int64_t rows, int64_t cols, float* x, const float* bias);

// Every row of x (rows × cols) = bias: the starting C of a GEMM run with beta = 1, which
// adds the bias for free.
void BroadcastRows(int64_t rows, int64_t cols, float* x, const float* bias);

// x += bias, per row (ld = the row stride, cols ≤ ld).
void AddBias(int64_t rows, int64_t cols, int64_t ld, float* x, const float* bias);

// Row-wise softmax in place.
void SoftmaxRows(int64_t rows, int64_t cols, float* x);

// erf(x) to a few float ulps (about 1e-7 absolute), branch-free so loops over it vectorise.
float FastErf(float x);

}  // namespace adaptd::bert

#endif  // ADAPTD_SERVER_ENCODERS_BERT_BERT_OPS_H_
