// A float64 model of the six Falcon update rules, written from the equations of ALGORITHMS.md
// section 2 one pair at a time, for checking FalconStore from outside. It shares no code with
// the store (falcon_rules.*, falcon_chunked.*): the window's top eigenvalue comes from LAPACK's
// dsyev, the key normalisation is its own, and it knows nothing of chunks. Test-only;
// thread-compatible.
//
// Layout: S is d × m, row-major (column j is output j); keys and targets are one pair a row.
#ifndef ADAPTD_SERVER_STORES_FALCON_REFERENCE_H_
#define ADAPTD_SERVER_STORES_FALCON_REFERENCE_H_

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace adaptd::falcon_reference {

enum class Rule { k1, k2, k3, k1A, k2A, k3A };
enum class Norm { kNone, kL2, kRms };

struct Settings {
  Rule rule = Rule::k1;
  std::vector<double> beta = {1.0};  // one value, or one per column (rules 2 and 2A)
  double lambda = 0;                 // λ̄
  double eps = 1e-6;
  double eps_gamma = 1e-3;
  int64_t window = 1;  // B (rules 3 and 3A)
  bool scale_coupled = false;
  Norm norm = Norm::kNone;
  // β of the t-th pair: max(beta_min, β / (1 + (t − 1) / half_life)); half_life 0: constant.
  double half_life = 0;
  double beta_min = 0;
};

// φ: the key normalisation (a zero key stays zero).
inline std::vector<double> Phi(Norm norm, std::vector<double> x) {
  if (norm == Norm::kNone || x.empty()) return x;
  double sq = 0;
  for (double v : x) sq += v * v;
  const double scale =
      norm == Norm::kL2 ? std::sqrt(sq) : std::sqrt(sq / static_cast<double>(x.size()));
  if (!(scale > 0)) return x;
  for (double& v : x) v /= scale;
  return x;
}

// λ_max of the window's B×B Gram X Xᵀ (equal to that of XᵀX), by LAPACK.
inline double TopEigenvalue(
    const std::deque<std::pair<std::vector<double>, std::vector<double>>>& w) {
  const int n = static_cast<int>(w.size());
  std::vector<double> gram(n * n), values(n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      double dot = 0;
      for (size_t i = 0; i < w[a].first.size(); ++i) dot += w[a].first[i] * w[b].first[i];
      gram[a * n + b] = dot;
    }
  }
  if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', n, gram.data(), n, values.data()) != 0) return NAN;
  return values[n - 1];  // ascending
}

class Model {
 public:
  Model(Settings settings, int64_t d, int64_t m)
      : s_(std::move(settings)), d_(d), m_(m), state_(d * m, 0.0) {}

  int64_t columns() const { return m_; }
  const std::vector<double>& S() const { return state_; }
  // The window's pairs before the current one, oldest first (what a snapshot keeps).
  std::vector<std::pair<std::vector<double>, std::vector<double>>> History() const {
    return {window_.begin(), window_.end()};
  }

  // A label store's new column: S gains a zero column, window targets a zero entry.
  void AddColumn() {
    std::vector<double> grown(d_ * (m_ + 1), 0.0);
    for (int64_t i = 0; i < d_; ++i) {
      std::copy(state_.begin() + i * m_, state_.begin() + (i + 1) * m_,
                grown.begin() + i * (m_ + 1));
    }
    state_ = std::move(grown);
    ++m_;
    for (auto& pair : window_) pair.second.push_back(0.0);
  }

  // o = Sᵀ φ(q).
  std::vector<double> Read(const std::vector<double>& q) const { return Apply(Phi(s_.norm, q)); }

  // One pair (raw key k → x = φ(k), target y of m values); returns the prediction made before
  // the write, S_{t−1}ᵀ x.
  std::vector<double> Step(const std::vector<double>& key, const std::vector<double>& y) {
    const std::vector<double> x = Phi(s_.norm, key);
    const std::vector<double> before = Apply(x);
    ++t_;
    window_.emplace_back(x, y);
    const int64_t b = s_.rule == Rule::k3 || s_.rule == Rule::k3A ? s_.window : 1;
    while (static_cast<int64_t>(window_.size()) > b) window_.pop_front();
    const double bt = static_cast<double>(window_.size());

    // The energy term E_t of the rule: ‖x_t‖², μ_t = λ_max(XᵀX)/B_t, or the mean ‖x_j‖².
    double energy = 0;
    if (s_.rule == Rule::k3) {
      energy = TopEigenvalue(window_) / bt;
    } else if (s_.rule == Rule::k3A) {
      for (const auto& pair : window_) energy += Dot(pair.first, pair.first);
      energy /= bt;
    } else {
      energy = Dot(x, x);
    }
    const double lambda_t = s_.scale_coupled ? s_.lambda * energy : s_.lambda;

    // The step and decay of column j: η_j = β_j / (E + λ_t + ε), γ_j = 1 − min(η_j λ_t, 1 − ε_γ).
    std::vector<double> eta(m_), gamma(m_);
    for (int64_t j = 0; j < m_; ++j) {
      double beta = s_.beta.size() == 1 ? s_.beta[0] : s_.beta[j];
      if (s_.half_life > 0) {
        beta = std::max(s_.beta_min, beta / (1.0 + static_cast<double>(t_ - 1) / s_.half_life));
      }
      eta[j] = beta / (energy + lambda_t + s_.eps);
      gamma[j] = 1.0 - std::min(eta[j] * lambda_t, 1.0 - s_.eps_gamma);
    }

    // The write direction Δ (d × m) with S_t = S_{t−1} Diag(γ) + Δ Diag(η).
    std::vector<double> delta(d_ * m_, 0.0);
    const bool residual = s_.rule == Rule::k1 || s_.rule == Rule::k2 || s_.rule == Rule::k3;
    for (const auto& [xj, yj] : window_) {
      std::vector<double> r = yj;  // 1A, 2A, 3A: the target itself
      if (residual) {
        const std::vector<double> p = Apply(xj);  // against S_{t−1}: state_ is not written yet
        for (int64_t c = 0; c < m_; ++c) r[c] -= p[c];
      }
      for (int64_t i = 0; i < d_; ++i) {
        for (int64_t c = 0; c < m_; ++c) delta[i * m_ + c] += xj[i] * r[c] / bt;
      }
    }
    for (int64_t i = 0; i < d_; ++i) {
      for (int64_t c = 0; c < m_; ++c) {
        double& s = state_[i * m_ + c];
        s = gamma[c] * s + eta[c] * delta[i * m_ + c];
      }
    }
    // The snapshot keeps B − 1 pairs: the next step's window without it.
    if (static_cast<int64_t>(window_.size()) == b) window_.pop_front();
    return before;
  }

 private:
  static double Dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  }
  std::vector<double> Apply(const std::vector<double>& x) const {
    std::vector<double> out(m_, 0.0);
    for (int64_t i = 0; i < d_; ++i) {
      for (int64_t c = 0; c < m_; ++c) out[c] += x[i] * state_[i * m_ + c];
    }
    return out;
  }

  const Settings s_;
  const int64_t d_;
  int64_t m_;
  int64_t t_ = 0;  // pairs stepped
  std::vector<double> state_;
  std::deque<std::pair<std::vector<double>, std::vector<double>>> window_;  // ≤ B − 1 between steps
};

}  // namespace adaptd::falcon_reference

#endif  // ADAPTD_SERVER_STORES_FALCON_REFERENCE_H_
