// Engine::ListStores paging: page sizes and their limits, page tokens (resuming, foreign and
// malformed ones), and listings that stay exact while stores are created and deleted between
// pages.
#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "server/config/config.h"
#include "server/core/engine.h"

namespace adaptd {
namespace {

constexpr char kTenant[] = "acme";

class EngineListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    adapt::v1::ServerConfig config = DefaultConfig();
    config.set_data_dir(::testing::TempDir() + "/engine-list-" +
                        std::to_string(std::random_device()()));
    // The log is kept (creates go through the same reserve/publish path as in production)
    // but not fsynced: these tests create a thousand stores.
    config.set_log_fsync(false);
    auto engine = Engine::Create(config, backend_.get(), nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  void Create(const std::string& tenant, const std::string& store) {
    adapt::v1::CreateStoreRequest request;
    request.set_tenant(tenant);
    request.set_store(store);
    request.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
    request.mutable_spec()->set_dim(4);
    request.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    auto info = engine_->CreateStore(request);
    ASSERT_TRUE(info.ok()) << tenant << "/" << store << ": " << info.status();
  }

  void Delete(const std::string& tenant, const std::string& store) {
    adapt::v1::DeleteStoreRequest request;
    request.set_tenant(tenant);
    request.set_store(store);
    ASSERT_TRUE(engine_->DeleteStore(request).ok()) << tenant << "/" << store;
  }

  // Creates s0000, s0001, ... (zero-padded, so name order is number order).
  void CreateNumbered(int count) {
    for (int i = 0; i < count; ++i) Create(kTenant, Numbered(i));
  }
  static std::string Numbered(int i) { return absl::StrFormat("s%04d", i); }

  absl::StatusOr<adapt::v1::ListStoresResponse> Page(const std::string& tenant, uint32_t size,
                                                     const std::string& token = "") {
    adapt::v1::ListStoresRequest request;
    request.set_tenant(tenant);
    request.set_page_size(size);
    request.set_page_token(token);
    return engine_->ListStores(request);
  }

  // Store names of every page of size `size`, and the number of pages; fails the test on an
  // error or a page that breaks the contract (a name out of order, a store of another tenant).
  std::vector<std::string> ListAll(const std::string& tenant, uint32_t size, int* pages) {
    std::vector<std::string> names;
    std::string token;
    *pages = 0;
    do {
      auto page = Page(tenant, size, token);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      ++*pages;
      for (const auto& info : page->stores()) {
        EXPECT_EQ(info.tenant(), tenant);
        if (!names.empty()) {
          EXPECT_LT(names.back(), info.store()) << "out of name order";
        }
        names.push_back(info.store());
      }
      token = page->next_page_token();
    } while (!token.empty() && *pages < 10000);
    return names;
  }

  // With stores s0000..s{full}: a page of `size` holds the first `full` stores and its token
  // leads to a last page holding only s{full}.
  void ExpectFullPageThenTheLastStore(uint32_t size, int full) {
    auto first = Page(kTenant, size);
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_EQ(first->stores_size(), full);
    EXPECT_EQ(first->stores(full - 1).store(), Numbered(full - 1));
    ASSERT_FALSE(first->next_page_token().empty());
    auto last = Page(kTenant, size, first->next_page_token());
    ASSERT_TRUE(last.ok()) << last.status();
    ASSERT_EQ(last->stores_size(), 1);
    EXPECT_EQ(last->stores(0).store(), Numbered(full));
    EXPECT_TRUE(last->next_page_token().empty());
  }

  void ExpectInvalid(const absl::StatusOr<adapt::v1::ListStoresResponse>& page,
                     absl::string_view field) {
    ASSERT_FALSE(page.ok());
    EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument) << page.status();
    EXPECT_TRUE(absl::StartsWith(page.status().message(), absl::StrCat(field, ": ")))
        << page.status();
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineListTest, PagesThroughEveryStoreOnceInNameOrder) {
  std::vector<std::string> names;
  for (int i = 0; i < 23; ++i) names.push_back(Numbered(i));
  std::vector<std::string> shuffled = names;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  for (const auto& name : shuffled) Create(kTenant, name);
  Create("other", "s0005");  // another tenant's store never shows up

  auto first = Page(kTenant, 5);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->stores_size(), 5);
  EXPECT_FALSE(first->next_page_token().empty());
  int pages = 0;
  EXPECT_EQ(ListAll(kTenant, 5, &pages), names);
  EXPECT_EQ(pages, 5);  // 5 + 5 + 5 + 5 + 3
}

TEST_F(EngineListTest, LastPageHasAnEmptyTokenEvenWhenFull) {
  CreateNumbered(6);
  auto first = Page(kTenant, 3);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_FALSE(first->next_page_token().empty());
  auto second = Page(kTenant, 3, first->next_page_token());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->stores_size(), 3);
  EXPECT_EQ(second->stores(2).store(), Numbered(5));
  EXPECT_TRUE(second->next_page_token().empty()) << "no empty page after a full last one";
}

TEST_F(EngineListTest, UnknownTenantIsOneEmptyPage) {
  auto page = Page("nobody", 0);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->stores_size(), 0);
  EXPECT_TRUE(page->next_page_token().empty());
}

TEST_F(EngineListTest, PageSizeZeroMeansOneHundred) {
  CreateNumbered(101);
  ExpectFullPageThenTheLastStore(0, 100);
}

