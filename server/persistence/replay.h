// What a logged record does to a store when it is replayed: the one reading of a write and a
// compile record, shared by every durability implementation's recovery (the journal's,
// server/durability's in-memory one) so that each rebuilds a store the same way.
#ifndef ADAPTD_SERVER_PERSISTENCE_REPLAY_H_
#define ADAPTD_SERVER_PERSISTENCE_REPLAY_H_

#include "absl/status/status.h"
#include "adapt/v1/wal.pb.h"
#include "server/stores/store.h"

namespace adaptd {

// Applies a logged Adapt or Forget call to `store` as one transaction. The error of the
// staging or the commit when it fails: replay meets the state the call met when it was
// logged, so the call failed then too and was never acknowledged (the record is skipped).
// A record with the figures the call counted as it staged (WalWrite.prequential) hands them
// to the transaction (Txn::TakeRecordedPrequential), which then evaluates nothing; one
// without them evaluates as the call did.
absl::Status ReplayWrite(Store& store, const adapt::v1::WalWrite& write);

// The figures a transaction counted as it staged (Txn::StagedPrequential), as a write record
// carries them, and back.
adapt::v1::WalPrequential ToWalPrequential(const PrequentialStats& stats);
PrequentialStats FromWalPrequential(const adapt::v1::WalPrequential& figures);

// Applies a logged compile (`record` holds `compile` or `base_compile`; false for any other
// record, which is ignored) without solving it (Store::NoteReplayedCompile): its parameter
// overrides and version persist; a refresh_base compile uses the copy of the base the record
// holds, never the base itself. Once the log is replayed, FinishReplay solves the store's last
// compile, once.
bool ReplayCompile(Store& store, const adapt::v1::WalRecord& record);

// After the log: solves and publishes the store's last replayed compile, as it was published
// when it ran (Store::SolveReplayedCompile); OK when there is none.
absl::Status FinishReplay(Store& store);

// The record of a finished compile of `request` (with `base`, the copy of the base a
// refresh_base compile took) for the store of `incarnation`: what ReplayCompile reads back.
adapt::v1::WalRecord CompileRecord(uint64_t incarnation, const adapt::v1::CompileRequest& request,
                                   const BaseReadout* base);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_REPLAY_H_
