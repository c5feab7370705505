#include "client/cpp/routes.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace adaptd {

int StoreShard(absl::string_view tenant, absl::string_view store, int shards) {
  // FNV-1a, 64 bits: offset basis 0xcbf29ce484222325, prime 0x100000001b3; each byte is
  // xor-ed in, then the state multiplied by the prime.
  uint64_t hash = 0xcbf29ce484222325ull;
  auto add = [&hash](unsigned char byte) { hash = (hash ^ byte) * 0x100000001b3ull; };
  for (unsigned char byte : tenant) add(byte);
  add('/');
  for (unsigned char byte : store) add(byte);
  return static_cast<int>(hash % static_cast<uint64_t>(shards));
}

absl::StatusOr<HolderHint> ParseHolderHint(absl::string_view header, int shards) {
  const std::vector<absl::string_view> parts = absl::StrSplit(header, ' ', absl::SkipEmpty());
  auto bad = [header](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(kHolderHeader, " \"", header, "\": ", what,
                                                   " (expected \"SSSS NAME HOST:PORT REVISION\")"));
  };
  if (parts.size() != 4) return bad(absl::StrCat(parts.size(), " parts, not 4"));
  HolderHint hint;
  if (parts[0].size() != 4 || !absl::SimpleHexAtoi(parts[0], &hint.shard) || hint.shard < 0 ||
      hint.shard >= shards) {
    return bad(absl::StrCat("the shard \"", parts[0], "\" is not 4 hex digits below ", shards));
  }
  hint.name = std::string(parts[1]);
  if (parts[2].find(':') == absl::string_view::npos) {
    return bad(absl::StrCat("the address \"", parts[2], "\" is not HOST:PORT"));
  }
  hint.address = std::string(parts[2]);
  if (!absl::SimpleAtoi(parts[3], &hint.revision) || hint.revision <= 0) {
    return bad(absl::StrCat("the revision \"", parts[3], "\" is not a positive integer"));
  }
  return hint;
}

absl::StatusOr<RouteTable> RouteTable::Parse(const adapt::v1::ClusterRoutesResponse& routes) {
  if (routes.holders_size() == 0) {
    return absl::InvalidArgumentError("ClusterRoutes: holders is empty (no shards)");
  }
  RouteTable table;
  for (int i = 0; i < routes.members_size(); ++i) {
    const adapt::v1::RouteMember& member = routes.members(i);
    if (member.name().empty() || member.address().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("ClusterRoutes: members[", i, "] has no ",
                                                     member.name().empty() ? "name" : "address"));
    }
    table.addresses_.push_back(member.address());
  }
  table.holders_.reserve(routes.holders_size());
  for (int shard = 0; shard < routes.holders_size(); ++shard) {
    const int holder = routes.holders(shard);
    if (holder < -1 || holder >= routes.members_size()) {
      return absl::InvalidArgumentError(absl::StrCat("ClusterRoutes: holders[", shard, "] is ",
                                                     holder, ", not -1 or below ",
                                                     routes.members_size(), " (the members)"));
    }
    table.holders_.push_back(holder);
  }
  table.learned_.assign(table.holders_.size(), 0);
  table.revision_ = routes.revision();
  return table;
}

const std::string& RouteTable::HolderAddress(int shard) const {
  static const std::string* const kNone = new std::string();
  if (shard < 0 || shard >= shards() || holders_[shard] < 0) return *kNone;
  return addresses_[holders_[shard]];
}

int RouteTable::AddressIndex(const std::string& address) {
  auto at = std::find(addresses_.begin(), addresses_.end(), address);
  if (at != addresses_.end()) return static_cast<int>(at - addresses_.begin());
  addresses_.push_back(address);
  return static_cast<int>(addresses_.size()) - 1;
}

bool RouteTable::Apply(const HolderHint& hint) {
  if (hint.shard < 0 || hint.shard >= shards()) return false;
  if (hint.revision <= std::max(revision_, learned_[hint.shard])) return false;
  learned_[hint.shard] = hint.revision;
  if (HolderAddress(hint.shard) == hint.address) return false;
  holders_[hint.shard] = AddressIndex(hint.address);
  return true;
}

}  // namespace adaptd
