// S3ObjectStore against a real SeaweedFS (one server for the suite, each test under its own
// prefix).
#include "server/objstore/s3_object_store.h"

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"
#include "server/objstore/testing/seaweedfs.h"

namespace adaptd_objstore_test {
namespace {

using ::adaptd::S3Options;
using ::adaptd::testing_util::SeaweedFs;
using ::adaptd::testing_util::StartsWithField;
using Store = ::adaptd::S3ObjectStore;

constexpr char kBucket[] = "adaptd-test";
constexpr char kWrongSecret[] = "not-the-secret-4f1d9c";

std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string bytes(size, '\0');
  for (char& byte : bytes) byte = static_cast<char>(gen());
  return bytes;
}

class S3ObjectStore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = SeaweedFs::Create();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
    credentials_ = ::testing::TempDir() + "/s3_object_store_test.credentials";
    std::ofstream(credentials_) << "[adaptd]\naws_access_key_id = " << server_->access_key()
                                << "\naws_secret_access_key = " << server_->secret_key()
                                << "\n\n[wrong]\naws_access_key_id = " << server_->access_key()
                                << "\naws_secret_access_key = " << kWrongSecret << "\n";
    auto admin = Store::OpenUnchecked(Options("s3://adaptd-test"));
    ASSERT_TRUE(admin.ok()) << admin.status();
    const absl::Status created = (*admin)->CreateBucket();
    ASSERT_TRUE(created.ok()) << created;
    const absl::Status again = (*admin)->CreateBucket();
    ASSERT_TRUE(again.ok()) << "a bucket already owned is no error: " << again;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static S3Options Options(std::string url, std::string profile = "adaptd") {
    S3Options options;
    options.url = std::move(url);
    options.endpoint = server_->endpoint();
    options.credentials_file = credentials_;
    options.profile = std::move(profile);
    options.timeout = absl::Seconds(20);
    return options;
  }
  // A store under its own prefix of the suite's bucket.
  static std::unique_ptr<Store> OpenAt(const std::string& prefix, int list_page_size = 1000) {
    S3Options options = Options(std::string("s3://") + kBucket + "/" + prefix);
    options.list_page_size = list_page_size;
    auto store = Store::Open(options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  static SeaweedFs* server_;
  static std::string credentials_;
};

SeaweedFs* S3ObjectStore::server_ = nullptr;
std::string S3ObjectStore::credentials_;

TEST_F(S3ObjectStore, RoundTripsEmptySmallAndLargeObjects) {
  auto store = OpenAt("roundtrip");
  ASSERT_NE(store, nullptr);
  const std::string small("bin\0ary\xff\x80\r\n", 11);
  const std::string large = RandomBytes(20 << 20, 7);
  ASSERT_TRUE(store->Put("empty", "").ok());
  ASSERT_TRUE(store->Put("small", small).ok());
  ASSERT_TRUE(store->Put("large", large).ok());
  auto empty = store->Get("empty");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, "");
  EXPECT_EQ(store->Get("small").value_or("?"), small);
  auto read = store->Get("large");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(*read == large) << "20 MiB differ";
  ASSERT_TRUE(store->Put("small", "replaced").ok());
  EXPECT_EQ(store->Get("small").value_or("?"), "replaced");
  auto listed = store->List("");
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[1].key, "large");
  EXPECT_EQ((*listed)[1].size, large.size());
  EXPECT_LT(absl::Now() - (*listed)[1].modified, absl::Minutes(10));
}

TEST_F(S3ObjectStore, MissingKeyIsNotFoundNamingIt) {
  auto store = OpenAt("missing");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Describe("no/such"), "s3://adaptd-test/missing/no/such");
  auto got = store->Get("no/such");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(StartsWithField(got.status().message(), "s3://adaptd-test/missing/no/such"))
      << got.status();
  EXPECT_NE(got.status().message().find("NoSuchKey"), std::string::npos) << got.status();
}

