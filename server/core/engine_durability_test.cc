// What the engine does when the disk fails (docs/DURABILITY.md, "When the disk fails"), with a
// FaultInjectionEnv under a real Engine and data directory: a write whose log record is not
// durable is never acknowledged and never visible, reads go on from what is durable, the
// error names the failure, and a new Engine on the same directory with a healthy Env has every
// acknowledged write and no part of an unacknowledged one. Also: a write is not visible to
// readers while its record's fsync is still running.
#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/config/config.h"
#include "server/core/engine.h"
#include "server/persistence/testing/fault_injection_env.h"

namespace adaptd {
namespace {

using Fault = FaultInjectionEnv::Fault;
using What = FaultInjectionEnv::What;

constexpr int kDim = 4;
constexpr char kLogGlob[] = "*/wal/wal-*.log";

class EngineDurabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    dir_ = ::testing::TempDir() + "/engine-durability-" + std::to_string(std::random_device()());
    std::filesystem::remove_all(dir_);
    Start(&env_);
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("t");
    create.set_store("s");
    // falcon: every commit publishes a new version, so Predict and GetStore both show it.
    create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
    create.mutable_spec()->set_dim(kDim);
    create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    create.mutable_spec()->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
    auto created = engine_->CreateStore(create);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A new Engine on the same directory (the old one is gone, as after a crash: no checkpoint).
  void Start(Env* env, uint64_t state_map_bytes = 0) {
    engine_.reset();
    adapt::v1::ServerConfig config = DefaultConfig();
    config.set_data_dir(dir_);
    config.set_state_map_bytes(state_map_bytes);
    auto engine = Engine::Create(config, backend_.get(), nullptr, env);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  // One Adapt call of `n` examples with ids `prefix`0 … `prefix`n-1.
  absl::StatusOr<adapt::v1::AdaptResponse> Adapt(const std::string& prefix, int n = 3) {
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    for (int i = 0; i < n; ++i) {
      adapt::v1::Example* e = examples.Add();
      e->set_id(absl::StrCat(prefix, i));
      e->set_label(i % 2 ? "odd" : "even");
      for (int j = 0; j < kDim; ++j) e->mutable_input()->mutable_vector()->add_values(i + j + 1);
    }
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    if (absl::Status added = session->Add("t", "s", examples); !added.ok()) return added;
    return session->Finish();
  }

  // t/big: a faast store at d = 256 with one example, whose 512 KiB of statistics are more
  // than a 256 KiB state map holds.
  void CreateBigStore() {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("t");
    create.set_store("big");
    create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
    create.mutable_spec()->set_dim(256);
    ASSERT_TRUE(engine_->CreateStore(create).ok());
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    adapt::v1::Example* e = examples.Add();
    e->set_label("x");
    for (int j = 0; j < 256; ++j) e->mutable_input()->mutable_vector()->add_values(j % 7 - 3);
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    ASSERT_TRUE(session->Add("t", "big", examples).ok());
    ASSERT_TRUE(session->Finish().ok());
  }

  adapt::v1::StoreInfo Info() {
    adapt::v1::GetStoreRequest request;
    request.set_tenant("t");
    request.set_store("s");
    auto info = engine_->GetStore(request);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : adapt::v1::StoreInfo();
  }

  absl::StatusOr<uint64_t> PredictVersion() {
    adapt::v1::PredictRequest request;
    request.set_tenant("t");
    request.set_store("s");
    adapt::v1::Input* input = request.add_inputs();
    for (int j = 0; j < kDim; ++j) input->mutable_vector()->add_values(1.0f);
    auto response = engine_->Predict(request);
    if (!response.ok()) return response.status();
    return response->version();
  }

  // The serialized answer of `store` to `rows` fixed inputs.
  std::string Predicted(const std::string& store, int rows) {
    adapt::v1::PredictRequest request;
    request.set_tenant("t");
    request.set_store(store);
    for (int i = 0; i < rows; ++i) {
      adapt::v1::Input* input = request.add_inputs();
      for (int j = 0; j < kDim; ++j) input->mutable_vector()->add_values((i * 5 + j) % 3 - 1);
    }
    auto response = engine_->Predict(request);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? response->SerializeAsString() : std::string();
  }

  // The reads a failed write must not change: GetStore's count and version, Predict's version.
  void ExpectReadsUnchanged(uint64_t examples, uint64_t version) {
    const adapt::v1::StoreInfo info = Info();
    EXPECT_EQ(info.examples(), examples);
    EXPECT_EQ(info.version(), version);
    auto predicted = PredictVersion();
    ASSERT_TRUE(predicted.ok()) << predicted.status();
    EXPECT_EQ(*predicted, version);
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::string dir_;
  FaultInjectionEnv env_;
  std::unique_ptr<Engine> engine_;
};

struct LogFaultCase {
  const char* name;
  Fault fault;
  const char* error;
  bool applied_after_restart;
};

void PrintTo(const LogFaultCase& c, std::ostream* os) { *os << c.name; }

class LogFaultTest : public EngineDurabilityTest,
                     public ::testing::WithParamInterface<LogFaultCase> {};

TEST_P(LogFaultTest, NoAckReadsGoOnAndRestartKeepsExactlyTheAcknowledged) {
  const LogFaultCase& c = GetParam();
  ASSERT_TRUE(Adapt("a").ok());
  ASSERT_TRUE(Adapt("b").ok());
  const adapt::v1::StoreInfo before = Info();
  ASSERT_EQ(before.examples(), 6u);

  env_.Inject(c.fault);
  auto refused = Adapt("c");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("write-ahead log: "), std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find(c.error), std::string::npos) << refused.status();
  EXPECT_GE(env_.failures(), 1);
  ExpectReadsUnchanged(before.examples(), before.version());

  // The log stays failed although the disk "recovered": a later write is refused as well.
  env_.ClearFaults();
  auto later = Adapt("d");
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.status().message().find(c.error), std::string::npos) << later.status();
  ExpectReadsUnchanged(before.examples(), before.version());

