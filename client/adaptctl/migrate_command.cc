// cluster migrate: loads stopped servers' data directories into a cluster (docs/CLUSTER_ETCD.md,
// "Migration"). Each directory is copied to a scratch directory and adaptd runs on the copy
// on a loopback port (the source is never written). The copy is started once and stopped, so
// that its state database holds every store with its remembered example ids; then started
// again, and every store of every tenant is exported from it and imported at the target with
// those ids (ImportStore's applied_ids), stores without a base first. A store the target holds
// already is left as it is, so a rerun imports only what is missing.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/adaptctl/commands.h"
#include "client/adaptctl/files.h"
#include "client/adaptctl/migrate_source.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "server/cluster/membership.h"

namespace adaptctl {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kImportTimeout = absl::Minutes(5);
constexpr size_t kImportChunkBytes = size_t{1} << 20;

struct MigrateOptions {
  std::vector<std::string> data_dirs;  // [NAME=]DIR
  std::string members;
  std::string to;
  std::string scratch;
  std::string adaptd;
  std::vector<std::string> adaptd_args;
  double start_wait_seconds = 120;
  bool keep_scratch = false;
};

// One data directory and its scratch copy.
struct Source {
  std::string name;  // the member's name; the directory for a single server
  std::string dir;
  std::unique_ptr<ScratchSource> scratch;
  std::map<std::string, StoredStore> stores;  // by "tenant/store"
};

// A store to import: where from, and how it was described there.
struct Planned {
  Source* source;
  adapt::v1::StoreInfo info;
  // When more than one source holds it: their names, and its owner by --members.
  std::vector<std::string> holders;
  std::string owner;
};

std::string StatusText(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

absl::StatusOr<std::vector<Source>> ParseSources(const MigrateOptions& options) {
  std::vector<Source> sources;
  std::set<std::string> names;
  for (const std::string& item : options.data_dirs) {
    Source source;
    const size_t eq = item.find('=');
    if (eq != std::string::npos) {
      source.name = item.substr(0, eq);
      source.dir = item.substr(eq + 1);
    } else if (options.data_dirs.size() > 1) {
      return UsageError(
          absl::StrCat("--data-dir ", item, ": with more than one directory, each is NAME=DIR"));
    } else {
      source.dir = item;
    }
    if (source.dir.empty()) return UsageError(absl::StrCat("--data-dir ", item, ": no DIR"));
    if (source.name.empty()) source.name = fs::path(source.dir).filename().string();
    if (source.name.empty()) source.name = "source";
    if (!names.insert(source.name).second) {
      return UsageError(absl::StrCat("--data-dir: ", source.name, " given twice"));
    }
    sources.push_back(std::move(source));
  }
  if (sources.size() > 1 && options.members.empty()) {
    return UsageError("--members is required with more than one --data-dir");
  }
  return sources;
}

// The static cluster's membership less the drained members, or nullopt without --members.
absl::StatusOr<std::optional<adaptd::cluster::Membership>> StaticMembership(
    const MigrateOptions& options, const std::vector<Source>& sources) {
  if (options.members.empty()) return std::nullopt;
  absl::StatusOr<std::vector<adaptd::cluster::Member>> members =
      adaptd::cluster::ParseMembers(options.members);
  if (!members.ok() || members->empty()) {
    return UsageError(absl::StrCat("--members: ", members.status().message()));
  }
  const std::string self = members->front().name;
  absl::StatusOr<adaptd::cluster::Membership> membership =
      adaptd::cluster::Membership::Create(self, *std::move(members));
  if (!membership.ok())
    return UsageError(absl::StrCat("--members: ", membership.status().message()));
  std::set<std::string> drained;
  for (const Source& source : sources) {
    if (membership->Find(source.name) == nullptr) {
      return UsageError(
          absl::StrCat("--data-dir ", source.name, "=", source.dir, ": not a member of --members"));
    }
    absl::StatusOr<std::set<std::string>> marked = ReadDrainedMembers(source.dir);
    if (!marked.ok()) return marked.status();
    drained.insert(marked->begin(), marked->end());
  }
  absl::StatusOr<adaptd::cluster::Membership> owning = membership->Draining(drained);
  if (!owning.ok()) return owning.status();
  return *std::move(owning);
}

absl::StatusOr<std::string> AdaptdBinary(const std::string& flag) {
  std::string path = flag;
  if (path.empty()) {
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    if (error) return UsageError("--adaptd: the adaptd binary (adaptctl's own path is unknown)");
    path = (self.parent_path() / "adaptd").string();
  }
  if (access(path.c_str(), X_OK) != 0) {
    return UsageError(absl::StrCat("--adaptd: ", path, " is not an executable adaptd"));
  }
  return path;
}

// A channel to the target with the global TLS options; the token goes in each call's metadata.
absl::StatusOr<std::shared_ptr<grpc::Channel>> TargetChannel(const std::string& address,
                                                             const GlobalOptions& globals) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!globals.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    absl::StatusOr<std::string> ca = ReadBytes(globals.tls_ca);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
    if (!globals.tls_cert.empty()) {
      absl::StatusOr<std::string> cert = ReadBytes(globals.tls_cert);
      absl::StatusOr<std::string> key = ReadBytes(globals.tls_key);
      if (!cert.ok() || !key.ok()) return cert.ok() ? key.status() : cert.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, credentials, args);
}

// ImportStore with the remembered example ids in the first chunk (adaptd::Client's
// ImportStore sends none).
absl::StatusOr<adapt::v1::StoreInfo> ImportWithIds(adapt::v1::Adaptation::Stub& stub,
                                                   const GlobalOptions& globals,
                                                   const adapt::v1::StoreInfo& store,
                                                   const std::string& file,
                                                   const std::vector<std::string>& ids) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(
      absl::Now() +
      (globals.timeout_seconds > 0 ? absl::Seconds(globals.timeout_seconds) : kImportTimeout)));
  if (!globals.token.empty()) context.AddMetadata("authorization", "Bearer " + globals.token);
  adapt::v1::StoreInfo response;
  std::unique_ptr<grpc::ClientWriter<adapt::v1::StoreChunk>> writer =
      stub.ImportStore(&context, &response);
  adapt::v1::StoreChunk chunk;
  chunk.set_tenant(store.tenant());
  chunk.set_store(store.store());
  for (const std::string& id : ids) chunk.add_applied_ids(id);
  size_t offset = 0;
  do {
    chunk.set_data(file.substr(offset, kImportChunkBytes));
    offset += chunk.data().size();
    if (!writer->Write(chunk)) break;
    chunk.Clear();
  } while (offset < file.size());
  writer->WritesDone();
  const absl::Status status = adaptd::FromGrpcStatus(writer->Finish());
  if (!status.ok()) return status;
  return response;
}

