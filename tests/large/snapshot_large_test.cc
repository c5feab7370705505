// A store state past 2 GiB, the most one protobuf holds (big_fwpkm_state.h). It goes through the
// snapshot file (encode, decode, restore: bit for bit), through the journal (a checkpoint into
// the state database, a restart, a load) and through the engine (an import with a data
// directory, a restart without a checkpoint, an export). Label `large`: it needs about 6 GiB of
// memory and 5 GiB of disk, and runs for a minute or two.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/base/binary_format.h"
#include "server/config/config.h"
#include "server/core/engine.h"
#include "server/persistence/journal.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"
#include "tests/large/big_fwpkm_state.h"

namespace adaptd {
namespace {

using large::BigFwpkmSpec;
using large::BigFwpkmStore;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

TEST(SnapshotLargeTest, AStatePastTwoGibCheckpointsAndRestores) {
  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend();
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<Store>> made = BigFwpkmStore(backend.get());
  ASSERT_TRUE(made.ok()) << made.status();
  std::shared_ptr<Store> store = *std::move(made);
  std::fprintf(stderr, "built the store in %.1f s\n", Seconds(start));
  // One protobuf cannot hold it.
  EXPECT_EQ(store->Snapshot().status().code(), absl::StatusCode::kResourceExhausted);

  start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> file = EncodeStoreFile(*store);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_GT(file->size(), uint64_t{1} << 31);
  std::fprintf(stderr, "encoded %zu bytes in %.1f s\n", file->size(), Seconds(start));
  const uint32_t file_crc = Crc32Of(*file);
  const size_t file_size = file->size();

  // Through the file: decode, restore, encode again: the same bytes.
  {
    start = std::chrono::steady_clock::now();
    absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(*file);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    absl::StatusOr<std::unique_ptr<Store>> restored =
        RestoreStore(decoded->header, decoded->arrays, backend.get());
    ASSERT_TRUE(restored.ok()) << restored.status();
    std::fprintf(stderr, "decoded and restored in %.1f s\n", Seconds(start));
    file->clear();
    file->shrink_to_fit();
    absl::StatusOr<std::string> again = EncodeStoreFile(**restored);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->size(), file_size);
    EXPECT_EQ(Crc32Of(*again), file_crc);
  }

  // Through the journal: a checkpoint, a restart, a load.
  std::string exported;  // the loaded store's file, for the engine's import below
  const std::string dir = ::testing::TempDir() + "/adaptd-large-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  JournalOptions options;
  options.data_dir = dir;
  options.snapshot_log_bytes = uint64_t{1} << 30;
  {
    std::vector<RecoveredStore> recovered;
    absl::StatusOr<std::unique_ptr<Journal>> journal =
        Journal::Open(options, backend.get(), &recovered);
    ASSERT_TRUE(journal.ok()) << journal.status();
    start = std::chrono::steady_clock::now();
    ASSERT_TRUE(
        (*journal)
            ->WaitDurable((*journal)->AppendCreate("t", "big", store, BigFwpkmSpec(), false))
            .ok());
    store.reset();  // the journal holds it
    ASSERT_TRUE((*journal)->Checkpoint().ok());
    EXPECT_EQ((*journal)->CheckpointError("t", "big"), "");
    std::fprintf(stderr, "checkpointed in %.1f s\n", Seconds(start));
  }
  {
    std::vector<RecoveredStore> recovered;
    absl::StatusOr<std::unique_ptr<Journal>> journal =
        Journal::Open(options, backend.get(), &recovered);
    ASSERT_TRUE(journal.ok()) << journal.status();
    ASSERT_EQ(recovered.size(), 1u);
    EXPECT_EQ(recovered[0].store, nullptr) << "a stored store starts cold";
    start = std::chrono::steady_clock::now();
    absl::StatusOr<std::shared_ptr<Store>> loaded = (*journal)->Load("t", "big");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    std::fprintf(stderr, "loaded in %.1f s\n", Seconds(start));
    absl::StatusOr<std::string> again = EncodeStoreFile(**loaded);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->size(), file_size);
    EXPECT_EQ(Crc32Of(*again), file_crc);
    exported = *std::move(again);
  }
  std::filesystem::remove_all(dir);

  // Through the engine: an import with a data directory (the log record holds only the spec;
  // the state goes to the state database before the import is acknowledged), a restart with
  // no checkpoint (as after a crash), an export.
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_data_dir(dir + "-engine");
  std::filesystem::remove_all(config.data_dir());
  {
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(config, backend.get(), nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    start = std::chrono::steady_clock::now();
    absl::StatusOr<adapt::v1::StoreInfo> imported = (*engine)->Import("t", "big", exported);
    ASSERT_TRUE(imported.ok()) << imported.status();
    std::fprintf(stderr, "imported in %.1f s\n", Seconds(start));
    EXPECT_EQ(imported->examples(), large::kSlots);
    EXPECT_EQ(imported->checkpoint_error(), "");
    exported.clear();
    exported.shrink_to_fit();
  }
  {
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(config, backend.get(), nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    adapt::v1::ExportStoreRequest request;
    request.set_tenant("t");
    request.set_store("big");
    start = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> again = (*engine)->Export(request);
    ASSERT_TRUE(again.ok()) << again.status();
    std::fprintf(stderr, "restarted, loaded and exported in %.1f s\n", Seconds(start));
    EXPECT_EQ(again->size(), file_size);
    EXPECT_EQ(Crc32Of(*again), file_crc);
  }
  std::filesystem::remove_all(config.data_dir());
}

}  // namespace
}  // namespace adaptd
