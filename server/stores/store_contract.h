// The Store contract (store.h) as one typed test suite that every store kind runs. A kind
// joins by instantiating it with a traits type:
//
//   struct MyKindTraits {
//     static constexpr const char* kKind = "mykind";  // a registered StoreKind name
//     static constexpr const char* kParams = "";      // text format, merged over small_params
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(MyKind, StoreContract, ::testing::Types<MyKindTraits>);
//
// What it checks: a refused call leaves the store byte-identical (its snapshot equal before
// and after); a commit applies all its staged examples or none; a snapshot round trip is exact
// (as one protobuf and through a snapshot file);
// readers never see a torn version while writers commit; export and import (the engine's
// snapshot files) reproduce the store; an acknowledged write is never visible before its log
// record is durable, and survives a restart. Stores are label stores of dimension kDim created from
// the kind's SmallSpec on the CPU backend. Test-only.
#ifndef ADAPTD_SERVER_STORES_STORE_CONTRACT_H_
#define ADAPTD_SERVER_STORES_STORE_CONTRACT_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/snapshot.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/config/config.h"
#include "server/core/engine.h"
#include "server/persistence/testing/fault_injection_env.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store.h"
#include "server/stores/store_factory.h"
#include "server/stores/store_kind.h"
#include "server/stores/timings_test_util.h"

namespace adaptd::contract {

inline constexpr int64_t kDim = 8;
inline const std::vector<std::string> kLabels = {"ant", "bee", "cat"};

// The snapshot's bytes, serialized deterministically: equal bytes mean equal stores.
inline std::string Fingerprint(const Store& store) {
  absl::StatusOr<adapt::v1::StoreSnapshot> snapshot = store.Snapshot();
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  if (!snapshot.ok()) return "";
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    snapshot->SerializeToCodedStream(&coded);
  }
  return bytes;
}

// `rows` examples with normal keys of `dim` and labels cycling through kLabels from `first`.
inline ExampleBatch Batch(std::mt19937_64& rng, int64_t rows, int64_t dim = kDim, int first = 0) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ExampleBatch batch;
  batch.rows = rows;
  batch.dim = dim;
  batch.keys.resize(rows * dim);
  for (float& x : batch.keys) x = normal(rng);
  for (int64_t i = 0; i < rows; ++i) batch.labels.push_back(kLabels[(first + i) % 3]);
  return batch;
}

// The examples of `batch` as an Adapt request carries them (vector inputs, labels).
inline google::protobuf::RepeatedPtrField<adapt::v1::Example> Examples(const ExampleBatch& batch) {
  google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
  for (int64_t i = 0; i < batch.rows; ++i) {
    adapt::v1::Example* e = examples.Add();
    for (int64_t j = 0; j < batch.dim; ++j) {
      e->mutable_input()->mutable_vector()->add_values(batch.keys[i * batch.dim + j]);
    }
    e->set_label(batch.labels[i]);
  }
  return examples;
}

// Stages `batches` in one transaction and commits it.
inline absl::StatusOr<CommitResult> Apply(Store& store, const std::vector<ExampleBatch>& batches,
                                          TxnKind kind = TxnKind::kAdapt) {
  std::unique_ptr<Txn> txn = store.Begin(kind);
  for (const ExampleBatch& b : batches) {
    if (absl::Status s = txn->Add(b); !s.ok()) return s;
  }
  return store.Commit(*txn);
}

// Publishes what the store holds where the kind has a compile step; a kind without one
// answers FailedPrecondition, which is its contract too.
inline void Publish(Store& store) {
  absl::StatusOr<adapt::v1::CompileResponse> r = store.Compile(adapt::v1::CompileRequest());
  ASSERT_TRUE(r.ok() || r.status().code() == absl::StatusCode::kFailedPrecondition) << r.status();
}

inline std::vector<float> Probes(int64_t rows) {
  std::mt19937_64 rng(99);
  return Batch(rng, rows).keys;
}