  Start(nullptr);  // a healthy disk
  const adapt::v1::StoreInfo after = Info();
  EXPECT_TRUE(after.failure().empty()) << after.failure();
  EXPECT_EQ(after.examples(), c.applied_after_restart ? 9u : 6u);
  // Resending every call: acknowledged ones are wholly duplicates; the refused one is
  // all-or-nothing, never part.
  auto again_b = Adapt("b");
  ASSERT_TRUE(again_b.ok()) << again_b.status();
  EXPECT_EQ(again_b->duplicates(), 3u);
  auto again_c = Adapt("c");
  ASSERT_TRUE(again_c.ok()) << again_c.status();
  EXPECT_EQ(again_c->duplicates(), c.applied_after_restart ? 3u : 0u);
  auto new_d = Adapt("d");
  ASSERT_TRUE(new_d.ok()) << new_d.status();
  EXPECT_EQ(new_d->duplicates(), 0u);
  EXPECT_EQ(Info().examples(), 12u);
  Start(nullptr);
  EXPECT_EQ(Info().examples(), 12u);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, LogFaultTest,
    ::testing::Values(
        // fsync EIO; the page cache dropped the record: it is gone after the restart.
        LogFaultCase{"FsyncFailsAndLosesTheRecord",
                     {What::kSyncEio, kLogGlob, 1, 1, /*drop_unsynced=*/true},
                     "fsync of ",
                     false},
        // fsync EIO, but the record reached the file: applied whole after the restart (the
        // caller's outcome was an error, and a resend with ids is safe either way).
        LogFaultCase{"FsyncFailsButTheRecordSurvives",
                     {What::kSyncEio, kLogGlob, 1, 1, /*drop_unsynced=*/false},
                     "Input/output error",
                     true},
        LogFaultCase{
            "DiskFull", {What::kAppendNoSpace, kLogGlob}, "No space left on device", false},
        // Half the record reaches the file: recovery drops the torn tail.
        LogFaultCase{
            "ShortWrite", {What::kAppendShort, kLogGlob}, "No space left on device", false}),
    [](const ::testing::TestParamInfo<LogFaultCase>& info) { return info.param.name; });

// The state database fills up (its map is smaller than the states): the checkpoint fails
// naming the limit, each store's GetStore says why its state was not written, the log stays,
// writes and reads go on, and a restart with room loses nothing.
TEST_F(EngineDurabilityTest, AFullStateDatabaseFailsTheCheckpointAndLosesNothing) {
  Start(&env_, /*state_map_bytes=*/256 << 10);
  ASSERT_TRUE(Adapt("a").ok());
  ASSERT_TRUE(engine_->Flush().ok());
  ASSERT_TRUE(Adapt("b").ok());
  ASSERT_NO_FATAL_FAILURE(CreateBigStore());

  const absl::Status flushed = engine_->Flush();
  EXPECT_EQ(flushed.code(), absl::StatusCode::kResourceExhausted) << flushed;
  EXPECT_NE(flushed.message().find("--state-map-bytes"), std::string::npos) << flushed;
  adapt::v1::GetStoreRequest get;
  get.set_tenant("t");
  get.set_store("big");
  const std::string reported = engine_->GetStore(get)->checkpoint_error();
  EXPECT_EQ(reported.rfind("checkpoint: state database ", 0), 0u) << reported;

  // The log is healthy: writes are acknowledged and reads served as before.
  auto acked = Adapt("c");
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_EQ(Info().examples(), 9u);
  auto predicted = PredictVersion();
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(*predicted, acked->version());

  Start(nullptr);  // the default map: room for everything
  EXPECT_EQ(Info().examples(), 9u);
  EXPECT_EQ(Info().version(), acked->version());
  EXPECT_EQ(engine_->GetStore(get)->examples(), 1u);
  for (const char* call : {"a", "b", "c"}) {
    auto again = Adapt(call);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->duplicates(), 3u) << call;
  }
  EXPECT_TRUE(engine_->Flush().ok());
  EXPECT_EQ(engine_->GetStore(get)->checkpoint_error(), "");
}