// Stores without a base first, so that each base is at the target before its dependants.
std::vector<Planned> ImportOrder(std::vector<Planned> planned) {
  std::stable_partition(planned.begin(), planned.end(),
                        [](const Planned& p) { return p.info.spec().base().empty(); });
  return planned;
}

class Migration {
 public:
  Migration(const MigrateOptions& options, const GlobalOptions& globals)
      : options_(options), globals_(globals) {}

  absl::Status Run();

 private:
  absl::Status PrepareSources(const std::string& adaptd, const std::string& scratch_root);
  // Every store of every source, with the one source to import it from.
  absl::StatusOr<std::vector<Planned>> Plan(
      const std::optional<adaptd::cluster::Membership>& membership);
  // Imports one store and prints its line; false when it failed.
  bool Migrate(const Planned& planned, adapt::v1::Adaptation::Stub& stub, adaptd::Client& target);

  const MigrateOptions& options_;
  const GlobalOptions& globals_;
  std::vector<Source> sources_;
  std::map<std::string, size_t> counts_;
};

absl::Status Migration::PrepareSources(const std::string& adaptd, const std::string& scratch_root) {
  for (Source& source : sources_) {
    const std::string copy = (fs::path(scratch_root) / source.name).string();
    absl::StatusOr<std::unique_ptr<ScratchSource>> scratch =
        ScratchSource::Create(source.dir, copy, adaptd, options_.adaptd_args);
    if (!scratch.ok()) return scratch.status();
    source.scratch = *std::move(scratch);
    // A first run recovers the log and its stop writes every store's state with its ids.
    const absl::Duration wait = absl::Seconds(options_.start_wait_seconds);
    if (absl::Status started = source.scratch->Start(wait); !started.ok()) return started;
    if (absl::Status stopped = source.scratch->Stop(); !stopped.ok()) return stopped;
    absl::StatusOr<std::map<std::string, StoredStore>> stores = ReadStoredStores(copy);
    if (!stores.ok()) return stores.status();
    source.stores = *std::move(stores);
    if (absl::Status started = source.scratch->Start(wait); !started.ok()) return started;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Planned>> Migration::Plan(
    const std::optional<adaptd::cluster::Membership>& membership) {
  std::map<std::string, std::vector<Source*>> holders;
  for (Source& source : sources_) {
    for (const auto& [key, stored] : source.stores) holders[key].push_back(&source);
  }
  std::vector<Planned> planned;
  for (Source& source : sources_) {
    std::set<std::string> tenants;
    for (const auto& [key, stored] : source.stores) tenants.insert(key.substr(0, key.find('/')));
    absl::StatusOr<std::unique_ptr<adaptd::Client>> client = source.scratch->Connect();
    if (!client.ok()) return client.status();
    for (const std::string& tenant : tenants) {
      absl::Status listed = (*client)->ForEachStore(tenant, [&](const adapt::v1::StoreInfo& info) {
        Planned& p = planned.emplace_back(Planned{&source, info, {}, ""});
        const std::vector<Source*>& held = holders[absl::StrCat(tenant, "/", info.store())];
        // Several sources come with --members (ParseSources).
        if (held.size() > 1 && membership.has_value()) {
          for (const Source* holder : held) p.holders.push_back(holder->name);
          p.owner = membership->OwnerOf(tenant, info.store()).name;
        }
        return absl::OkStatus();
      });
      if (!listed.ok()) return listed;
    }
  }
  return ImportOrder(std::move(planned));
}

bool Migration::Migrate(const Planned& planned, adapt::v1::Adaptation::Stub& stub,
                        adaptd::Client& target) {
  const adapt::v1::StoreInfo& info = planned.info;
  Json line = {{"tenant", info.tenant()}, {"store", info.store()}, {"from", planned.source->name}};
  auto finish = [&](const std::string& result, const absl::Status& status = absl::OkStatus()) {
    line["result"] = result;
    if (!status.ok()) line["error"] = StatusText(status);
    ++counts_[result];
    PrintSummary(line);
    return result != "failed";
  };
  if (!planned.holders.empty()) {
    line["held_by"] = planned.holders;
    line["owner"] = planned.owner;
    const bool owner_holds = std::find(planned.holders.begin(), planned.holders.end(),
                                       planned.owner) != planned.holders.end();
    // No copy is known to be the latest: reported once, at the first holder.
    if (!owner_holds && planned.source->name == planned.holders.front()) {
      return finish("failed", absl::FailedPreconditionError(absl::StrCat(
                                  "held by ", absl::StrJoin(planned.holders, " and "),
                                  ", none of them its owner by --members, ", planned.owner)));
    }
    if (planned.owner != planned.source->name) return finish("skipped-not-owner");
  }
  const std::string key = absl::StrCat(info.tenant(), "/", info.store());
  const auto stored = planned.source->stores.find(key);
  const std::vector<std::string> ids = stored == planned.source->stores.end()
                                           ? std::vector<std::string>{}
                                           : stored->second.applied_ids;
  absl::StatusOr<std::unique_ptr<adaptd::Client>> source = planned.source->scratch->Connect();
  if (!source.ok()) return finish("failed", source.status());
  absl::StatusOr<std::string> file = (*source)->ExportStore(info.tenant(), info.store());
  if (!file.ok()) return finish("failed", file.status());
  absl::StatusOr<adapt::v1::StoreInfo> imported = ImportWithIds(stub, globals_, info, *file, ids);
  if (absl::IsAlreadyExists(imported.status())) return finish("skipped-exists");
  if (!imported.ok()) return finish("failed", imported.status());
  line["examples"] = imported->examples();
  line["applied_ids"] = ids.size();
  line["bytes"] = file->size();
  // An import starts unpinned.
  if (info.spec().pinned()) {
    absl::StatusOr<adapt::v1::StoreInfo> pinned =
        target.PinStore(info.tenant(), info.store(), true);
    if (!pinned.ok()) return finish("failed", pinned.status());
  }
  return finish("imported");
}

absl::Status Migration::Run() {
  absl::StatusOr<std::vector<Source>> sources = ParseSources(options_);
  if (!sources.ok()) return sources.status();
  sources_ = *std::move(sources);
  absl::StatusOr<std::optional<adaptd::cluster::Membership>> membership =
      StaticMembership(options_, sources_);
  if (!membership.ok()) return membership.status();
  absl::StatusOr<std::string> adaptd = AdaptdBinary(options_.adaptd);
  if (!adaptd.ok()) return adaptd.status();

  std::string scratch_root = options_.scratch;
  if (scratch_root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/adaptctl-migrate-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::UnavailableError(absl::StrCat("mkdtemp ", pattern, ": cannot create"));
    }
    scratch_root = pattern;
  }
  absl::Status status = PrepareSources(*adaptd, scratch_root);
  absl::StatusOr<std::vector<Planned>> planned =
      status.ok() ? Plan(*membership) : absl::StatusOr<std::vector<Planned>>(status);
  size_t failed = 0;
  if (planned.ok()) {
    GlobalOptions target_options = globals_;
    target_options.addr = options_.to;
    absl::StatusOr<std::unique_ptr<adaptd::Client>> target = ConnectClient(target_options);
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = TargetChannel(options_.to, globals_);
    if (!target.ok() || !channel.ok()) {
      status = target.ok() ? channel.status() : target.status();
    } else {
      std::unique_ptr<adapt::v1::Adaptation::Stub> stub = adapt::v1::Adaptation::NewStub(*channel);
      for (const Planned& p : *planned) failed += Migrate(p, *stub, **target) ? 0 : 1;
    }
  } else {
    status = planned.status();
  }
  for (Source& source : sources_) source.scratch.reset();  // stops each adaptd
  if (!options_.keep_scratch) {
    std::error_code ignored;
    for (const Source& source : sources_) {
      fs::remove_all(fs::path(scratch_root) / source.name, ignored);
      fs::remove(fs::path(scratch_root) / (source.name + ".log"), ignored);
    }
    if (options_.scratch.empty()) fs::remove(scratch_root, ignored);
  }
  if (!status.ok()) return status;
  Json summary = {{"stores", planned->size()}, {"to", options_.to}};
  for (const char* result : {"imported", "skipped-exists", "skipped-not-owner", "failed"}) {
    summary[result] = counts_[result];
  }
  PrintSummary(summary);
  if (failed > 0) {
    return absl::AbortedError(absl::StrCat(failed, " of ", planned->size(),
                                           " stores failed to migrate (their lines above)"));
  }
  return absl::OkStatus();
}

constexpr char kMigrateHelp[] =
    "Loads stopped adaptd servers' data directories into a cluster (or any adaptd) at --to.\n"
    "Each DIR is copied to a scratch directory first (the disk space of a full copy of each\n"
    "DIR at once; removed at the end unless --keep-scratch) and adaptd runs on the copy on a\n"
    "loopback port without tokens: the source is never written. A DIR an adaptd has open is\n"
    "refused. Every store of every tenant is exported there and imported at --to (an admin\n"
    "--token) with the example ids it remembered, so a resend of an acknowledged id is skipped\n"
    "there; stores without a base first; a pinned store is pinned again. A store --to holds\n"
    "already is left as it is (skipped-exists): a rerun imports only what is missing.\n"
    "A static cluster: one --data-dir NAME=DIR per member and --members as its\n"
    "--cluster-members list. A store in two members' directories (a hand-off caught mid-way)\n"
    "is imported once, from its owner by that list less the members drained in each DIR's\n"
    "cluster.state (skipped-not-owner at the other; failed when none of them is its owner).\n"
    "Output: one JSON line per store (result imported, skipped-exists, skipped-not-owner or\n"
    "failed with its error), then a summary line; exit status 1 when any store failed.";

}  // namespace

