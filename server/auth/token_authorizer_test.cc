#include "server/auth/token_authorizer.h"

#include "gtest/gtest.h"
#include "server/auth/sha256.h"

namespace adaptd {
namespace {

google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig> Tokens() {
  google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig> tokens;
  auto* a = tokens.Add();
  a->set_sha256(Sha256Hex("alpha-secret"));
  a->add_tenants("alpha");
  auto* b = tokens.Add();
  b->set_sha256(Sha256Hex("beta-secret"));
  b->add_tenants("beta");
  b->add_tenants("shared");
  auto* admin = tokens.Add();
  admin->set_sha256(Sha256Hex("root-secret"));
  admin->set_admin(true);
  return tokens;
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex("abc"));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'g')));
}

TEST(TokenAuthorizer, OffWithoutTokens) {
  auto auth = TokenAuthorizer::Create({});
  ASSERT_TRUE(auth.ok());
  EXPECT_FALSE(auth->enabled());
  EXPECT_TRUE(auth->Authorize(std::nullopt, "anyone").ok());
}

TEST(TokenAuthorizer, TenantsAndAdmin) {
  auto auth = TokenAuthorizer::Create(Tokens());
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_TRUE(auth->Authorize("Bearer alpha-secret", "alpha").ok());
  EXPECT_TRUE(auth->Authorize("bearer  beta-secret ", "shared").ok());
  EXPECT_EQ(auth->Authorize("Bearer alpha-secret", "beta").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(auth->Authorize("Bearer beta-secret", "alpha").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(auth->Authorize("Bearer root-secret", "alpha").ok());
  EXPECT_TRUE(auth->Authorize("Bearer root-secret", "zeta").ok());
}

TEST(TokenAuthorizer, MissingMalformedOrUnknownIsUnauthenticated) {
  auto auth = TokenAuthorizer::Create(Tokens());
  ASSERT_TRUE(auth.ok());
  for (const char* header : {"", "Bearer", "Bearer ", "Basic alpha-secret", "alpha-secret",
                             "Bearer alpha-secre", "Bearer alpha-secretX"}) {
    const absl::Status status = auth->Authorize(header, "alpha");
    EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << header;
    // The message never echoes what the caller sent.
    EXPECT_EQ(std::string(status.message()).find("alpha-secre"), std::string::npos);
  }
  EXPECT_EQ(auth->Authorize(std::nullopt, "alpha").code(), absl::StatusCode::kUnauthenticated);
}

TEST(TokenAuthorizer, RejectsBadConfig) {
  auto tokens = Tokens();
  tokens[0].set_sha256("not-a-hash");
  auto bad_hash = TokenAuthorizer::Create(tokens);
  EXPECT_EQ(bad_hash.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_hash.status().message(),
            "tokens[0].sha256: must be 64 hex digits (make one with `adaptctl hash-token`)");

  tokens = Tokens();
  tokens[1].clear_tenants();
  EXPECT_EQ(TokenAuthorizer::Create(tokens).status().code(), absl::StatusCode::kInvalidArgument);

  tokens = Tokens();
  tokens[2].set_sha256(tokens[0].sha256());
  EXPECT_EQ(TokenAuthorizer::Create(tokens).status().code(), absl::StatusCode::kInvalidArgument);

  // Upper-case hex is the same hash.
  tokens = Tokens();
  std::string upper = tokens[0].sha256();
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  tokens[0].set_sha256(upper);
  auto auth = TokenAuthorizer::Create(tokens);
  ASSERT_TRUE(auth.ok());
  EXPECT_TRUE(auth->Authorize("Bearer alpha-secret", "alpha").ok());
}

}  // namespace
}  // namespace adaptd