TEST_F(EngineDurabilityTest, AWriteIsInvisibleUntilItsRecordIsDurable) {
  ASSERT_TRUE(Adapt("a").ok());
  const adapt::v1::StoreInfo before = Info();
  env_.BlockSyncs(kLogGlob);
  absl::StatusOr<adapt::v1::AdaptResponse> result = absl::UnknownError("not finished");
  std::atomic<bool> finished{false};
  std::thread writer([&] {
    result = Adapt("b");
    finished = true;
  });
  ASSERT_TRUE(env_.WaitForBlockedSync(absl::Seconds(30)));
  // The record is written and its fsync is running: no reader may see the write yet.
  for (int i = 0; i < 200; ++i) {
    ExpectReadsUnchanged(before.examples(), before.version());
    EXPECT_FALSE(finished.load());
  }
  env_.ReleaseSyncs();
  writer.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Info().examples(), before.examples() + 3);
  EXPECT_EQ(Info().version(), result->version());
  auto predicted = PredictVersion();
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(*predicted, result->version());
}

TEST_F(EngineDurabilityTest, WritesOfOneGroupCommitAreInvisibleUntilItIsDurable) {
  ASSERT_TRUE(Adapt("a").ok());
  const adapt::v1::StoreInfo before = Info();
  env_.BlockSyncs(kLogGlob);
  constexpr int kWriters = 4;
  std::atomic<int> acked{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      if (Adapt(absl::StrCat("w", w, "-")).ok()) ++acked;
    });
  }
  ASSERT_TRUE(env_.WaitForBlockedSync(absl::Seconds(30)));
  // A reader on its own thread polls while the writers' records wait for their fsync (some
  // may still be queued behind it): it must see none of them.
  std::atomic<int> early{0};
  std::thread reader([&] {
    for (int i = 0; i < 300; ++i) {
      const adapt::v1::StoreInfo info = Info();
      auto predicted = PredictVersion();
      if (info.examples() != before.examples() || info.version() != before.version() ||
          !predicted.ok() || *predicted != before.version()) {
        ++early;
      }
    }
  });
  reader.join();
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(acked.load(), 0);
  env_.ReleaseSyncs();
  for (auto& t : writers) t.join();
  EXPECT_EQ(acked.load(), kWriters);
  EXPECT_EQ(Info().examples(), before.examples() + 3 * kWriters);
  Start(nullptr);
  EXPECT_EQ(Info().examples(), before.examples() + 3 * kWriters);
}