// Predictions as comparable values (label ids, scores, vectors), or the status text.
inline std::string Outputs(const Store& store, const std::vector<float>& probes) {
  absl::StatusOr<Predictions> p =
      store.Predict(probes.data(), static_cast<int64_t>(probes.size()) / kDim, kDim, 3);
  if (!p.ok()) return std::string(p.status().ToString());
  std::string out = std::to_string(p->version) + ":";
  for (int32_t id : p->label_ids) out += std::to_string(id) + ",";
  for (float s : p->scores) out += std::to_string(s) + ",";
  for (float v : p->vectors) out += std::to_string(v) + ",";
  return out;
}

template <typename Traits>
class StoreContract : public ::testing::Test {
 protected:
  void SetUp() override { backend_ = kernels::MakeCpuBackend(1); }

  adapt::v1::StoreSpec Spec() const {
    const StoreKind* kind = StoreKinds::Global().Find(Traits::kKind);
    EXPECT_NE(kind, nullptr) << "store kind " << Traits::kKind << " is not registered";
    if (kind == nullptr) return {};
    adapt::v1::OutputSpec labels;
    labels.set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    absl::StatusOr<adapt::v1::StoreSpec> spec = SmallSpec(*kind, kDim, labels);
    EXPECT_TRUE(spec.ok()) << spec.status();
    if (!spec.ok()) return {};
    const std::string extra = Traits::kParams;
    if (!extra.empty()) {
      const google::protobuf::FieldDescriptor* field =
          adapt::v1::StoreSpec::descriptor()->FindFieldByName(kind->name);
      EXPECT_NE(field, nullptr);
      if (field != nullptr) {
        EXPECT_TRUE(google::protobuf::TextFormat::MergeFromString(
            extra, spec->GetReflection()->MutableMessage(&*spec, field)));
      }
    }
    return *spec;
  }