void AddMigrateCommand(CLI::App& cluster, Action* action) {
  auto options = std::make_shared<MigrateOptions>();
  CLI::App* migrate = cluster.add_subcommand(
      "migrate", "Load stopped servers' data directories into the cluster at --to");
  migrate->footer(kMigrateHelp);
  migrate
      ->add_option("--data-dir", options->data_dirs,
                   "A stopped server's data directory; NAME=DIR for a static cluster's member "
                   "NAME; repeatable")
      ->type_name("[NAME=]DIR")
      ->required();
  migrate
      ->add_option("--members", options->members,
                   "The static cluster's member list, as its --cluster-members "
                   "(NAME=HOST:PORT,...); required with more than one --data-dir")
      ->type_name("LIST");
  migrate->add_option("--to", options->to, "The cluster (any member) or server to load into")
      ->type_name("HOST:PORT")
      ->required();
  migrate
      ->add_option("--scratch", options->scratch,
                   "Where the copies go (default: a new directory under $TMPDIR or /tmp)")
      ->type_name("DIR");
  migrate->add_option("--adaptd", options->adaptd, "The adaptd binary (default: beside adaptctl)")
      ->type_name("PATH");
  migrate
      ->add_option("--adaptd-arg", options->adaptd_args,
                   "An argument for the scratch adaptd, e.g. --adaptd-arg=--config=FILE for its "
                   "encoders (a config without tokens); repeatable")
      ->type_name("ARG")
      ->allow_extra_args(false);
  migrate
      ->add_option("--start-wait", options->start_wait_seconds,
                   "How long a scratch adaptd may take to recover and serve")
      ->type_name("SECONDS")
      ->capture_default_str()
      ->check(Positive(/*integer=*/false));
  migrate->add_flag("--keep-scratch", options->keep_scratch,
                    "Leave the copies and the scratch servers' logs");
  migrate->callback([options, action] {
    *action = [options](const GlobalOptions& globals) {
      return Migration(*options, globals).Run();
    };
  });
}

}  // namespace adaptctl