// A created store is invisible (NOT_FOUND) while its creation record waits for its fsync, and
// its name stays taken; it appears once the record is durable.
TEST_F(EngineDurabilityTest, ACreatedStoreIsInvisibleUntilItsRecordIsDurable) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("new");
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
  create.mutable_spec()->set_dim(kDim);
  create.mutable_spec()->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
  adapt::v1::GetStoreRequest get;
  get.set_tenant("t");
  get.set_store("new");
  env_.BlockSyncs(kLogGlob);
  absl::StatusOr<adapt::v1::StoreInfo> created = absl::UnknownError("not finished");
  std::thread creator([&] { created = engine_->CreateStore(create); });
  ASSERT_TRUE(env_.WaitForBlockedSync(absl::Seconds(30)));
  EXPECT_EQ(engine_->GetStore(get).status().code(), absl::StatusCode::kNotFound);
  adapt::v1::ListStoresRequest list;
  list.set_tenant("t");
  auto listed = engine_->ListStores(list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->stores_size(), 1);  // "s" only
  EXPECT_EQ(engine_->CreateStore(create).status().code(), absl::StatusCode::kAlreadyExists);
  env_.ReleaseSyncs();
  creator.join();
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(engine_->GetStore(get).ok());
}

// A creation whose record cannot be made durable is refused and leaves no store behind.
TEST_F(EngineDurabilityTest, ACreationTheLogCannotKeepLeavesNoStore) {
  env_.Inject({What::kSyncEio, kLogGlob});
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("lost");
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
  create.mutable_spec()->set_dim(kDim);
  create.mutable_spec()->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
  absl::StatusOr<adapt::v1::StoreInfo> created = engine_->CreateStore(create);
  EXPECT_EQ(created.status().code(), absl::StatusCode::kUnavailable) << created.status();
  adapt::v1::GetStoreRequest get;
  get.set_tenant("t");
  get.set_store("lost");
  EXPECT_EQ(engine_->GetStore(get).status().code(), absl::StatusCode::kNotFound);
}

// An import's state goes to the state database before the import is acknowledged (its log
// record holds only the spec), so a restart with no checkpoint finds it, equal to its source.
TEST_F(EngineDurabilityTest, AnImportIsStoredBeforeItIsAcknowledged) {
  ASSERT_TRUE(Adapt("a").ok());
  adapt::v1::ExportStoreRequest request;
  request.set_tenant("t");
  request.set_store("s");
  absl::StatusOr<std::string> file = engine_->Export(request);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<adapt::v1::StoreInfo> imported = engine_->Import("t", "copy", *file);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->examples(), 3u);
  EXPECT_EQ(imported->checkpoint_error(), "");

  Start(nullptr);  // as after a crash: no checkpoint since the import
  request.set_store("copy");
  absl::StatusOr<std::string> again = engine_->Export(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *file);
  adapt::v1::GetStoreRequest get;
  get.set_tenant("t");
  get.set_store("copy");
  EXPECT_EQ(engine_->GetStore(get)->examples(), 3u);
}

// An import whose state the state database cannot hold is refused naming the limit, leaves no
// store (then or after a restart), and the name can be imported again once there is room.
TEST_F(EngineDurabilityTest, AnImportTheStateDatabaseCannotHoldLeavesNoStore) {
  Start(&env_, /*state_map_bytes=*/256 << 10);
  ASSERT_NO_FATAL_FAILURE(CreateBigStore());
  adapt::v1::ExportStoreRequest request;
  request.set_tenant("t");
  request.set_store("big");
  absl::StatusOr<std::string> file = engine_->Export(request);
  ASSERT_TRUE(file.ok()) << file.status();

  absl::StatusOr<adapt::v1::StoreInfo> imported = engine_->Import("t", "copy", *file);
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kResourceExhausted) << imported.status();
  EXPECT_NE(imported.status().message().find("--state-map-bytes"), std::string::npos)
      << imported.status();
  adapt::v1::GetStoreRequest get;
  get.set_tenant("t");
  get.set_store("copy");
  EXPECT_EQ(engine_->GetStore(get).status().code(), absl::StatusCode::kNotFound);

  Start(nullptr);  // the default map: room for everything
  EXPECT_EQ(engine_->GetStore(get).status().code(), absl::StatusCode::kNotFound);
  imported = engine_->Import("t", "copy", *file);
  ASSERT_TRUE(imported.ok()) << imported.status();
  Start(nullptr);
  EXPECT_TRUE(engine_->GetStore(get).ok());
}

