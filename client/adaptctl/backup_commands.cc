// cluster backup-hold and cluster check: a backup of a deployment on the durable log in etcd
// and its restore (docs/CLUSTER_OPERATIONS.md, "Backup and restore"). Both reach etcd (and the
// bucket) directly with the members' flags, not through a member.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/adaptctl/cluster_check.h"
#include "client/adaptctl/commands.h"
#include "client/adaptctl/durable_log_options.h"
#include "server/durability/etcd_durability.h"

namespace adaptctl {
namespace {

struct HoldOptions {
  DurableLogOptions log;
  std::optional<int> minutes;
  bool clear = false;
};

// The hold as etcd holds it: {"held", "until", "until_utc"} or {"held": false}.
absl::StatusOr<Json> HoldJson(adaptd::etcd::EtcdClient& etcd, const std::string& key) {
  etcdserverpb::RangeRequest read;
  read.set_key(key);
  absl::StatusOr<etcdserverpb::RangeResponse> now = etcd.Range(read);
  if (!now.ok()) return now.status();
  Json out = {{"key", key}, {"held", false}};
  if (now->kvs_size() == 0) return out;
  const std::string& value = now->kvs(0).value();
  absl::StatusOr<absl::Time> until = adaptd::ParseBackupHold(value);
  if (!until.ok()) {
    // The members hold deletions while it is unreadable, as if it never ended.
    out["held"] = true;
    out["error"] = std::string(until.status().message());
    return out;
  }
  out["held"] = *until > absl::Now();
  out["until"] = absl::ToUnixSeconds(*until);
  out["until_utc"] = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", *until, absl::UTCTimeZone());
  return out;
}

absl::Status RunBackupHold(const HoldOptions& options) {
  if (options.clear && options.minutes.has_value()) {
    return UsageError("--minutes and --clear: one or the other");
  }
  absl::StatusOr<std::unique_ptr<adaptd::etcd::EtcdClient>> etcd = ConnectEtcd(options.log);
  if (!etcd.ok()) return etcd.status();
  const std::string key = adaptd::BackupHoldKey(EtcdPrefix(options.log));
  if (options.clear) {
    etcdserverpb::DeleteRangeRequest drop;
    drop.set_key(key);
    absl::StatusOr<etcdserverpb::DeleteRangeResponse> dropped = (*etcd)->DeleteRange(drop);
    if (!dropped.ok()) return dropped.status();
  } else if (options.minutes.has_value()) {
    etcdserverpb::PutRequest put;
    put.set_key(key);
    put.set_value(absl::StrCat(absl::ToUnixSeconds(absl::Now() + absl::Minutes(*options.minutes))));
    absl::StatusOr<etcdserverpb::PutResponse> written = (*etcd)->Put(put);
    if (!written.ok()) return written.status();
  }
  absl::StatusOr<Json> hold = HoldJson(**etcd, key);
  if (!hold.ok()) return hold.status();
  PrintSummary(*hold);
  return absl::OkStatus();
}

absl::Status RunClusterCheck(const DurableLogOptions& options) {
  absl::StatusOr<std::unique_ptr<adaptd::etcd::EtcdClient>> etcd = ConnectEtcd(options);
  if (!etcd.ok()) return etcd.status();
  absl::StatusOr<std::unique_ptr<adaptd::ObjectStore>> bucket = OpenBucket(options);
  if (!bucket.ok()) return bucket.status();
  Json failures = Json::array();
  absl::StatusOr<ClusterCheckReport> report =
      CheckStores(**etcd, **bucket, EtcdPrefix(options), [&](const StoreCheckFailure& failure) {
        std::cerr << "store " << failure.store << ": " << failure.error << "\n";
        failures.push_back({{"store", failure.store}, {"error", failure.error}});
      });
  if (!report.ok()) return report.status();
  const int64_t failed = static_cast<int64_t>(report->failures.size());
  PrintSummary({{"stores", report->stores},
                {"loadable", report->stores - failed},
                {"failed", failed},
                {"log_records", report->log_records},
                {"objects", report->objects},
                {"unacknowledged_imports", report->imports},
                {"failures", failures}});
  if (failed == 0) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat(failed, " of ", report->stores, " stores cannot be loaded (listed above)"));
}

}  // namespace

void AddBackupCommands(CLI::App& cluster, Action* action) {
  auto hold_options = std::make_shared<HoldOptions>();
  CLI::App* hold = cluster.add_subcommand(
      "backup-hold",
      "Hold the members' deletions of objects from the bucket for a backup (PREFIX/backup-hold "
      "in etcd, a deadline in unix seconds), clear the hold, or show it");
  AddDurableLogOptions(*hold, &hold_options->log, /*bucket=*/false);
  hold->add_option("--minutes", hold_options->minutes,
                   "Hold deletions for this many minutes from now (longer than the etcd "
                   "snapshot and the bucket's copy take)")
      ->check(CLI::Range(1, 7 * 24 * 60));
  hold->add_flag("--clear", hold_options->clear, "Remove the hold: deletions go on");
  hold->callback([hold_options, action] {
    *action = [hold_options](const GlobalOptions&) { return RunBackupHold(*hold_options); };
  });

  auto check_options = std::make_shared<DurableLogOptions>();
  CLI::App* check = cluster.add_subcommand(
      "check",
      "Check that every store of a deployment on etcd (a restored backup) can be loaded: its "
      "state and read-out objects and every log record read and replayed, nothing written; "
      "each failure on stderr, exit status 1 if any");
  AddDurableLogOptions(*check, check_options.get(), /*bucket=*/true);
  check->callback([check_options, action] {
    *action = [check_options](const GlobalOptions&) { return RunClusterCheck(*check_options); };
  });
}

}  // namespace adaptctl
