#include "server/cluster/membership.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/base/stable_hash.h"

namespace adaptd::cluster {
namespace {

uint64_t Rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t Hash(absl::string_view s) {
  Fnv1a64 h;
  h.Add(s);
  return h.value();
}

// Why `name` is not a DNS label, or empty when it is one.
std::string NameProblem(absl::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > 63) return absl::StrCat("has ", name.size(), " characters (at most 63)");
  for (char c : name) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-')) {
      return absl::StrCat("has '", std::string(1, c), "' (only a-z, 0-9 and '-')");
    }
  }
  if (name.front() == '-' || name.back() == '-') return "starts or ends with '-'";
  return "";
}

// Why `address` is not HOST:PORT, or empty when it is.
std::string AddressProblem(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return "is not HOST:PORT";
  absl::string_view host = address.substr(0, colon);
  if (host.front() == '[' ? host.back() != ']' : host.find(':') != absl::string_view::npos) {
    return "is not HOST:PORT (an IPv6 host goes in brackets)";
  }
  uint32_t port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port == 0 || port > 65535) {
    return "has no port from 1 to 65535";
  }
  return "";
}

}  // namespace

uint64_t RendezvousWeight(absl::string_view member, absl::string_view key) {
  return Fmix64(Hash(member) ^ Rotl64(Hash(key), 17));
}

absl::StatusOr<Membership> Membership::Create(std::string self, std::vector<Member> members) {
  if (members.empty()) {
    return absl::InvalidArgumentError("cluster.members: the list is empty");
  }
  std::set<absl::string_view> names, addresses;
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    if (std::string problem = NameProblem(m.name); !problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.members[", i, "].name: \"", m.name, "\" ", problem));
    }
    if (std::string problem = AddressProblem(m.address); !problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.members[", i, "].address: \"", m.address, "\" ", problem));
    }
    if (!names.insert(m.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.members[", i, "].name: \"", m.name, "\" is listed twice"));
    }
    if (!addresses.insert(m.address).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.members[", i, "].address: \"", m.address, "\" is listed twice"));
    }
  }
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.name < b.name; });
  const auto it =
      std::find_if(members.begin(), members.end(), [&](const Member& m) { return m.name == self; });
  if (it == members.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.self: \"", self, "\" is not among cluster.members"));
  }
  const size_t self_index = static_cast<size_t>(it - members.begin());
  return Membership(std::move(members), self_index, {});
}

Membership::Membership(std::vector<Member> members, size_t self, std::set<std::string> draining)
    : members_(std::move(members)), self_(self) {
  Fnv1a64 fingerprint;
  for (const Member& m : members_) {
    const bool owning = draining.count(m.name) == 0;
    owning_.push_back(owning);
    if (!owning) {
      draining_.insert(m.name);
      continue;
    }
    fingerprint.Add(m.name);
    fingerprint.AddByte('=');
    fingerprint.Add(m.address);
    fingerprint.AddByte(',');
  }
  fingerprint_ = fingerprint.value();
}

absl::StatusOr<Membership> Membership::Draining(const std::set<std::string>& draining) const {
  Membership out(members_, self_, draining);
  if (std::find(out.owning_.begin(), out.owning_.end(), true) == out.owning_.end()) {
    return absl::FailedPreconditionError(
        "every member would be draining: at least one must own the stores");
  }
  return out;
}

const Member* Membership::Find(absl::string_view name) const {
  for (const Member& m : members_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const Member& Membership::OwnerOf(absl::string_view tenant, absl::string_view store) const {
  return OwnerOfKey(absl::StrCat(tenant, "/", store));
}

const Member& Membership::HomeOf(absl::string_view tenant) const { return OwnerOfKey(tenant); }

const Member& Membership::OwnerOfKey(absl::string_view key) const {
  const uint64_t key_hash = Rotl64(Hash(key), 17);
  size_t best = members_.size();
  uint64_t best_weight = 0;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!owning_[i]) continue;
    // Members are sorted by name, so on equal weights the first (smaller name) stays.
    const uint64_t w = Fmix64(Hash(members_[i].name) ^ key_hash);
    if (best == members_.size() || w > best_weight) {
      best = i;
      best_weight = w;
    }
  }
  return members_[best];
}

absl::StatusOr<std::vector<Member>> ParseMembers(absl::string_view flag) {
  std::vector<Member> members;
  int index = 0;
  for (absl::string_view item : absl::StrSplit(flag, ',')) {
    item = absl::StripAsciiWhitespace(item);
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--cluster-members: item ", index, " (\"",
                                                     item, "\") is not NAME=HOST:PORT"));
    }
    members.push_back({std::string(absl::StripAsciiWhitespace(item.substr(0, eq))),
                       std::string(absl::StripAsciiWhitespace(item.substr(eq + 1)))});
    ++index;
  }
  return members;
}

}  // namespace adaptd::cluster