  std::unique_ptr<Store> NewStore() const {
    absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(Spec(), backend_.get());
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // A store with examples of every label, published where the kind compiles.
  std::unique_ptr<Store> FilledStore(uint64_t seed = 1) const {
    std::unique_ptr<Store> store = NewStore();
    if (store == nullptr) return nullptr;
    std::mt19937_64 rng(seed);
    absl::StatusOr<CommitResult> r = Apply(*store, {Batch(rng, 12), Batch(rng, 12, kDim, 1)});
    EXPECT_TRUE(r.ok()) << r.status();
    Publish(*store);
    return store;
  }

  kernels::Backend* backend() const { return backend_.get(); }

 private:
  std::unique_ptr<kernels::Backend> backend_;
};

TYPED_TEST_SUITE_P(StoreContract);

TYPED_TEST_P(StoreContract, RefusedCallsLeaveTheStoreByteIdentical) {
  std::unique_ptr<Store> store = this->FilledStore();
  ASSERT_NE(store, nullptr);
  const std::string before = Fingerprint(*store);
  std::mt19937_64 rng(2);

  // Another dimension than the store's: refused when staged or when committed.
  {
    std::unique_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
    if (txn->Add(Batch(rng, 3, kDim + 1)).ok()) {
      EXPECT_FALSE(store->Commit(*txn).ok());
    }
  }
  EXPECT_EQ(Fingerprint(*store), before) << "after a batch of another dimension";

  // A transaction of another store.
  {
    std::unique_ptr<Store> other = this->NewStore();
    ASSERT_NE(other, nullptr);
    std::unique_ptr<Txn> foreign = other->Begin(TxnKind::kAdapt);
    ASSERT_TRUE(foreign->Add(Batch(rng, 3)).ok());
    absl::StatusOr<CommitResult> r = store->Commit(*foreign);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  EXPECT_EQ(Fingerprint(*store), before) << "after a foreign transaction";

  // A transaction committed twice: the second commit is refused and changes nothing.
  {
    std::unique_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
    ASSERT_TRUE(txn->Add(Batch(rng, 3)).ok());
    ASSERT_TRUE(store->Commit(*txn).ok());
    const std::string committed = Fingerprint(*store);
    absl::StatusOr<CommitResult> again = store->Commit(*txn);
    EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
    EXPECT_EQ(Fingerprint(*store), committed) << "after a second commit of one transaction";
  }
  const std::string after_commit = Fingerprint(*store);

  // A forget of a label the store never saw: refused (or, for a kind that cannot forget,
  // refused as a whole).
  {
    ExampleBatch unknown = Batch(rng, 1);
    unknown.labels = {"never-seen"};
    std::unique_ptr<Txn> txn = store->Begin(TxnKind::kForget);
    if (txn->Add(unknown).ok()) {
      EXPECT_FALSE(store->Commit(*txn).ok());
    }
  }
  EXPECT_EQ(Fingerprint(*store), after_commit) << "after a forget of an unknown label";

  // Reads of another dimension and a compile.
  const std::vector<float> wrong(2 * (kDim + 1), 0.5f);
  EXPECT_FALSE(store->Predict(wrong.data(), 2, kDim + 1, 1).ok());
  EXPECT_EQ(Fingerprint(*store), after_commit) << "after a predict of another dimension";
}

TYPED_TEST_P(StoreContract, ACommitAppliesAllItsExamplesOrNone) {
  // A failed Add leaves the transaction as it was: committing it applies the batches staged
  // before, exactly as a transaction that never saw the bad batch.
  std::mt19937_64 rng(3);
  const ExampleBatch good = Batch(rng, 6);
  const ExampleBatch bad = Batch(rng, 3, kDim + 2);  // another dimension than the spec's

  std::unique_ptr<Store> a = this->NewStore();
  std::unique_ptr<Store> b = this->NewStore();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::unique_ptr<Txn> txn = a->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(txn->Add(good).ok());
  const uint64_t staged = txn->staged();
  const bool refused = !txn->Add(bad).ok();
  if (refused) {
    EXPECT_EQ(txn->staged(), staged);
    ASSERT_TRUE(a->Commit(*txn).ok());
    ASSERT_TRUE(Apply(*b, {good}).ok());
    EXPECT_EQ(Fingerprint(*a), Fingerprint(*b));
  } else {
    // Staged, so the commit must refuse the whole transaction.
    const std::string before = Fingerprint(*a);
    EXPECT_FALSE(a->Commit(*txn).ok());
    EXPECT_EQ(Fingerprint(*a), before);
  }

  // Two transactions staged before the dimension was fixed: the second, of another
  // dimension than the first committed, is refused at commit as a whole.
  adapt::v1::StoreSpec open = this->Spec();
  open.set_dim(0);
  absl::StatusOr<std::unique_ptr<Store>> c = CreateStore(open, this->backend());
  ASSERT_TRUE(c.ok()) << c.status();
  std::unique_ptr<Txn> first = (*c)->Begin(TxnKind::kAdapt);
  std::unique_ptr<Txn> second = (*c)->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(first->Add(Batch(rng, 5)).ok());
  ASSERT_TRUE(second->Add(Batch(rng, 2)).ok());
  ASSERT_TRUE(second->Add(Batch(rng, 2, kDim)).ok());
  std::unique_ptr<Txn> third = (*c)->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(third->Add(Batch(rng, 2, kDim - 3)).ok());
  ASSERT_TRUE((*c)->Commit(*first).ok());
  const std::string after_first = Fingerprint(**c);
  absl::StatusOr<CommitResult> mismatched = (*c)->Commit(*third);
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument) << mismatched.status();
  EXPECT_EQ(Fingerprint(**c), after_first) << "a refused commit changed the store";
  absl::StatusOr<CommitResult> both = (*c)->Commit(*second);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->examples, 4u);
}

