#include "server/core/names.h"

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

}  // namespace
}  // namespace adaptd
