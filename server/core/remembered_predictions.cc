#include "server/core/remembered_predictions.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace adaptd {
namespace {

constexpr absl::string_view kIdPrefix = "p1";
constexpr uint64_t kEntryBytes = 96;  // the entry, its vectors' and string's headers

// One counter for every store of the process: an id's sequence is never drawn twice.
std::atomic<uint64_t> next_sequence{1};

bool ParseHex16(absl::string_view text, uint64_t* out) {
  if (text.size() != 16) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return absl::SimpleHexAtoi(text, out);
}

}  // namespace

std::string FormatPredictionId(const PredictionId& id) {
  return absl::StrFormat("%s.%016x.%016x.%d", kIdPrefix, id.incarnation, id.nonce, id.sequence);
}

absl::StatusOr<PredictionId> ParsePredictionId(absl::string_view text, absl::string_view field) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  PredictionId id;
  const bool ok =
      parts.size() == 4 && parts[0] == kIdPrefix && ParseHex16(parts[1], &id.incarnation) &&
      ParseHex16(parts[2], &id.nonce) && !parts[3].empty() && parts[3].size() <= 20 &&
      std::all_of(parts[3].begin(), parts[3].end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      absl::SimpleAtoi(parts[3], &id.sequence) && id.sequence > 0;
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": '", text.substr(0, 80),
                     "' is not a prediction id (Prediction.prediction_id, as served)"));
  }
  return id;
}

uint64_t DrawNonce() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

absl::Status CheckFeedbackWindow(const adapt::v1::StoreSpec& spec) {
  if (!spec.has_feedback()) return absl::OkStatus();
  const adapt::v1::FeedbackWindow& window = spec.feedback();
  if (window.count() > kMaxFeedbackWindow) {
    return absl::InvalidArgumentError(absl::StrCat("spec.feedback.count: at most ",
                                                   kMaxFeedbackWindow, ", got ", window.count()));
  }
  if (window.max_age_s() > kMaxFeedbackAgeSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("spec.feedback.max_age_s: at most ",
                                                   kMaxFeedbackAgeSeconds, " (30 days), got ",
                                                   window.max_age_s()));
  }
  if (window.count() > 0 && spec.output().kind() == adapt::v1::OutputSpec::KIND_NEXT) {
    return absl::InvalidArgumentError(
        "spec.feedback: a store whose output is 'next' learns from sequences and takes no "
        "feedback window");
  }
  return absl::OkStatus();
}

RememberedPredictions::RememberedPredictions(uint64_t incarnation,
                                             const adapt::v1::FeedbackWindow& window,
                                             uint64_t nonce, BytesHook on_bytes, DropsHook on_drops)
    : incarnation_(incarnation),
      nonce_(nonce),
      count_(std::max<uint32_t>(1, window.count())),
      max_age_(window.max_age_s() == 0 ? absl::InfiniteDuration()
                                       : absl::Seconds(window.max_age_s())),
      on_bytes_(std::move(on_bytes)),
      on_drops_(std::move(on_drops)) {}

RememberedPredictions::~RememberedPredictions() {
  if (on_bytes_ && bytes_ > 0) on_bytes_(-static_cast<int64_t>(bytes_));
}

uint64_t RememberedPredictions::BytesOf(const RememberedPrediction& p) {
  return kEntryBytes + sizeof(float) * (p.key.capacity() + p.vector.capacity()) +
         p.label.capacity();
}

