// CallGate counts the calls the server has admitted and not yet finished, and refuses new ones
// once it closes, so a draining server keeps answering UNAVAILABLE until the calls it took
// have finished (gRPC's own shutdown would cancel late arrivals instead). Thread-safe.
#ifndef ADAPTD_SERVER_SERVICE_CALL_GATE_H_
#define ADAPTD_SERVER_SERVICE_CALL_GATE_H_

#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace adaptd {

class CallGate {
 public:
  // Admits a call: false once Close() ran. Each true must be matched by one Exit().
  bool Enter() {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    ++active_;
    return true;
  }
  void Exit() {
    absl::MutexLock lock(&mu_);
    --active_;
  }
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  int64_t active() const {
    absl::MutexLock lock(&mu_);
    return active_;
  }
  // Waits until no admitted call is left or `deadline` passes; true when none is left.
  bool WaitIdle(absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithDeadline(absl::Condition(&IsZero, &active_), deadline);
  }

 private:
  static bool IsZero(int64_t* count) { return *count == 0; }

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t active_ ABSL_GUARDED_BY(mu_) = 0;
};

// One admitted call's place in a CallGate, given back when the call object holding it is
// destroyed (a reactor's OnDone). Move-only; an empty one (no gate) does nothing.
class AdmittedCall {
 public:
  AdmittedCall() = default;
  explicit AdmittedCall(CallGate* gate) : gate_(gate) {}
  AdmittedCall(AdmittedCall&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
  AdmittedCall& operator=(AdmittedCall&& other) noexcept {
    if (this != &other) {
      Release();
      gate_ = other.gate_;
      other.gate_ = nullptr;
    }
    return *this;
  }
  AdmittedCall(const AdmittedCall&) = delete;
  AdmittedCall& operator=(const AdmittedCall&) = delete;
  ~AdmittedCall() { Release(); }

 private:
  void Release() {
    if (gate_ != nullptr) gate_->Exit();
    gate_ = nullptr;
  }
  CallGate* gate_ = nullptr;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_SERVICE_CALL_GATE_H_