TYPED_TEST_P(StoreContract, SnapshotRoundTripIsExact) {
  std::unique_ptr<Store> store = this->FilledStore();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<adapt::v1::StoreSnapshot> snapshot = store->Snapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  absl::StatusOr<std::unique_ptr<Store>> restored = RestoreStore(*snapshot, this->backend());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Fingerprint(**restored), Fingerprint(*store));
  const std::vector<float> probes = Probes(5);
  EXPECT_EQ(Outputs(**restored, probes), Outputs(*store, probes));
  adapt::v1::StoreInfo a, b;
  store->Describe(&a);
  (*restored)->Describe(&b);
  EXPECT_EQ(a.version(), b.version());
  EXPECT_EQ(a.examples(), b.examples());

  // Through a snapshot file (format 2: the arrays as sections) too, bit for bit.
  absl::StatusOr<std::string> file = EncodeStoreFile(*store);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(*file);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  absl::StatusOr<std::unique_ptr<Store>> from_file =
      RestoreStore(decoded->header, decoded->arrays, this->backend());
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(Fingerprint(**from_file), Fingerprint(*store));
  EXPECT_EQ(EncodeStoreFile(**from_file).value(), *file);

  // The restored store goes on as the original would.
  std::mt19937_64 rng(4);
  const ExampleBatch more = Batch(rng, 7);
  ASSERT_TRUE(Apply(*store, {more}).ok());
  ASSERT_TRUE(Apply(**restored, {more}).ok());
  EXPECT_EQ(Fingerprint(**restored), Fingerprint(*store));

  // A snapshot of another kind's state is refused, naming the field.
  adapt::v1::StoreSnapshot wrong = *snapshot;
  wrong.clear_state();
  absl::StatusOr<std::unique_ptr<Store>> refused = RestoreStore(wrong, this->backend());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message().rfind("snapshot.", 0), 0u) << refused.status();
}

TYPED_TEST_P(StoreContract, ReadersNeverSeeATornVersion) {
  std::unique_ptr<Store> store = this->FilledStore();
  ASSERT_NE(store, nullptr);
  const std::vector<float> probes = Probes(4);
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  std::map<uint64_t, std::string> seen;  // version → outputs
  std::vector<std::string> failures;
  std::atomic<int> commits{0};

  auto writer = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 30; ++i) {
      if (!Apply(*store, {Batch(rng, 3, kDim, i)}).ok()) continue;
      ++commits;
      if (i % 5 == 4) (void)store->Compile(adapt::v1::CompileRequest());
    }
  };
  auto reader = [&] {
    uint64_t last = 0;
    // At least 20 reads each, however soon the writers finish on a loaded machine.
    for (int n = 0; n < 20 || !stop.load(); ++n) {
      absl::StatusOr<Predictions> p = store->Predict(probes.data(), 4, kDim, 3);
      if (!p.ok()) continue;
      std::string out;
      for (int32_t id : p->label_ids) out += std::to_string(id) + ",";
      for (float s : p->scores) out += std::to_string(s) + ",";
      absl::MutexLock lock(&mu);
      if (p->version < last) failures.push_back("version went back");
      last = p->version;
      auto [it, inserted] = seen.emplace(p->version, out);
      if (!inserted && it->second != out) {
        failures.push_back("version " + std::to_string(p->version) + " read two ways");
      }
    }
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) readers.emplace_back(reader);
  std::thread w1(writer, 10), w2(writer, 11);
  w1.join();
  w2.join();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(commits.load(), 60);
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_FALSE(seen.empty());
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.examples(), 24u + 60u * 3u);
}