std::string RememberedPredictions::Remember(RememberedPrediction served) {
  served.sequence = next_sequence.fetch_add(1, std::memory_order_relaxed);
  const std::string id = FormatPredictionId({incarnation_, nonce_, served.sequence});
  int64_t delta = 0;
  RememberedDrops drops;
  {
    absl::MutexLock lock(&mu_);
    const uint64_t before = bytes_;
    drops.age = DropExpiredLocked(served.served);
    while (entries_.size() >= count_) {
      bytes_ -= BytesOf(entries_.front());
      entries_.pop_front();
      ++drops.window;
    }
    bytes_ += BytesOf(served);
    delta = static_cast<int64_t>(bytes_) - static_cast<int64_t>(before);
    // Sequences are drawn before the lock: a push that lost the race goes in its place.
    auto at = entries_.end();
    while (at != entries_.begin() && std::prev(at)->sequence > served.sequence) --at;
    entries_.insert(at, std::move(served));
  }
  if (on_bytes_ && delta != 0) on_bytes_(delta);
  if (on_drops_ && drops.any()) on_drops_(drops);
  return id;
}

uint64_t RememberedPredictions::Shed(uint64_t wanted) {
  uint64_t freed = 0;
  RememberedDrops drops;
  {
    absl::MutexLock lock(&mu_);
    while (freed < wanted && !entries_.empty()) {
      const uint64_t bytes = BytesOf(entries_.front());
      freed += bytes;
      bytes_ -= bytes;
      shed_through_ = std::max(shed_through_, entries_.front().sequence);
      ++shed_;
      ++drops.pressure;
      entries_.pop_front();
    }
  }
  if (on_bytes_ && freed > 0) on_bytes_(-static_cast<int64_t>(freed));
  if (on_drops_ && drops.any()) on_drops_(drops);
  return freed;
}

uint64_t RememberedPredictions::DropExpiredLocked(absl::Time now) {
  uint64_t dropped = 0;
  while (!entries_.empty() && now - entries_.front().served > max_age_) {
    bytes_ -= BytesOf(entries_.front());
    entries_.pop_front();
    ++dropped;
  }
  return dropped;
}

absl::Status RememberedPredictions::NotRemembered(absl::string_view field,
                                                  absl::string_view why) const {
  const std::string age = max_age_ == absl::InfiniteDuration()
                              ? std::string()
                              : absl::StrCat(" of at most ", absl::FormatDuration(max_age_));
  return absl::NotFoundError(absl::StrCat(
      field, ": not remembered (", why, "); the store's feedback window keeps its last ", count_,
      " predictions", age,
      " in memory only, forgetting them at a restart, a move or a delete: send the input "
      "with Adapt instead"));
}

absl::StatusOr<RememberedPrediction> RememberedPredictions::Find(const PredictionId& id,
                                                                 absl::Time now,
                                                                 absl::string_view field) const {
  if (id.incarnation != incarnation_) {
    return NotRemembered(field, "served by another store of this name");
  }
  if (id.nonce != nonce_) return NotRemembered(field, "served before the server restarted");
  absl::MutexLock lock(&mu_);
  auto it = std::lower_bound(
      entries_.begin(), entries_.end(), id.sequence,
      [](const RememberedPrediction& p, uint64_t sequence) { return p.sequence < sequence; });
  if (it == entries_.end() || it->sequence != id.sequence) {
    if (id.sequence <= shed_through_) {
      return NotRemembered(field, "dropped under memory pressure, or past the window");
    }
    return NotRemembered(field, "past the window, or never served by this store");
  }
  if (now - it->served > max_age_) return NotRemembered(field, "older than the window");
  return *it;
}

size_t RememberedPredictions::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

uint64_t RememberedPredictions::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

uint64_t RememberedPredictions::shed() const {
  absl::MutexLock lock(&mu_);
  return shed_;
}

// Evaluated is added before correct and read after it, so a reader never sees more correct
// than evaluated.
void RememberedPredictions::CountServed(uint64_t evaluated, uint64_t correct) {
  served_evaluated_.fetch_add(evaluated);
  served_correct_.fetch_add(correct);
}

ServedFigures RememberedPredictions::served() const {
  ServedFigures figures;
  figures.correct = served_correct_.load();
  figures.evaluated = served_evaluated_.load();
  return figures;
}

}  // namespace adaptd