// A restarted sequence is in the log as such: after a crash (no checkpoint), a next store that
// restarted its sequence predicts what it did before, and not what the same items without the
// restart teach.
TEST_F(EngineDurabilityTest, ARestartedSequenceReplaysFromTheLog) {
  for (const char* name : {"restarted", "continued"}) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("t");
    create.set_store(name);
    create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
    create.mutable_spec()->set_dim(kDim);
    create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_NEXT);
    ASSERT_TRUE(engine_->CreateStore(create).ok());
  }
  auto adapt = [&](const std::string& store, int first, bool restart) {
    google::protobuf::RepeatedPtrField<adapt::v1::Input> items;
    for (int i = first; i < first + 4; ++i) {
      adapt::v1::Input* item = items.Add();
      for (int j = 0; j < kDim; ++j) item->mutable_vector()->add_values((i * 7 + j * 3) % 5 - 2);
    }
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    absl::Status added = session->Add("t", store, {}, items, 0, restart);
    ASSERT_TRUE(added.ok()) << added;
    ASSERT_TRUE(session->Finish().ok());
  };
  auto predict = [&](const std::string& store) { return Predicted(store, 6); };
  adapt("restarted", 0, false);
  adapt("restarted", 4, true);
  adapt("continued", 0, false);
  adapt("continued", 4, false);
  const std::string restarted = predict("restarted"), continued = predict("continued");
  EXPECT_NE(restarted, continued);
  Start(&env_);
  EXPECT_EQ(predict("restarted"), restarted);
  EXPECT_EQ(predict("continued"), continued);
}

// Sequence items with ids: a resent call's messages are skipped whole and counted as
// duplicates, before and after a crash (the ids are in the log); a message mixing applied and
// new items, a wrong count and a repeated id are refused and change nothing.
TEST_F(EngineDurabilityTest, ResentSequenceMessagesAreSkippedWhole) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("seq");
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
  create.mutable_spec()->set_dim(kDim);
  create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_NEXT);
  ASSERT_TRUE(engine_->CreateStore(create).ok());
  struct Message {
    int first;
    std::vector<std::string> ids;
  };
  auto adapt = [&](const std::vector<Message>& messages) {
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    for (size_t m = 0; m < messages.size(); ++m) {
      google::protobuf::RepeatedPtrField<adapt::v1::Input> items;
      google::protobuf::RepeatedPtrField<std::string> ids;
      for (size_t i = 0; i < messages[m].ids.size(); ++i) {
        adapt::v1::Input* item = items.Add();
        const int n = messages[m].first + static_cast<int>(i);
        for (int j = 0; j < kDim; ++j) item->mutable_vector()->add_values((n * 7 + j * 3) % 5 - 2);
        *ids.Add() = messages[m].ids[i];
      }
      if (!messages[m].ids.empty() && messages[m].ids[0] == "-") ids.Clear();
      absl::Status added = session->Add("t", "seq", {}, items, 0, m == 0, ids);
      if (!added.ok()) return absl::StatusOr<adapt::v1::AdaptResponse>(added);
    }
    return session->Finish();
  };
  auto predict = [&] { return Predicted("seq", 4); };
  const std::vector<Message> call = {{0, {"a0", "a1", "a2"}}, {3, {"a3", "a4"}}};
  auto first = adapt(call);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->duplicates(), 0u);
  const std::string learned = predict();
  auto again = adapt(call);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->duplicates(), 5u);
  EXPECT_EQ(again->accepted(), 5u);
  EXPECT_EQ(predict(), learned);

  Start(&env_);  // a crash: the ids come back from the log
  EXPECT_EQ(predict(), learned);
  auto after_crash = adapt(call);
  ASSERT_TRUE(after_crash.ok()) << after_crash.status();
  EXPECT_EQ(after_crash->duplicates(), 5u);
  EXPECT_EQ(predict(), learned);

  auto expect_refused = [&](const std::vector<Message>& messages, const std::string& text) {
    auto refused = adapt(messages);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
    EXPECT_NE(refused.status().message().find(text), std::string::npos) << refused.status();
    EXPECT_EQ(predict(), learned);
  };
  expect_refused({{0, {"a2", "b0"}}}, "sequence_ids: 1 of the message's 2 items were applied");
  expect_refused({{0, {"b0", "b1", "b0"}}}, "sequence_ids[2]: 'b0' repeats sequence_ids[0]");
  expect_refused({{0, {"b0", ""}}}, "sequence_ids[1]: 1 to 256 bytes, got 0");
  expect_refused({{0, {std::string(257, 'x')}}}, "sequence_ids[0]: 1 to 256 bytes, got 257");
  {
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    google::protobuf::RepeatedPtrField<adapt::v1::Input> items;
    items.Add()->mutable_vector()->mutable_values()->Resize(kDim, 1.0f);
    google::protobuf::RepeatedPtrField<std::string> ids;
    *ids.Add() = "c0";
    *ids.Add() = "c1";
    absl::Status added = session->Add("t", "seq", {}, items, 0, true, ids);
    EXPECT_EQ(added.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(added.message().find("sequence_ids: one per item of sequence (1), got 2"),
              std::string::npos)
        << added;
  }
  // New ids in the same store are applied; a message without ids is always applied.
  auto fresh = adapt({{5, {"b0", "b1"}}, {7, {"-", "-"}}});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->duplicates(), 0u);
  EXPECT_NE(predict(), learned);
}