// The engine's ExportStore file, imported under another name, is the same store: the same
// description (but the names), the same predictions, and the same future.
TYPED_TEST_P(StoreContract, ExportAndImportReproduceTheStore) {
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_data_dir("");
  config.set_compile_threads(1);
  absl::StatusOr<std::unique_ptr<Engine>> engine =
      Engine::Create(config, this->backend(), /*metrics=*/nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("original");
  *create.mutable_spec() = this->Spec();
  ASSERT_TRUE((*engine)->CreateStore(create).ok());

  std::mt19937_64 rng(5);
  auto adapt = [&](const std::string& store, const ExampleBatch& batch) {
    const google::protobuf::RepeatedPtrField<adapt::v1::Example> examples = Examples(batch);
    std::unique_ptr<WriteSession> session = (*engine)->StartWrite(TxnKind::kAdapt);
    ASSERT_TRUE(session->Add("t", store, examples).ok());
    ASSERT_TRUE(session->Finish().ok());
  };
  auto compile = [&](const std::string& store) {
    adapt::v1::CompileRequest request;
    request.set_tenant("t");
    request.set_store(store);
    absl::Notification done;
    absl::Status status;
    (*engine)->Compile(request, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
      status = r.status();
      done.Notify();
    });
    done.WaitForNotification();
    ASSERT_TRUE(status.ok() || status.code() == absl::StatusCode::kFailedPrecondition) << status;
  };
  auto describe = [&](const std::string& store) {
    adapt::v1::GetStoreRequest get;
    get.set_tenant("t");
    get.set_store(store);
    absl::StatusOr<adapt::v1::StoreInfo> info = (*engine)->GetStore(get);
    EXPECT_TRUE(info.ok()) << info.status();
    info->clear_store();
    info->clear_memory_bytes();  // allocation sizes may differ; the contents may not
    ClearTimings(&*info);
    return info->DebugString();
  };
  auto predict = [&](const std::string& store) {
    adapt::v1::PredictRequest request;
    request.set_tenant("t");
    request.set_store(store);
    request.set_top_k(3);
    const std::vector<float> probes = Probes(4);
    for (int i = 0; i < 4; ++i) {
      adapt::v1::FloatVector* v = request.add_inputs()->mutable_vector();
      for (int64_t j = 0; j < kDim; ++j) v->add_values(probes[i * kDim + j]);
    }
    absl::StatusOr<adapt::v1::PredictResponse> r = (*engine)->Predict(request);
    return r.ok() ? r->DebugString() : std::string(r.status().ToString());
  };

  adapt("original", Batch(rng, 20));
  compile("original");
  adapt::v1::ExportStoreRequest request;
  request.set_tenant("t");
  request.set_store("original");
  absl::StatusOr<std::string> file = (*engine)->Export(request);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<adapt::v1::StoreInfo> imported = (*engine)->Import("t", "copy", *file);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(describe("copy"), describe("original"));
  EXPECT_EQ(predict("copy"), predict("original"));

  const ExampleBatch more = Batch(rng, 9, kDim, 2);
  for (const char* store : {"original", "copy"}) {
    adapt(store, more);
    compile(store);
  }
  EXPECT_EQ(describe("copy"), describe("original"));
  EXPECT_EQ(predict("copy"), predict("original"));
}

// With a data directory: while the log record of an Adapt call waits for its fsync, readers
// see the store exactly as before (its export is byte-identical); once the call is
// acknowledged, a new engine on the same directory (as after a crash) holds the same store.
TYPED_TEST_P(StoreContract, AnAcknowledgedWriteIsNeverVisibleBeforeItIsDurable) {
  const std::string dir = ::testing::TempDir() + "/contract-durable-" +
                          std::to_string(std::random_device()()) + "-" + TypeParam::kKind;
  std::filesystem::remove_all(dir);
  FaultInjectionEnv env;
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_data_dir(dir);
  config.set_compile_threads(1);
  auto start = [&](Env* with) {
    absl::StatusOr<std::unique_ptr<Engine>> engine =
        Engine::Create(config, this->backend(), /*metrics=*/nullptr, with);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  };
  std::unique_ptr<Engine> engine = start(&env);
  ASSERT_NE(engine, nullptr);
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("s");
  *create.mutable_spec() = this->Spec();
  ASSERT_TRUE(engine->CreateStore(create).ok());
  std::mt19937_64 rng(6);
  auto adapt = [&](const ExampleBatch& batch) {
    const google::protobuf::RepeatedPtrField<adapt::v1::Example> examples = Examples(batch);
    std::unique_ptr<WriteSession> session = engine->StartWrite(TxnKind::kAdapt);
    if (absl::Status s = session->Add("t", "s", examples); !s.ok()) return s;
    return session->Finish().status();
  };
  auto exported = [&](Engine& e) {
    adapt::v1::ExportStoreRequest request;
    request.set_tenant("t");
    request.set_store("s");
    absl::StatusOr<std::string> file = e.Export(request);
    return file.ok() ? *file : std::string(file.status().ToString());
  };
  ASSERT_TRUE(adapt(Batch(rng, 8)).ok());
  const std::string before = exported(*engine);

  env.BlockSyncs("*/wal/wal-*.log");
  absl::Status written = absl::UnknownError("not finished");
  std::atomic<bool> finished{false};
  std::thread writer([&] {
    written = adapt(Batch(rng, 5, kDim, 1));
    finished = true;
  });
  ASSERT_TRUE(env.WaitForBlockedSync(absl::Seconds(30)));
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(exported(*engine), before) << "a reader saw a write whose record is not durable";
    EXPECT_FALSE(finished.load());
  }
  env.ReleaseSyncs();
  writer.join();
  ASSERT_TRUE(written.ok()) << written;
  const std::string after = exported(*engine);
  EXPECT_NE(after, before);

  engine.reset();  // no checkpoint on the way down: recovery replays the log
  engine = start(nullptr);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(exported(*engine), after);
  engine.reset();
  std::filesystem::remove_all(dir);
}

