// The argument checks of every backend (op_checks.h).
#include "kernels/op_checks.h"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace adaptd::kernels {

absl::Status CheckMatrix(const char* name, int64_t rows, int64_t cols, const void* data,
                         int64_t ld) {
  if (rows < 0 || cols < 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": negative dimension ", rows, "x", cols));
  }
  if (rows == 0 || cols == 0) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError(absl::StrCat(name, ": null pointer"));
  if (rows > 1 && ld < cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": leading dimension ", ld, " is below the row length ", cols));
  }
  return absl::OkStatus();
}

absl::Status CheckCount(const char* name, int64_t value) {
  if (value < 0) return absl::InvalidArgumentError(absl::StrCat(name, ": negative (", value, ")"));
  return absl::OkStatus();
}

absl::Status CheckBlasInt(const char* name, int64_t value) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (value > kMax) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", value, " exceeds the 32-bit BLAS limit ", kMax));
  }
  return absl::OkStatus();
}

namespace {

// Each named value is a count (not negative) within BLAS's int.
absl::Status CheckBlasCounts(std::initializer_list<std::pair<const char*, int64_t>> counts) {
  for (const auto& [name, value] : counts) {
    if (auto s = CheckCount(name, value); !s.ok()) return s;
    if (auto s = CheckBlasInt(name, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckBlasInts(std::initializer_list<std::pair<const char*, int64_t>> values) {
  for (const auto& [name, value] : values) {
    if (auto s = CheckBlasInt(name, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckGemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, const void* a,
                       int64_t lda, const void* b, int64_t ldb, const void* c, int64_t ldc) {
  if (auto s = CheckBlasCounts({{"m", m}, {"n", n}, {"k", k}}); !s.ok()) return s;
  if (auto s = CheckBlasInts({{"lda", lda}, {"ldb", ldb}, {"ldc", ldc}}); !s.ok()) return s;
  if (m == 0 || n == 0) return absl::OkStatus();  // nothing is read or written
  const bool ta = trans_a == Trans::kYes, tb = trans_b == Trans::kYes;
  if (auto s = CheckMatrix("a", ta ? k : m, ta ? m : k, a, lda); !s.ok()) return s;
  if (auto s = CheckMatrix("b", tb ? n : k, tb ? k : n, b, ldb); !s.ok()) return s;
  return CheckMatrix("c", m, n, c, ldc);
}

absl::Status CheckSyrk(int64_t n, int64_t k, const void* a, int64_t lda, const void* c,
                       int64_t ldc) {
  if (auto s = CheckBlasCounts({{"n", n}, {"k", k}}); !s.ok()) return s;
  if (auto s = CheckBlasInts({{"lda", lda}, {"ldc", ldc}}); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (auto s = CheckMatrix("a", k, n, a, lda); !s.ok()) return s;
  return CheckMatrix("c", n, n, c, ldc);
}

absl::Status CheckSymmetricEigen(int64_t n, const double* a, const double* w) {
  if (auto s = CheckBlasCounts({{"n", n}}); !s.ok()) return s;
  if (auto s = CheckMatrix("a", n, n, a, n); !s.ok()) return s;
  return CheckMatrix("w", 1, n, w, n);
}

absl::Status CheckCholeskySolve(int64_t n, int64_t m, const double* a, const double* b) {
  if (auto s = CheckBlasCounts({{"n", n}, {"m", m}}); !s.ok()) return s;
  if (auto s = CheckMatrix("a", n, n, a, n); !s.ok()) return s;
  return CheckMatrix("b", n, m, b, m);
}

absl::Status CheckGemv(Trans trans, int64_t m, int64_t n, const void* a, int64_t lda, const void* x,
                       const void* y) {
  if (auto s = CheckBlasCounts({{"m", m}, {"n", n}}); !s.ok()) return s;
  if (auto s = CheckBlasInts({{"lda", lda}}); !s.ok()) return s;
  const int64_t x_len = trans == Trans::kNo ? n : m, y_len = trans == Trans::kNo ? m : n;
  if (y_len == 0) return absl::OkStatus();  // nothing is read or written
  if (auto s = CheckMatrix("a", m, n, a, lda); !s.ok()) return s;
  if (auto s = CheckMatrix("x", 1, x_len, x, x_len); !s.ok()) return s;
  return CheckMatrix("y", 1, y_len, y, y_len);
}

absl::Status CheckSyrkAccumulate(int64_t n, int64_t k, const float* a, int64_t lda, const double* c,
                                 int64_t ldc) {
  // k is not limited: the CPU hands A to DSYRK in blocks of rows.
  if (auto s = CheckCount("k", k); !s.ok()) return s;
  if (auto s = CheckBlasCounts({{"n", n}}); !s.ok()) return s;
  if (auto s = CheckBlasInts({{"ldc", ldc}}); !s.ok()) return s;
  if (auto s = CheckMatrix("a", k, n, a, lda); !s.ok()) return s;
  return CheckMatrix("c", n, n, c, ldc);
}

absl::Status CheckTopK(int64_t rows, int64_t n, const float* x, int64_t ldx, int k,
                       const int32_t* idx, const float* val) {
  if (k < 0) return absl::InvalidArgumentError(absl::StrCat("k: negative (", k, ")"));
  if (k > n) {
    return absl::InvalidArgumentError(absl::StrCat("k: ", k, " exceeds the row length n = ", n));
  }
  if (n > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("n: ", n, " exceeds the int32 index range"));
  }
  if (auto s = CheckMatrix("x", rows, n, x, ldx); !s.ok()) return s;
  if (auto s = CheckMatrix("idx", rows, k, idx, k); !s.ok()) return s;
  return CheckMatrix("val", rows, k, val, k);
}

absl::Status CheckRowScatterAdd(int64_t rows, int64_t n, const int64_t* dst_rows, const float* src,
                                int64_t lds, const float* dst, int64_t ldd, int64_t dst_count) {
  if (auto s = CheckMatrix("src", rows, n, src, lds); !s.ok()) return s;
  if (auto s = CheckMatrix("dst", dst_count, n, dst, ldd); !s.ok()) return s;
  if (rows > 0 && dst_rows == nullptr) return absl::InvalidArgumentError("dst_rows: null pointer");
  for (int64_t r = 0; r < rows; ++r) {
    if (dst_rows[r] < 0 || dst_rows[r] >= dst_count) {
      return absl::InvalidArgumentError(
          absl::StrCat("dst_rows[", r, "] = ", dst_rows[r], " is outside [0, ", dst_count, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGroupedGemm(std::span<const GemmGroup> groups) {
  for (size_t i = 0; i < groups.size(); ++i) {
    const GemmGroup& g = groups[i];
    const std::string at = absl::StrCat("groups[", i, "].");
    if (g.m < 0 || g.n < 0 || g.k < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, "m/n/k: negative dimension ", g.m, "x", g.n, "x", g.k));
    }
    if (g.m == 0 || g.n == 0) continue;
    if (auto s = CheckMatrix((at + "a").c_str(), g.m, g.k, g.a, g.lda); !s.ok()) return s;
    if (auto s = CheckMatrix((at + "b").c_str(), g.k, g.n, g.b, g.ldb); !s.ok()) return s;
    if (auto s = CheckMatrix((at + "c").c_str(), g.m, g.n, g.c, g.ldc); !s.ok()) return s;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status CheckFalconChunk(const FalconChunk<T>& k) {
  if (k.d < 0 || k.m < 0 || k.h < 0 || k.c < 1) {
    return absl::InvalidArgumentError(absl::StrCat("chunk: bad shape d=", k.d, " m=", k.m,
                                                   " h=", k.h, " c=", k.c, " (c must be ≥ 1)"));
  }
  const int64_t e = k.h + k.c;
  if (auto s = CheckMatrix("chunk.keys", e, k.d, k.keys, k.d); !s.ok()) return s;
  if (auto s = CheckMatrix("chunk.targets", e, k.m, k.targets, k.m); !s.ok()) return s;
  if (auto s = CheckMatrix("chunk.s", k.d, k.m, k.s, k.m); !s.ok()) return s;
  if (static_cast<int64_t>(k.window.size()) != k.c) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk.window: ", k.window.size(), " entries, want c = ", k.c));
  }
  for (int64_t t = 0; t < k.c; ++t) {
    if (k.window[t] < 1 || k.window[t] > k.h + t + 1) {
      return absl::InvalidArgumentError(absl::StrCat("chunk.window[", t, "] = ", k.window[t],
                                                     " is outside [1, ", k.h + t + 1, "]"));
    }
  }
  std::vector<int> owner(k.m, 0);
  for (size_t g = 0; g < k.groups.size(); ++g) {
    const FalconColumnGroup& group = k.groups[g];
    if (group.columns.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("chunk.groups[", g, "].columns: empty"));
    }
    if (static_cast<int64_t>(group.log_gamma.size()) != k.c ||
        static_cast<int64_t>(group.rate.size()) != k.c) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk.groups[", g, "]: log_gamma and rate need c = ", k.c, " entries"));
    }
    for (int64_t col : group.columns) {
      if (col < 0 || col >= k.m || owner[col]++ != 0) {
        return absl::InvalidArgumentError(absl::StrCat("chunk.groups[", g, "].columns: column ",
                                                       col, " is out of range or repeated"));
      }
    }
  }
  for (int64_t col = 0; col < k.m; ++col) {
    if (owner[col] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk.groups: column ", col, " belongs to no group"));
    }
  }
  return absl::OkStatus();
}
template absl::Status CheckFalconChunk<float>(const FalconChunk<float>&);
template absl::Status CheckFalconChunk<double>(const FalconChunk<double>&);

absl::Status CheckProductKeyQuery(const ProductKeyQuery& q) {
  if (q.half < 1 || q.n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("query: half = ", q.half, " and n = ", q.n, " must be at least 1"));
  }
  if (q.k < 1 || q.k > q.n || q.k > kProductKeyMaxK) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query.k: ", q.k, " is outside [1, min(n = ", q.n, ", ", kProductKeyMaxK, ")]"));
  }
  if (!(q.eps > 0)) return absl::InvalidArgumentError("query.eps: must be positive");
  if (q.count < 0) return absl::InvalidArgumentError("query.count: negative");
  if (q.count == 0) return absl::OkStatus();
  if (auto s = CheckMatrix("query.q", q.count, 2 * int64_t{q.half}, q.q, q.ldq); !s.ok()) return s;
  if (q.tables[0] == nullptr || q.tables[1] == nullptr) {
    return absl::InvalidArgumentError("query.tables: null pointer");
  }
  if (q.idx == nullptr || q.score == nullptr) {
    return absl::InvalidArgumentError("query.idx/score: null pointer");
  }
  return absl::OkStatus();
}

}  // namespace adaptd::kernels
