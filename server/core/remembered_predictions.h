// RememberedPredictions: one store's served predictions kept for Feedback (docs/FEEDBACK.md):
// for each, the encoded key the read-out used and the served label or vector, the newest
// `count` of them and none older than the window's age. Memory only: never logged, stored or
// exported. Prediction ids ("p1.<incarnation>.<nonce>.<sequence>") carry the store's
// incarnation, the random nonce the server drew at its start (StoreDirectory's) and a
// sequence drawn from one process-wide counter, so no id is ever served twice, across
// stores, deletes and restarts.
//
// Thread-safety: every method may be called concurrently (one mutex, held for a push or a
// lookup only).
#ifndef ADAPTD_SERVER_CORE_REMEMBERED_PREDICTIONS_H_
#define ADAPTD_SERVER_CORE_REMEMBERED_PREDICTIONS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"

namespace adaptd {

inline constexpr uint32_t kMaxFeedbackWindow = 1000000;             // FeedbackWindow.count
inline constexpr uint32_t kMaxFeedbackAgeSeconds = 30 * 24 * 3600;  // FeedbackWindow.max_age_s
inline constexpr int kMaxFeedbackItems = 10000;                     // per Feedback call

// What one prediction id names.
struct PredictionId {
  uint64_t incarnation = 0;
  uint64_t nonce = 0;
  uint64_t sequence = 0;
};

std::string FormatPredictionId(const PredictionId& id);
// INVALID_ARGUMENT naming `field` unless `text` is an id FormatPredictionId could write.
absl::StatusOr<PredictionId> ParsePredictionId(absl::string_view text, absl::string_view field);

// 64 random bits: a server's start nonce.
uint64_t DrawNonce();

// spec.feedback checked: INVALID_ARGUMENT naming the field (count or age too large, or a
// window on a store whose output is `next`).
absl::Status CheckFeedbackWindow(const adapt::v1::StoreSpec& spec);

struct RememberedPrediction {
  uint64_t sequence = 0;
  absl::Time served;
  uint64_t version = 0;       // the published version read
  std::vector<float> key;     // dim floats
  std::string label;          // label stores: the served top-1 label
  std::vector<float> vector;  // vector stores: the served vector
};

// Remembered predictions dropped, by why: the window's count made room for a newer one, the
// window's age passed, or memory pressure (Shed).
struct RememberedDrops {
  uint64_t window = 0;
  uint64_t age = 0;
  uint64_t pressure = 0;
  bool any() const { return window + age + pressure > 0; }
};

// A store's served accuracy as feedback reveals it (label stores): applied items, and of
// those the ones whose served top-1 label was the true one.
struct ServedFigures {
  uint64_t evaluated = 0;
  uint64_t correct = 0;
};

class RememberedPredictions {
 public:
  // Hears each change of bytes() (positive: grew), after the change, without the lock held.
  using BytesHook = std::function<void(int64_t delta)>;
  // Hears each push's or Shed's drops (some), after them, without the lock held.
  using DropsHook = std::function<void(const RememberedDrops& drops)>;

  // `window.count` must be at least 1; `nonce` is the server's start nonce; the hooks may be
  // null.
  RememberedPredictions(uint64_t incarnation, const adapt::v1::FeedbackWindow& window,
                        uint64_t nonce, BytesHook on_bytes = nullptr, DropsHook on_drops = nullptr);
  // The hook hears the bytes still held go.
  ~RememberedPredictions();
  RememberedPredictions(const RememberedPredictions&) = delete;
  RememberedPredictions& operator=(const RememberedPredictions&) = delete;

  // Keeps `served` (its sequence is drawn here), dropping the oldest past the window; returns
  // its id.
  std::string Remember(RememberedPrediction served) ABSL_LOCKS_EXCLUDED(mu_);

  // The prediction `id` names, as remembered at `now`. NOT_FOUND naming `field` and the
  // window when the id is this store's but not remembered (past the count or the age, or
  // served by an earlier process or another store of the name).
  absl::StatusOr<RememberedPrediction> Find(const PredictionId& id, absl::Time now,
                                            absl::string_view field) const ABSL_LOCKS_EXCLUDED(mu_);

  // Memory pressure: drops the oldest until at least `wanted` bytes are freed (or none is
  // left); returns the bytes freed. Find names the reason for the ids so dropped.
  uint64_t Shed(uint64_t wanted) ABSL_LOCKS_EXCLUDED(mu_);

  // How many are remembered, and the bytes they hold (keys, served outputs and entries).
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // How many Shed dropped, in all.
  uint64_t shed() const ABSL_LOCKS_EXCLUDED(mu_);

  // Feedback applied durably on these predictions: `evaluated` label items, `correct` of them
  // served right. Counted for the ring's life (StoreInfo.served_evaluated and served_correct).
  void CountServed(uint64_t evaluated, uint64_t correct);
  ServedFigures served() const;

  uint64_t incarnation() const { return incarnation_; }
  uint64_t nonce() const { return nonce_; }

 private:
  static uint64_t BytesOf(const RememberedPrediction& p);
  // Returns how many it dropped.
  uint64_t DropExpiredLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status NotRemembered(absl::string_view field, absl::string_view why) const;

  const uint64_t incarnation_;
  const uint64_t nonce_;
  const size_t count_;
  const absl::Duration max_age_;  // InfiniteDuration: no age bound
  const BytesHook on_bytes_;
  const DropsHook on_drops_;
  std::atomic<uint64_t> served_evaluated_{0};
  std::atomic<uint64_t> served_correct_{0};
  mutable absl::Mutex mu_;
  std::deque<RememberedPrediction> entries_ ABSL_GUARDED_BY(mu_);  // by sequence, oldest first
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t shed_ ABSL_GUARDED_BY(mu_) = 0;
  // The highest sequence Shed dropped (0: none).
  uint64_t shed_through_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_REMEMBERED_PREDICTIONS_H_