// A compile whose record the log cannot make durable publishes nothing: the compile answers
// UNAVAILABLE, the previous version serves, and a restart on a healthy disk serves it too (the
// page cache dropped the record). A restart after a durable compile serves its version.
TEST_F(EngineDurabilityTest, ACompileIsPublishedOnlyOnceItsRecordIsDurable) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("f");
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  create.mutable_spec()->set_dim(kDim);
  // Explicit compiles only: the versions below are theirs.
  create.mutable_spec()->mutable_faast()->set_auto_compile_every(0);
  create.mutable_spec()->mutable_faast()->set_auto_compile_delay_ms(0);
  ASSERT_TRUE(engine_->CreateStore(create).ok());
  google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
  for (int i = 0; i < 4; ++i) {
    adapt::v1::Example* e = examples.Add();
    e->set_label(i % 2 ? "odd" : "even");
    for (int j = 0; j < kDim; ++j) e->mutable_input()->mutable_vector()->add_values(i == j);
  }
  const auto adapt = [&] {
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    ASSERT_TRUE(session->Add("t", "f", examples).ok());
    ASSERT_TRUE(session->Finish().ok());
  };
  const auto compile = [&] {
    adapt::v1::CompileRequest request;
    request.set_tenant("t");
    request.set_store("f");
    absl::StatusOr<adapt::v1::CompileResponse> result;
    absl::Notification done;
    engine_->Compile(request, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
      result = std::move(r);
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  };
  const auto version = [&] {
    adapt::v1::GetStoreRequest request;
    request.set_tenant("t");
    request.set_store("f");
    absl::StatusOr<adapt::v1::StoreInfo> info = engine_->GetStore(request);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->version() : 0;
  };
  adapt();
  ASSERT_TRUE(compile().ok());
  adapt();
  env_.Inject({What::kSyncEio, kLogGlob, 1, 1, /*drop_unsynced=*/true});
  absl::StatusOr<adapt::v1::CompileResponse> refused = compile();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_EQ(version(), 1u);

  Start(nullptr);  // a healthy disk
  EXPECT_EQ(version(), 1u);
  absl::StatusOr<adapt::v1::CompileResponse> second = compile();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->version(), 2u);
  Start(nullptr);
  EXPECT_EQ(version(), 2u);
}

}  // namespace
}  // namespace adaptd
