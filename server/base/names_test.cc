#include "server/base/names.h"

#include <string>

#include "gtest/gtest.h"

namespace adaptd {
namespace {

TEST(NamesTest, AcceptsValidNames) {
  for (const char* name : {"a", "tenant-1", "Store_2.v3", "0abc"}) {
    EXPECT_TRUE(ValidateName("store", name).ok()) << name;
  }
  EXPECT_TRUE(ValidateName("store", std::string(kMaxNameLength, 'x')).ok());
}

TEST(NamesTest, RejectsInvalidNamesNamingTheField) {
  for (const char* name : {"", "-lead", ".hidden", "a/b", "sp ace", "ünï"}) {
    const absl::Status status = ValidateName("tenant", name);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(status.message().substr(0, 7), "tenant:") << status.message();
  }
  EXPECT_FALSE(ValidateName("store", std::string(kMaxNameLength + 1, 'x')).ok());
}

TEST(ParseBaseNameTest, TenantDefaultsToTheCreator) {
  auto own = ParseBaseName("acme", "shared");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->first, "acme");
  EXPECT_EQ(own->second, "shared");
  auto other = ParseBaseName("acme", "curated/support-v2");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->first, "curated");
  EXPECT_EQ(other->second, "support-v2");
  for (const char* bad : {"", "/x", "x/", "a/b/c", "-x", "a/ b"}) {
    auto parsed = ParseBaseName("acme", bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message().substr(0, 10), "spec.base:") << parsed.status();
  }
}

}  // namespace
}  // namespace adaptd
