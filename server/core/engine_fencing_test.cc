// The engine over the in-memory durability (server/durability/memory_durability.h), where
// another server can take the stores over: once it has, this engine's writes, pins, compiles
// and deletes answer UNAVAILABLE (retryable), are never acknowledged and change nothing; and
// an engine started on the same durable state has every write acknowledged before.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/config/config.h"
#include "server/core/engine.h"
#include "server/durability/memory_durability.h"

namespace adaptd {
namespace {

constexpr int kDim = 4;

class EngineFencingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    engine_ = Start();
    ASSERT_NE(engine_, nullptr);
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("t");
    create.set_store("s");
    create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
    create.mutable_spec()->set_dim(kDim);
    ASSERT_TRUE(engine_->CreateStore(create).ok());
  }

  // An engine over the shared disk: it holds every store there from now on.
  std::unique_ptr<Engine> Start() {
    auto engine = Engine::CreateOver(
        DefaultConfig(), backend_.get(), nullptr,
        [this](
            std::vector<RecoveredStore>* recovered) -> absl::StatusOr<std::unique_ptr<Durability>> {
          auto opened = MemoryDurability::Open(disk_, backend_.get(), recovered);
          if (!opened.ok()) return opened.status();
          return std::unique_ptr<Durability>(*std::move(opened));
        });
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  static absl::StatusOr<adapt::v1::AdaptResponse> Adapt(Engine& engine, const std::string& prefix) {
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    for (int i = 0; i < 3; ++i) {
      adapt::v1::Example* e = examples.Add();
      e->set_id(absl::StrCat(prefix, i));
      e->set_label(i % 2 ? "odd" : "even");
      for (int j = 0; j < kDim; ++j) e->mutable_input()->mutable_vector()->add_values(i * j + 1);
    }
    auto session = engine.StartWrite(TxnKind::kAdapt);
    if (absl::Status added = session->Add("t", "s", examples); !added.ok()) return added;
    return session->Finish();
  }

  static adapt::v1::StoreInfo Info(const Engine& engine) {
    adapt::v1::GetStoreRequest request;
    request.set_tenant("t");
    request.set_store("s");
    auto info = engine.GetStore(request);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : adapt::v1::StoreInfo();
  }

  static absl::StatusOr<adapt::v1::CompileResponse> Compile(Engine& engine) {
    adapt::v1::CompileRequest request;
    request.set_tenant("t");
    request.set_store("s");
    absl::StatusOr<adapt::v1::CompileResponse> result;
    absl::Notification done;
    engine.Compile(request, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
      result = std::move(r);
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::shared_ptr<MemoryDisk> disk_ = std::make_shared<MemoryDisk>();
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineFencingTest, AfterATakeOverWritesAreRefusedRetryablyAndChangeNothing) {
  ASSERT_TRUE(Adapt(*engine_, "a").ok());
  std::unique_ptr<Engine> successor = Start();  // takes t/s over
  ASSERT_NE(successor, nullptr);
  EXPECT_EQ(Info(*successor).examples(), 3u);

  absl::StatusOr<adapt::v1::AdaptResponse> stale = Adapt(*engine_, "b");
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kUnavailable) << stale.status();
  EXPECT_TRUE(IsOwnershipLost(stale.status())) << stale.status();
  EXPECT_EQ(Info(*engine_).examples(), 3u);  // not applied here either

  adapt::v1::PinStoreRequest pin;
  pin.set_tenant("t");
  pin.set_store("s");
  pin.set_pinned(true);
  EXPECT_TRUE(IsOwnershipLost(engine_->PinStore(pin).status()));
  EXPECT_FALSE(Info(*engine_).spec().pinned());
  adapt::v1::DeleteStoreRequest del;
  del.set_tenant("t");
  del.set_store("s");
  EXPECT_TRUE(IsOwnershipLost(engine_->DeleteStore(del)));
  EXPECT_EQ(Info(*engine_).examples(), 3u);  // still here: a refused delete removes nothing

  // The successor writes on (the same ids too: they were never applied); an engine started
  // after it has everything the successor acknowledged and nothing the stale engine tried.
  ASSERT_TRUE(Adapt(*successor, "b").ok());
  EXPECT_EQ(Info(*successor).examples(), 6u);
  successor.reset();
  engine_.reset();
  std::unique_ptr<Engine> third = Start();
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(Info(*third).examples(), 6u);
  EXPECT_FALSE(Info(*third).spec().pinned());
}

// A compile is published only once its record is durable: one whose append fails publishes
// nothing and answers the error (the previous version serves, before and after a restart); a
// restart after a durable compile serves its version.
TEST_F(EngineFencingTest, ACompileWhoseRecordIsNotDurablePublishesNothing) {
  // Explicit compiles only: the versions below are theirs.
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("s");
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  create.mutable_spec()->set_dim(kDim);
  create.mutable_spec()->mutable_faast()->set_auto_compile_every(0);
  create.mutable_spec()->mutable_faast()->set_auto_compile_delay_ms(0);
  adapt::v1::DeleteStoreRequest remove;
  remove.set_tenant("t");
  remove.set_store("s");
  ASSERT_TRUE(engine_->DeleteStore(remove).ok());
  ASSERT_TRUE(engine_->CreateStore(create).ok());
  ASSERT_TRUE(Adapt(*engine_, "a").ok());
  absl::StatusOr<adapt::v1::CompileResponse> first = Compile(*engine_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->version(), 1u);
  ASSERT_TRUE(Adapt(*engine_, "b").ok());

  disk_->FailAppends(1);
  EXPECT_FALSE(Compile(*engine_).ok());
  EXPECT_EQ(Info(*engine_).version(), 1u);
  EXPECT_EQ(Info(*engine_).faast().pending_examples(), 3u);

  engine_.reset();
  engine_ = Start();
  ASSERT_NE(engine_, nullptr);
  EXPECT_EQ(Info(*engine_).version(), 1u);
  absl::StatusOr<adapt::v1::CompileResponse> second = Compile(*engine_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->version(), 2u);
  engine_.reset();
  engine_ = Start();
  ASSERT_NE(engine_, nullptr);
  EXPECT_EQ(Info(*engine_).version(), 2u);
  EXPECT_EQ(Info(*engine_).faast().pending_examples(), 0u);
}

}  // namespace
}  // namespace adaptd