// With a data directory: after a checkpoint and a restart the store starts cold (GetStore and
// ListStores describe it without loading it), and the first call that needs it loads it back
// bit for bit: the same predictions, the same export, the same description. Under a memory
// budget smaller than the store it is evicted whenever idle, and each load is exact too.
TYPED_TEST_P(StoreContract, AStoredOrEvictedStoreLoadsBitForBit) {
  const std::string dir = ::testing::TempDir() + "/contract-cold-" +
                          std::to_string(std::random_device()()) + "-" + TypeParam::kKind;
  std::filesystem::remove_all(dir);
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_data_dir(dir);
  config.set_compile_threads(1);
  std::unique_ptr<Engine> engine;
  auto start = [&] {
    engine.reset();
    absl::StatusOr<std::unique_ptr<Engine>> created =
        Engine::Create(config, this->backend(), /*metrics=*/nullptr);
    ASSERT_TRUE(created.ok()) << created.status();
    engine = *std::move(created);
  };
  start();
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("s");
  *create.mutable_spec() = this->Spec();
  ASSERT_TRUE(engine->CreateStore(create).ok());
  std::mt19937_64 rng(7);
  {
    const google::protobuf::RepeatedPtrField<adapt::v1::Example> examples =
        Examples(Batch(rng, 16));
    std::unique_ptr<WriteSession> session = engine->StartWrite(TxnKind::kAdapt);
    ASSERT_TRUE(session->Add("t", "s", examples).ok());
    ASSERT_TRUE(session->Finish().ok());
  }
  {
    adapt::v1::CompileRequest request;
    request.set_tenant("t");
    request.set_store("s");
    absl::Notification done;
    engine->Compile(request, [&](absl::StatusOr<adapt::v1::CompileResponse>) { done.Notify(); });
    done.WaitForNotification();
  }
  auto info = [&] {
    adapt::v1::GetStoreRequest get;
    get.set_tenant("t");
    get.set_store("s");
    absl::StatusOr<adapt::v1::StoreInfo> got = engine->GetStore(get);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *got : adapt::v1::StoreInfo();
  };
  auto comparable = [](adapt::v1::StoreInfo i) {
    i.clear_memory_bytes();  // what is resident, which the tier decides
    i.clear_tier();
    ClearTimings(&i);
    return i.DebugString();
  };
  auto predict = [&] {
    adapt::v1::PredictRequest request;
    request.set_tenant("t");
    request.set_store("s");
    request.set_top_k(3);
    const std::vector<float> probes = Probes(4);
    for (int i = 0; i < 4; ++i) {
      adapt::v1::FloatVector* v = request.add_inputs()->mutable_vector();
      for (int64_t j = 0; j < kDim; ++j) v->add_values(probes[i * kDim + j]);
    }
    absl::StatusOr<adapt::v1::PredictResponse> r = engine->Predict(request);
    return r.ok() ? r->DebugString() : std::string(r.status().ToString());
  };
  auto exported = [&] {
    adapt::v1::ExportStoreRequest request;
    request.set_tenant("t");
    request.set_store("s");
    absl::StatusOr<std::string> file = engine->Export(request);
    return file.ok() ? *file : std::string(file.status().ToString());
  };
  const std::string described = comparable(info());
  const std::string predicted = predict();
  const std::string file = exported();
  ASSERT_TRUE(engine->Flush().ok());

  start();
  EXPECT_EQ(info().tier(), adapt::v1::TIER_COLD);
  EXPECT_EQ(comparable(info()), described);
  adapt::v1::ListStoresRequest list;
  list.set_tenant("t");
  absl::StatusOr<adapt::v1::ListStoresResponse> listed = engine->ListStores(list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->stores_size(), 1);
  EXPECT_EQ(listed->stores(0).tier(), adapt::v1::TIER_COLD);
  EXPECT_EQ(info().tier(), adapt::v1::TIER_COLD);  // listing loaded nothing

  // Loaded whole (an export needs all of it), the store answers bit for bit.
  EXPECT_EQ(exported(), file);
  EXPECT_EQ(info().tier(), adapt::v1::TIER_HOT);
  EXPECT_EQ(predict(), predicted);
  EXPECT_EQ(comparable(info()), described);

  // A read of a cold store may load only its read-out (the warm tier, for kinds that have
  // one): the same labels, the scores up to float rounding.
  const auto same_answers = [&](const std::string& where) {
    const std::string answer = predict();
    if (answer == predicted) return;
    adapt::v1::PredictResponse got, want;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(answer, &got)) << where << answer;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(predicted, &want)) << where;
    EXPECT_EQ(got.version(), want.version()) << where;
    ASSERT_EQ(got.predictions_size(), want.predictions_size()) << where;
    for (int i = 0; i < got.predictions_size(); ++i) {
      const adapt::v1::Prediction &g = got.predictions(i), &w = want.predictions(i);
      ASSERT_EQ(g.labels_size(), w.labels_size()) << where;
      for (int k = 0; k < g.labels_size(); ++k) {
        EXPECT_EQ(g.labels(k).label(), w.labels(k).label()) << where << " row " << i;
        EXPECT_NEAR(g.labels(k).score(), w.labels(k).score(),
                    1e-5f * (1.0f + std::abs(w.labels(k).score())))
            << where;
      }
      ASSERT_EQ(g.vector_size(), w.vector_size()) << where;
      for (int k = 0; k < g.vector_size(); ++k) {
        EXPECT_NEAR(g.vector(k), w.vector(k), 1e-5f * (1.0f + std::abs(w.vector(k)))) << where;
      }
    }
  };
  start();
  same_answers("read from cold");
  EXPECT_NE(info().tier(), adapt::v1::TIER_COLD);

  config.set_memory_budget_bytes(1);
  start();
  for (int round = 0; round < 2; ++round) {
    same_answers(absl::StrCat("round ", round));
    // Bounded wait for the residency thread to evict the idle store.
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (info().tier() != adapt::v1::TIER_COLD && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_EQ(info().tier(), adapt::v1::TIER_COLD) << "round " << round;
    EXPECT_EQ(comparable(info()), described) << "round " << round;
  }
  EXPECT_EQ(exported(), file);
  engine.reset();
  std::filesystem::remove_all(dir);
}

REGISTER_TYPED_TEST_SUITE_P(StoreContract, RefusedCallsLeaveTheStoreByteIdentical,
                            ACommitAppliesAllItsExamplesOrNone, SnapshotRoundTripIsExact,
                            ReadersNeverSeeATornVersion, ExportAndImportReproduceTheStore,
                            AnAcknowledgedWriteIsNeverVisibleBeforeItIsDurable,
                            AStoredOrEvictedStoreLoadsBitForBit);

}  // namespace adaptd::contract

#endif  // ADAPTD_SERVER_STORES_STORE_CONTRACT_H_