TEST_F(S3ObjectStore, DeletesAndDeleteOfAMissingKeyIsOk) {
  auto store = OpenAt("delete");
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Delete("never-written").ok());
  ASSERT_TRUE(store->Put("k", "v").ok());
  ASSERT_TRUE(store->Delete("k").ok());
  EXPECT_EQ(store->Get("k").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store->Delete("k").ok());
}

TEST_F(S3ObjectStore, ListsAPrefixOverManyPagesInKeyOrder) {
  auto store = OpenAt("paged", /*list_page_size=*/3);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  for (int i = 0; i < 11; ++i) keys.push_back("log/" + std::to_string(100 + i));
  keys.push_back("log/sub/inner");
  keys.push_back("log-other");  // '-' sorts before '/'
  for (const std::string& key : keys) ASSERT_TRUE(store->Put(key, key).ok()) << key;
  ASSERT_TRUE(store->Put("snap/1", "x").ok());
  auto other = OpenAt("paged-not");  // shares "paged" as a string prefix, not as a folder
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->Put("log/999", "x").ok());

  auto log = store->List("log/");
  ASSERT_TRUE(log.ok()) << log.status();
  std::vector<std::string> listed;
  for (const auto& object : *log) listed.push_back(object.key);
  std::vector<std::string> expected(keys.begin(), keys.end() - 1);
  EXPECT_EQ(listed, expected);
  EXPECT_EQ((*log)[0].size, 7u);

  auto all = store->List("");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), keys.size() + 1);
  EXPECT_EQ(all->front().key, "log-other");
  EXPECT_EQ(all->back().key, "snap/1");
  EXPECT_TRUE(store->List("nothing/")->empty());
}

TEST_F(S3ObjectStore, KeysWithAwkwardCharacters) {
  auto store = OpenAt("awk ward+prefix~");
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> keys = {
      "a b/c d",   "dir/sub/file.bin", "plus+sign",           "tilde~x",
      "amp&eq=q?", "percent%20lit",    "x/\xC3\xA9t\xC3\xA9", "star*(paren)'"};
  for (const std::string& key : keys) {
    ASSERT_TRUE(store->Put(key, "value of " + key).ok()) << key;
  }
  for (const std::string& key : keys) {
    EXPECT_EQ(store->Get(key).value_or("?"), "value of " + key) << key;
  }
  auto listed = store->List("");
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> names;
  for (const auto& object : *listed) names.push_back(object.key);
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(names, sorted);
  auto plus = store->List("plus+");
  ASSERT_TRUE(plus.ok()) << plus.status();
  ASSERT_EQ(plus->size(), 1u);
  for (const std::string& key : keys) EXPECT_TRUE(store->Delete(key).ok()) << key;
  EXPECT_TRUE(store->List("")->empty());
}

TEST_F(S3ObjectStore, WrongSecretIsPermissionDeniedAndNeverQuoted) {
  auto opened = Store::Open(Options("s3://adaptd-test/denied", "wrong"));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kPermissionDenied) << opened.status();
  EXPECT_EQ(opened.status().ToString().find(kWrongSecret), std::string::npos);

  auto store = Store::OpenUnchecked(Options("s3://adaptd-test/denied", "wrong"));
  ASSERT_TRUE(store.ok()) << store.status();
  for (const absl::Status& status :
       {(*store)->Put("k", "v"), (*store)->Get("k").status(), (*store)->List("").status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
    EXPECT_TRUE(StartsWithField(status.message(), (*store)->Describe("k")) ||
                StartsWithField(status.message(), (*store)->Describe("")))
        << status;
    EXPECT_EQ(status.ToString().find(kWrongSecret), std::string::npos) << status;
  }
}

TEST_F(S3ObjectStore, ReadsTheProfileAskedForAndTheEnvironment) {
  auto store = OpenAt("profiles");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("k", "from the file").ok());
  S3Options from_env = Options("s3://adaptd-test/profiles");
  from_env.credentials_file.clear();
  setenv("AWS_ACCESS_KEY_ID", server_->access_key().c_str(), 1);
  setenv("AWS_SECRET_ACCESS_KEY", server_->secret_key().c_str(), 1);
  unsetenv("AWS_SESSION_TOKEN");
  auto env_store = Store::Open(from_env);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  ASSERT_TRUE(env_store.ok()) << env_store.status();
  EXPECT_EQ((*env_store)->Get("k").value_or("?"), "from the file");
}

