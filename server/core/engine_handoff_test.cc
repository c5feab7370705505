// The engine's part of a cluster hand-off (docs/CLUSTER.md, "Hand-off") on real data
// directories: the write fence (every kind of change refused while a store moves, changes in
// flight waited for), what a move sends (the snapshot and the remembered example ids), the
// receiving side (ids remembered across a restart, the pin kept, no quota check), and the
// sender's delete of its copy even when the store is a base in use.
#include <chrono>
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
#include "server/core/write_fence.h"

namespace adaptd {
namespace {

using adapt::v1::OutputSpec;
using adapt::v1::StoreSpec;

constexpr int kDim = 4;

TEST(WriteFencesTest, CloseWaitsForTheChangesInFlightAndRefusesNewOnes) {
  WriteFences fences;
  ASSERT_TRUE(fences.Enter("t/s").ok());
  ASSERT_TRUE(fences.Enter("t/other").ok());
  absl::Notification closed;
  std::thread closer([&] {
    fences.Close("t/s");
    closed.Notify();
  });
  // Still in flight: Close waits.
  EXPECT_FALSE(closed.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  fences.Leave("t/s");
  EXPECT_TRUE(closed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  closer.join();
  const absl::Status refused = fences.Enter("t/s");
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_EQ(refused.message(),
            "store t/s is being handed off to another member of the cluster; retry");
  EXPECT_TRUE(fences.IsClosed("t/s"));
  fences.Leave("t/other");  // another store's fence is its own
  EXPECT_TRUE(fences.Enter("t/other").ok());
  fences.Leave("t/other");
  fences.Open("t/s");
  {
    ASSERT_TRUE(fences.Enter("t/s").ok());
    FenceHold hold(&fences, "t/s");  // leaves the change entered just above
    ASSERT_TRUE(fences.Enter("t/s").ok());
  }
  // The hold left once: one change is still in flight, so a Close would wait.
  absl::Notification second;
  std::thread again([&] {
    fences.Close("t/s");
    second.Notify();
  });
  EXPECT_FALSE(second.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  fences.Leave("t/s");
  EXPECT_TRUE(second.WaitForNotificationWithTimeout(absl::Seconds(10)));
  again.join();
}

class EngineHandOffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    root_ = ::testing::TempDir() + "/engine-handoff-" + std::to_string(std::random_device()());
    std::filesystem::remove_all(root_);
    from_ = Open("from");
    to_ = Open("to", /*max_stores=*/1);
  }
  void TearDown() override {
    from_.reset();
    to_.reset();
    std::filesystem::remove_all(root_);
  }

  std::unique_ptr<Engine> Open(const std::string& name, uint64_t max_stores = 0) {
    adapt::v1::ServerConfig config = DefaultConfig();
    config.set_data_dir(absl::StrCat(root_, "/", name));
    if (max_stores > 0) config.mutable_default_quota()->set_max_stores(max_stores);
    auto engine = Engine::Create(config, backend_.get(), nullptr, nullptr);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  static StoreSpec Faast(const std::string& base = "") {
    StoreSpec spec;
    spec.set_kind(adapt::v1::STORE_KIND_FAAST);
    spec.mutable_output()->set_kind(OutputSpec::KIND_LABELS);
    spec.mutable_faast()->set_ridge(0.5);
    spec.mutable_faast()->set_auto_compile_delay_ms(0);
    spec.set_base(base);
    return spec;
  }

  static absl::Status Create(Engine& engine, const std::string& tenant, const std::string& store,
                             const StoreSpec& spec) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant(tenant);
    create.set_store(store);
    *create.mutable_spec() = spec;
    return engine.CreateStore(create).status();
  }

  // Examples with ids `prefix`0.. into tenant/store; the response, or the first error.
  static absl::StatusOr<adapt::v1::AdaptResponse> Adapt(Engine& engine, const std::string& tenant,
                                                        const std::string& store, int n,
                                                        const std::string& prefix) {
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    for (int i = 0; i < n; ++i) {
      adapt::v1::Example* e = examples.Add();
      e->set_id(absl::StrCat(prefix, i));
      e->set_label(i % 2 ? "yes" : "no");
      for (int j = 0; j < kDim; ++j) {
        e->mutable_input()->mutable_vector()->add_values(static_cast<float>((i + j) % 3) - 1);
      }
    }
    auto session = engine.StartWrite(TxnKind::kAdapt);
    if (absl::Status added = session->Add(tenant, store, examples); !added.ok()) return added;
    return session->Finish();
  }

  static absl::StatusOr<adapt::v1::CompileResponse> Compile(Engine& engine,
                                                            const std::string& tenant,
                                                            const std::string& store) {
    adapt::v1::CompileRequest compile;
    compile.set_tenant(tenant);
    compile.set_store(store);
    absl::Notification compiled;
    absl::StatusOr<adapt::v1::CompileResponse> result = absl::UnknownError("not run");
    engine.Compile(compile, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
      result = std::move(r);
      compiled.Notify();
    });
    compiled.WaitForNotification();
    return result;
  }

  static uint64_t Examples(Engine& engine, const std::string& tenant, const std::string& store) {
    adapt::v1::GetStoreRequest get;
    get.set_tenant(tenant);
    get.set_store(store);
    auto info = engine.GetStore(get);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->examples() : 0;
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::string root_;
  std::unique_ptr<Engine> from_, to_;
};

TEST_F(EngineHandOffTest, AStoreInMotionTakesNoChangeOfAnyKind) {
  ASSERT_TRUE(Create(*from_, "acme", "s", Faast()).ok());
  ASSERT_TRUE(Adapt(*from_, "acme", "s", 6, "a").ok());
  EXPECT_TRUE(from_->Holds("acme", "s"));
  EXPECT_FALSE(from_->Holds("acme", "other"));
  ASSERT_EQ(from_->HeldStores().size(), 1u);

  absl::StatusOr<Engine::Outgoing> out = from_->ExportForMove("acme", "s");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->file.empty());
  EXPECT_EQ(out->applied_ids, (std::vector<std::string>{"a0", "a1", "a2", "a3", "a4", "a5"}));

  const std::string why =
      "store acme/s is being handed off to another member of the cluster; retry";
  absl::StatusOr<adapt::v1::AdaptResponse> write = Adapt(*from_, "acme", "s", 2, "b");
  ASSERT_TRUE(absl::IsUnavailable(write.status())) << write.status();
  EXPECT_EQ(write.status().message(), why);
  absl::StatusOr<adapt::v1::CompileResponse> compile = Compile(*from_, "acme", "s");
  EXPECT_EQ(compile.status(), absl::UnavailableError(why));
  adapt::v1::PinStoreRequest pin;
  pin.set_tenant("acme");
  pin.set_store("s");
  pin.set_pinned(true);
  EXPECT_EQ(from_->PinStore(pin).status(), absl::UnavailableError(why));
  adapt::v1::DeleteStoreRequest del;
  del.set_tenant("acme");
  del.set_store("s");
  EXPECT_EQ(from_->DeleteStore(del), absl::UnavailableError(why));
  // Nothing changed: reads go on, and the state is the one sent.
  EXPECT_EQ(Examples(*from_, "acme", "s"), 6u);
  adapt::v1::ExportStoreRequest exported;
  exported.set_tenant("acme");
  exported.set_store("s");
  EXPECT_EQ(*from_->Export(exported), out->file);

  // A move that will not happen (a drain undone): changes are taken again.
  from_->Unfence("acme", "s");
  ASSERT_TRUE(Adapt(*from_, "acme", "s", 2, "b").ok());
  EXPECT_EQ(Examples(*from_, "acme", "s"), 8u);
}

TEST_F(EngineHandOffTest, TheNewOwnerRemembersTheIdsAndThePinAndCountsNoQuota) {
  ASSERT_TRUE(Create(*from_, "acme", "s", Faast()).ok());
  ASSERT_TRUE(Adapt(*from_, "acme", "s", 6, "a").ok());
  ASSERT_TRUE(Compile(*from_, "acme", "s").ok());
  adapt::v1::PinStoreRequest pin;
  pin.set_tenant("acme");
  pin.set_store("s");
  pin.set_pinned(true);
  ASSERT_TRUE(from_->PinStore(pin).ok());
  absl::StatusOr<Engine::Outgoing> out = from_->ExportForMove("acme", "s");
  ASSERT_TRUE(out.ok()) << out.status();

  // The receiving tenant is at its store quota (1).
  ASSERT_TRUE(Create(*to_, "acme", "first", Faast()).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(to_->Import("acme", "s", out->file).status()));
  absl::StatusOr<adapt::v1::StoreInfo> moved =
      to_->Import("acme", "s", out->file, out->applied_ids, /*moved=*/true);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_TRUE(moved->spec().pinned());
  EXPECT_EQ(moved->examples(), 6u);
  EXPECT_EQ(to_->Import("acme", "s", out->file, out->applied_ids, true).status().code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(from_->DropMoved("acme", "s").ok());
  EXPECT_FALSE(from_->Holds("acme", "s"));

  // A client's resend after the move, before and after the new owner restarts: skipped.
  absl::StatusOr<adapt::v1::AdaptResponse> resend = Adapt(*to_, "acme", "s", 6, "a");
  ASSERT_TRUE(resend.ok()) << resend.status();
  EXPECT_EQ(resend->duplicates(), 6u);
  to_.reset();
  to_ = Open("to", 1);
  resend = Adapt(*to_, "acme", "s", 8, "a");
  ASSERT_TRUE(resend.ok()) << resend.status();
  EXPECT_EQ(resend->duplicates(), 6u);
  EXPECT_EQ(Examples(*to_, "acme", "s"), 8u);
  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store("s");
  EXPECT_TRUE(to_->GetStore(get)->spec().pinned());
}

TEST_F(EngineHandOffTest, TheSenderDropsItsCopyEvenOfABaseInUseDurably) {
  ASSERT_TRUE(Create(*from_, "acme", "base", Faast()).ok());
  ASSERT_TRUE(Adapt(*from_, "acme", "base", 6, "a").ok());
  ASSERT_TRUE(Compile(*from_, "acme", "base").ok());
  ASSERT_TRUE(Create(*from_, "acme", "child", Faast("acme/base")).ok());
  adapt::v1::DeleteStoreRequest del;
  del.set_tenant("acme");
  del.set_store("base");
  EXPECT_EQ(from_->DeleteStore(del).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(from_->ExportForMove("acme", "base").ok());
  ASSERT_TRUE(from_->DropMoved("acme", "base").ok());
  EXPECT_FALSE(from_->Holds("acme", "base"));
  EXPECT_TRUE(from_->Holds("acme", "child"));
  EXPECT_TRUE(absl::IsNotFound(from_->DropMoved("acme", "base")));
  from_.reset();
  from_ = Open("from");
  EXPECT_FALSE(from_->Holds("acme", "base"));
  EXPECT_EQ(Examples(*from_, "acme", "child"), 0u);
  // A store of that name created later (moved back, say) takes changes.
  ASSERT_TRUE(Create(*from_, "acme", "base", Faast()).ok());
  ASSERT_TRUE(Adapt(*from_, "acme", "base", 2, "z").ok());
}

}  // namespace
}  // namespace adaptd