TEST_F(EngineListTest, PageSizeOneReturnsOneStoreAPage) {
  CreateNumbered(4);
  int pages = 0;
  EXPECT_EQ(ListAll(kTenant, 1, &pages),
            (std::vector<std::string>{Numbered(0), Numbered(1), Numbered(2), Numbered(3)}));
  EXPECT_EQ(pages, 4);
}

TEST_F(EngineListTest, PageSizeUpToOneThousandAndNoMore) {
  CreateNumbered(1001);
  ExpectFullPageThenTheLastStore(1000, 1000);

  auto over = Page(kTenant, 1001);
  ExpectInvalid(over, "page_size");
  EXPECT_TRUE(absl::StrContains(over.status().message(), "1000")) << over.status();
  auto first = Page(kTenant, 1);
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectInvalid(Page(kTenant, 1001, first->next_page_token()), "page_size");
}

TEST_F(EngineListTest, TokenResumesWhateverThePageSize) {
  CreateNumbered(10);
  auto first = Page(kTenant, 2);
  ASSERT_TRUE(first.ok()) << first.status();
  auto rest = Page(kTenant, 1000, first->next_page_token());
  ASSERT_TRUE(rest.ok()) << rest.status();
  ASSERT_EQ(rest->stores_size(), 8);
  EXPECT_EQ(rest->stores(0).store(), Numbered(2));
}

TEST_F(EngineListTest, TokenOfAnotherTenantIsRefused) {
  CreateNumbered(3);
  Create("other", "s0000");
  Create("other", "s0001");
  auto theirs = Page("other", 1);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  ASSERT_FALSE(theirs->next_page_token().empty());
  auto mixed = Page(kTenant, 1, theirs->next_page_token());
  ExpectInvalid(mixed, "page_token");
  EXPECT_TRUE(absl::StrContains(mixed.status().message(), "another tenant")) << mixed.status();
}

TEST_F(EngineListTest, MalformedTokensAreRefused) {
  CreateNumbered(3);
  const std::string garbage[] = {
      "not base64!",
      absl::WebSafeBase64Escape("ls2/acme/s0000"),     // unknown version
      absl::WebSafeBase64Escape("ls1/acme"),           // no resume point
      absl::WebSafeBase64Escape("ls1/acme/s0000/x"),   // a part too many
      absl::WebSafeBase64Escape("ls1/acme/"),          // an empty name
      absl::WebSafeBase64Escape("ls1/acme/bad name"),  // not a store name
      absl::WebSafeBase64Escape(std::string("ls1/acme/s\0", 11)),
  };
  for (const std::string& token : garbage) {
    SCOPED_TRACE(absl::CHexEscape(token));
    ExpectInvalid(Page(kTenant, 1, token), "page_token");
  }
}

TEST_F(EngineListTest, ChangesBetweenPagesNeitherRepeatNorSkipStores) {
  CreateNumbered(20);
  auto first = Page(kTenant, 5);  // s0000..s0004
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->stores(4).store(), Numbered(4));
  Delete(kTenant, Numbered(4));  // the resume point itself
  Delete(kTenant, Numbered(2));  // listed already
  Delete(kTenant, Numbered(7));  // not listed yet
  Create(kTenant, "s0001a");     // before the resume point: this listing misses it
  Create(kTenant, "s0009a");     // after it: listed
  std::vector<std::string> names;
  for (const auto& info : first->stores()) names.push_back(info.store());
  std::string token = first->next_page_token();
  while (!token.empty()) {
    auto page = Page(kTenant, 5, token);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& info : page->stores()) names.push_back(info.store());
    token = page->next_page_token();
  }
  std::vector<std::string> expected;
  for (int i = 0; i < 20; ++i) {
    if (i != 7) expected.push_back(Numbered(i));
    if (i == 9) expected.push_back("s0009a");
  }
  EXPECT_EQ(names, expected);
}

// Random creates and deletes between pages: every store that existed throughout is listed, no
// store twice, every name in order, and nothing that never existed.
TEST_F(EngineListTest, RandomChangesBetweenPagesKeepTheContract) {
  std::mt19937 rng(20240607);
  std::set<std::string> live;
  for (int i = 0; i < 300; i += 2) {
    Create(kTenant, Numbered(i));
    live.insert(Numbered(i));
  }
  std::set<std::string> throughout = live, ever = live;
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    auto page = Page(kTenant, 1 + rng() % 9, token);
    ASSERT_TRUE(page.ok()) << page.status();
    ++pages;
    for (const auto& info : page->stores()) names.push_back(info.store());
    token = page->next_page_token();
    for (int change = 0; change < 3; ++change) {
      const std::string name = Numbered(rng() % 300);
      if (live.erase(name) != 0) {
        Delete(kTenant, name);
        throughout.erase(name);
      } else {
        Create(kTenant, name);
        live.insert(name);
        ever.insert(name);
      }
    }
  } while (!token.empty());
  EXPECT_GT(pages, 20);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "a store twice";
  const std::set<std::string> listed(names.begin(), names.end());
  for (const auto& name : throughout) EXPECT_TRUE(listed.count(name)) << name << " skipped";
  for (const auto& name : listed) EXPECT_TRUE(ever.count(name)) << name << " never existed";
}

}  // namespace
}  // namespace adaptd