TEST_F(S3ObjectStore, MissingBucketIsNotFoundNamingIt) {
  auto opened = Store::Open(Options("s3://no-such-bucket/p"));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kNotFound) << opened.status();
  EXPECT_TRUE(StartsWithField(opened.status().message(), "s3://no-such-bucket")) << opened.status();
}

TEST_F(S3ObjectStore, BadOptionsNameTheField) {
  const auto field_of = [](S3Options options) {
    auto opened = Store::Open(std::move(options));
    EXPECT_EQ(opened.status().code(), absl::StatusCode::kInvalidArgument) << opened.status();
    const std::string message(opened.status().message());
    return message.substr(0, message.find(':'));
  };
  S3Options options = Options("http://adaptd-test/p");
  EXPECT_EQ(field_of(options), "url");
  options = Options("s3://Adaptd_Test");
  EXPECT_EQ(field_of(options), "url");
  options = Options("s3://adaptd-test");
  options.endpoint = "ftp://127.0.0.1:1";
  EXPECT_EQ(field_of(options), "endpoint");
  options = Options("s3://adaptd-test");
  options.endpoint = "http://127.0.0.1:70000";
  EXPECT_EQ(field_of(options), "endpoint");
  options = Options("s3://adaptd-test");
  options.timeout = absl::ZeroDuration();
  EXPECT_EQ(field_of(options), "timeout");
  options = Options("s3://adaptd-test");
  options.attempts = 0;
  EXPECT_EQ(field_of(options), "attempts");
  options = Options("s3://adaptd-test");
  options.list_page_size = 1001;
  EXPECT_EQ(field_of(options), "list_page_size");
  options = Options("s3://adaptd-test", "absent");
  EXPECT_EQ(field_of(options), "profile");
  options = Options("s3://adaptd-test");
  options.credentials_file = ::testing::TempDir() + "/no-such-credentials";
  EXPECT_EQ(field_of(options), "credentials_file");
  options = Options("s3://adaptd-test");
  options.credentials_file.clear();
  unsetenv("AWS_ACCESS_KEY_ID");
  EXPECT_EQ(field_of(options), "AWS_ACCESS_KEY_ID");
  auto store = OpenAt("keys");
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(StartsWithField(store->Put("", "x").message(), "key"));
  EXPECT_TRUE(StartsWithField(store->Get(std::string(1100, 'k')).status().message(), "key"));
}

// Last in the suite's order: it stops the server (and starts it again on the same data).
TEST_F(S3ObjectStore, StoppedServerIsUnavailableThenServesAgain) {
  S3Options options = Options("s3://adaptd-test/outage");
  options.attempts = 3;
  options.timeout = absl::Seconds(2);
  auto opened = Store::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  ASSERT_TRUE(store.Put("before", "kept").ok());

  server_->Stop();  // SIGTERM; SeaweedFS 4.48 takes about 15 s to exit
  const absl::Time begin = absl::Now();
  auto got = store.Get("before");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable) << got.status();
  EXPECT_TRUE(StartsWithField(got.status().message(), store.Describe("before"))) << got.status();
  EXPECT_NE(got.status().message().find("after 3 attempt(s)"), std::string::npos) << got.status();
  EXPECT_LT(absl::Now() - begin, absl::Seconds(15));
  const absl::Status put = store.Put("during", "lost");
  EXPECT_EQ(put.code(), absl::StatusCode::kUnavailable) << put;
  EXPECT_EQ(Store::Open(options).status().code(), absl::StatusCode::kUnavailable);

  ASSERT_TRUE(server_->Start().ok());
  std::cout << "SeaweedFS answered again after " << server_->last_start_time() << "\n";
  auto before = store.Get("before");
  EXPECT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before.value_or("?"), "kept");
  EXPECT_TRUE(store.Put("after", "written").ok());
  EXPECT_EQ(store.Get("after").value_or("?"), "written");
  EXPECT_EQ(store.Get("during").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace adaptd_objstore_test
