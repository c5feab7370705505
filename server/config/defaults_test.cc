// The defaults of server/config/defaults.h against every other place that states them: the
// defaults `adaptd --help` prints, the ones README.md, deploy/README.md and docs/*.md list (flag
// tables, and prose of the form "`--flag`, default N"), the ones proto/adapt/v1/config.proto's
// comments state ("(default N)" above a field), and the values the layers that apply a default hold
// themselves (the scheduler's options, the journal's and the durabilities' options,
// DefaultConfig()).
#include "server/config/defaults.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/config/config.h"
#include "server/durability/memory_durability.h"
#include "server/persistence/journal.h"
#include "server/persistence/state_db.h"
#include "server/scheduler/scheduler_config.h"

namespace adaptd {
namespace {

// One default as --help and the docs write it, by flag and by config field (either may be
// empty: a flag without a field, a field without a flag).
struct Default {
  std::string flag;
  std::string field;
  std::string value;
};

std::vector<Default> AllDefaults() {
  namespace d = defaults;
  auto n = [](auto v) { return absl::StrCat(v); };
  return {
      {"--listen", "listen", d::kListen},
      {"--metrics-listen", "metrics_listen", d::kMetricsListen},
      {"--http-listen", "http_listen", d::kHttpListen},
      {"--data-dir", "data_dir", d::kDataDir},
      {"--max-message-bytes", "max_message_bytes", n(d::kMaxMessageBytes)},
      {"--max-call-bytes", "max_call_bytes", n(d::kMaxCallBytes)},
      {"--workers", "worker_threads", n(d::kWorkerThreads)},
      {"--max-batch-size", "max_batch_size", n(d::kMaxBatchSize)},
      {"--max-queue-delay-us", "max_queue_delay_us", n(d::kMaxQueueDelayUs)},
      {"--queue-capacity", "queue_capacity", n(d::kQueueCapacity)},
      {"--tenant-queue-capacity", "tenant_queue_capacity", n(d::kTenantQueueCapacity)},
      {"--backend-threads", "backend_threads", n(d::kBackendThreads)},
      {"--compile-threads", "compile_threads", n(d::kCompileThreads)},
      {"--max-dim", "max_dim", n(d::kMaxDim)},
      {"--device", "device", d::kDevice},
      {"--onnxruntime-library", "onnxruntime_library", d::kOnnxRuntimeLibrary},
      {"--shutdown-grace-seconds", "shutdown_grace_seconds", n(d::kShutdownGraceSeconds)},
      {"--quota-max-stores", "max_stores", n(d::kQuotaMaxStores)},
      {"--quota-max-memory-bytes", "max_memory_bytes", n(d::kQuotaMaxMemoryBytes)},
      {"--quota-examples-per-second", "examples_per_second", n(d::kQuotaExamplesPerSecond)},
      {"--fsync", "log_fsync", d::kLogFsync ? "on" : "off"},
      {"--snapshot-log-bytes", "snapshot_log_bytes", n(d::kSnapshotLogBytes)},
      {"--max-example-ids", "max_example_ids", n(d::kMaxExampleIds)},
      {"--state-map-bytes", "state_map_bytes", n(d::kStateMapBytes)},
      {"--memory-budget-bytes", "memory_budget_bytes", n(d::kMemoryBudgetBytes)},
      {"--etcd-prefix", "etcd_prefix", d::kEtcdPrefix},
      {"--etcd-lease-ttl", "lease_ttl_seconds", n(d::kEtcdLeaseTtlSeconds)},
      {"--s3-region", "s3_region", d::kS3Region},
      {"--etcd-quota-bytes", "etcd_quota_bytes", n(d::kEtcdQuotaBytes)},
      {"--usage-interval-ms", "usage_interval_ms", n(d::kUsageIntervalMs)},
      {"--restart-grace", "restart_grace_seconds", n(d::kRestartGraceSeconds)},
      {"--blas-core", "", d::kBlasCore},
      {"", "metrics_top_tenants", n(d::kMetricsTopTenants)},
      {"", "max_batch", n(d::kOnnxMaxBatch)},
      {"", "threads", n(d::kOnnxThreads)},
  };
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string RunHelp() {
  std::string out;
  FILE* pipe = popen(ADAPTD_BINARY " --help", "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  for (size_t got; (got = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, got);
  pclose(pipe);
  return out;
}

// flag → the default --help prints for it: "[default X]" in the description, or CLI11's
// "TYPE=X" after the names. Flags without a default are absent.
std::map<std::string, std::string> HelpDefaults(const std::string& help) {
  std::vector<std::string> entries;  // one option: its line and its continuation lines
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (absl::StartsWith(line, "  -")) {
      entries.emplace_back(line);
    } else if (absl::StartsWith(line, "   ") && !entries.empty()) {
      absl::StrAppend(&entries.back(), " ", absl::StripAsciiWhitespace(line));
    }
  }
  static const std::regex kBracketed(R"(\[default ([^\]:][^\]]*)\])");
  std::map<std::string, std::string> defaults;
  for (const std::string& entry : entries) {
    std::vector<std::string> words =
        absl::StrSplit(absl::StripAsciiWhitespace(entry), ' ', absl::SkipEmpty());
    std::string value;
    std::smatch m;
    if (std::regex_search(entry, m, kBracketed)) {
      value = m[1];
    } else if (words.size() > 1 && words[1].find('=') != std::string::npos) {
      value = words[1].substr(words[1].find('=') + 1);
    } else {
      continue;
    }
    for (absl::string_view name : absl::StrSplit(words[0], ','))
      defaults[std::string(name)] = value;
  }
  return defaults;
}

// A default as a doc writes it, in the form --help prints: backticks dropped, "64 MiB" in
// bytes, a trailing "(unlimited)" dropped. Empty for prose ("one per core, at least 2").
std::string DocValue(std::string text) {
  text = std::string(absl::StripAsciiWhitespace(text));
  static const std::regex kNote(R"(^(.*\S) \([^)]*\)$)");
  static const std::regex kQuoted("^`([^`]+)`$");
  static const std::regex kNumber(R"(^[0-9]+(\.[0-9]+)?$)");
  static const std::regex kSize(R"(^([0-9]+) ([KMGT])iB$)");
  std::smatch m;
  if (std::regex_match(text, m, kNote)) text = m[1];
  if (std::regex_match(text, m, kQuoted)) return m[1];
  if (std::regex_match(text, m, kSize)) {
    const int shift = 10 * (1 + static_cast<int>(std::string("KMGT").find(m[2].str()[0])));
    return absl::StrCat(std::stoull(m[1]) << shift);
  }
  if (std::regex_match(text, kNumber) || text == "on" || text == "off") return text;
  return "";
}

// A default found in a doc: where, for which flag or field, and its value.
struct Listed {
  std::string where;
  std::string name;
  std::string value;
};

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (row[i] == '|') {
      cells.push_back(std::string(absl::StripAsciiWhitespace(cell)));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return cells;
}

// The defaults of the markdown tables that have a "flag…" column and a "default" column.
void TableDefaults(const std::string& file, const std::string& text, std::vector<Listed>* out) {
  static const std::regex kFlag("--[a-z0-9-]+");
  int line_number = 0, flag_col = -1, default_col = -1;
  bool in_table = false;
  for (absl::string_view line_view : absl::StrSplit(text, '\n')) {
    ++line_number;
    const std::string line(line_view);
    if (!absl::StartsWith(line, "|")) {
      in_table = false;
      continue;
    }
    const std::vector<std::string> cells = Cells(line);
    if (!in_table) {  // the header row
      in_table = true;
      flag_col = default_col = -1;
      for (int c = 0; c < static_cast<int>(cells.size()); ++c) {
        const std::string header = absl::AsciiStrToLower(cells[c]);
        if (absl::StartsWith(header, "flag")) flag_col = c;
        if (header == "default") default_col = c;
      }
      continue;
    }
    if (flag_col < 0 || default_col < 0 ||
        static_cast<size_t>(std::max(flag_col, default_col)) >= cells.size()) {
      continue;
    }
    std::vector<std::string> flags;
    for (std::sregex_iterator it(cells[flag_col].begin(), cells[flag_col].end(), kFlag), end;
         it != end; ++it) {
      flags.push_back(it->str());
    }
    std::vector<std::string> values = absl::StrSplit(cells[default_col], ", ");
    if (values.size() != flags.size()) values.assign(flags.size(), cells[default_col]);
    for (size_t i = 0; i < flags.size(); ++i) {
      out->push_back({absl::StrCat(file, ":", line_number), flags[i], DocValue(values[i])});
    }
  }
}

// A default as prose or a proto comment states it after "default ": quoted (`x` or "x"), a
// boolean, or a number with an optional size ("64 MiB") or time unit ("1000 ms").
constexpr char kStatedValue[] =
    R"((`[^`]+`|"[^"]+"|true|false|[0-9]+(?:\.[0-9]+)?(?: [KMGT]iB| ms| µs| s)?(?! ?[A-Za-z])))";

// A stated value in the form --help prints it for `name`: "x" unquoted, true and false as on
// and off, a time in the name's own unit ("1000 ms" of `usage_interval_ms`) as the bare
// number. Empty when not read: a time in another unit ("1 s" of a field in ms), or prose.
std::string StatedValue(const std::string& name, std::string value) {
  static const std::regex kTime(R"(^([0-9]+) (ms|µs|s)$)");
  static const std::regex kDoubleQuoted(R"re(^"([^"]+)"$)re");
  std::smatch m;
  if (std::regex_match(value, m, kTime)) {
    const std::string unit = m[2] == "ms" ? "ms" : m[2] == "s" ? "seconds" : "us";
    const bool own = absl::EndsWith(name, "_" + unit) || absl::EndsWith(name, "-" + unit);
    return own ? m[1].str() : "";
  }
  if (std::regex_match(value, m, kDoubleQuoted)) return m[1];
  if (value == "true" || value == "false") return value == "true" ? "on" : "off";
  return DocValue(value);
}

// Prose: "`--flag`, default N", "(`field`, default N;", "`--flag` (default N)". A value
// StatedValue does not read ("1 s" of a field in ms) is left out.
void ProseDefaults(const std::string& file, const std::string& text, std::vector<Listed>* out) {
  static const std::regex kProse(
      absl::StrCat(R"(`(--[a-z0-9-]+|[a-z][a-z0-9_]*)[^`]*`\)?(?:, | \()default )", kStatedValue));
  for (std::sregex_iterator it(text.begin(), text.end(), kProse), end; it != end; ++it) {
    const size_t line = 1 + std::count(text.begin(), text.begin() + it->position(), '\n');
    std::string value = StatedValue((*it)[1], (*it)[2]);
    if (!value.empty()) out->push_back({absl::StrCat(file, ":", line), (*it)[1], value});
  }
}

// config.proto: each field, with the default the comment right above it states ("(default
// N)", read as StatedValue reads prose); value empty where the comment states none. A comment
// stating two defaults gives its field both.
std::vector<Listed> ProtoDefaults(const std::string& file, const std::string& text) {
  static const std::regex kField(
      R"(^ *(?:optional |repeated )?[A-Za-z0-9_.<>, ]+ ([a-z][a-z0-9_]*) = [0-9]+;)");
  static const std::regex kStated(absl::StrCat(R"(\bdefault )", kStatedValue));
  std::vector<Listed> fields;
  std::string comment;
  int line_number = 0;
  for (absl::string_view line_view : absl::StrSplit(text, '\n')) {
    ++line_number;
    const std::string line(line_view);
    std::smatch m;
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "//")) {
      absl::StrAppend(
          &comment, " ",
          absl::StripAsciiWhitespace(absl::StripLeadingAsciiWhitespace(line).substr(2)));
      continue;
    }
    if (std::regex_search(line, m, kField)) {
      const std::string where = absl::StrCat(file, ":", line_number), name = m[1];
      bool stated = false;
      for (std::sregex_iterator it(comment.begin(), comment.end(), kStated), end; it != end;
           ++it, stated = true) {
        fields.push_back({where, name, StatedValue(name, (*it)[1])});
      }
      if (!stated) fields.push_back({where, name, ""});
    }
    comment.clear();
  }
  return fields;
}

std::vector<Listed> DocDefaults(std::vector<std::string>* files) {
  const std::filesystem::path root = ADAPTD_SOURCE_DIR;
  files->push_back("README.md");
  files->push_back("deploy/README.md");
  for (const auto& entry : std::filesystem::directory_iterator(root / "docs")) {
    if (entry.path().extension() == ".md")
      files->push_back("docs/" + entry.path().filename().string());
  }
  std::vector<Listed> listed;
  for (const std::string& file : *files) {
    const std::string text = ReadFile(root / file);
    TableDefaults(file, text, &listed);
    ProseDefaults(file, text, &listed);
  }
  return listed;
}

TEST(Defaults, HelpPrintsEachConstant) {
  const std::string help = RunHelp();
  ASSERT_NE(help.find("Usage: adaptd"), std::string::npos) << ADAPTD_BINARY " --help: " << help;
  std::map<std::string, std::string> printed = HelpDefaults(help);
  for (const Default& d : AllDefaults()) {
    if (d.flag.empty()) continue;
    auto it = printed.find(d.flag);
    if (it == printed.end()) {
      ADD_FAILURE() << "adaptd --help prints no default for " << d.flag;
      continue;
    }
    EXPECT_EQ(it->second, d.value) << "adaptd --help: the default of " << d.flag;
    printed.erase(it);
  }
  printed.erase("--worker-threads");  // the other name of --workers
  for (const auto& [flag, value] : printed) {
    ADD_FAILURE() << "adaptd --help prints default " << value << " for " << flag
                  << ", which has no constant in server/config/defaults.h";
  }
}

TEST(Defaults, DocsListEachConstant) {
  std::map<std::string, const Default*> by_name;
  const std::vector<Default> all = AllDefaults();
  for (const Default& d : all) {
    if (!d.flag.empty()) by_name[d.flag] = &d;
    if (!d.field.empty()) by_name[d.field] = &d;
  }
  std::vector<std::string> files;
  std::map<std::string, int> in_readme;  // flag → rows of README.md that list it
  int compared = 0;
  for (const Listed& l : DocDefaults(&files)) {
    auto it = by_name.find(l.name);
    if (it == by_name.end() || l.value.empty()) continue;
    ++compared;
    EXPECT_EQ(l.value, it->second->value) << l.where << ": the default of " << l.name;
    if (absl::StartsWith(l.where, "README.md:")) ++in_readme[it->second->flag];
  }
  EXPECT_GT(files.size(), 5u);
  EXPECT_GT(compared, static_cast<int>(all.size()));
  for (const Default& d : all) {
    if (d.flag.empty()) continue;
    EXPECT_GT(in_readme[d.flag], 0) << "README.md's flag table lists no default for " << d.flag;
  }
}

// Every field with a constant states it in the comment above it, except QuotaConfig's: a
// tenant's override of an unset one inherits the default quota's (whose own default is 0,
// unlimited, as its comment says).
TEST(Defaults, ProtoCommentsStateEachConstant) {
  const std::string file = "proto/adapt/v1/config.proto";
  const std::vector<Listed> fields =
      ProtoDefaults(file, ReadFile(std::filesystem::path(ADAPTD_SOURCE_DIR) / file));
  std::map<std::string, std::vector<const Listed*>> by_field;
  for (const Listed& l : fields) by_field[l.name].push_back(&l);
  ASSERT_GT(by_field.size(), 30u) << file << ": its fields were not read";
  const std::vector<std::string> inherited = {"max_stores", "max_memory_bytes",
                                              "examples_per_second"};
  int compared = 0;
  for (const Default& d : AllDefaults()) {
    if (d.field.empty()) continue;
    auto it = by_field.find(d.field);
    ASSERT_NE(it, by_field.end()) << file << " declares no field " << d.field;
    for (const Listed* l : it->second) {
      if (l->value.empty()) {
        EXPECT_TRUE(std::find(inherited.begin(), inherited.end(), d.field) != inherited.end())
            << l->where << ": the comment above " << d.field
            << " states no default (\"(default N)\") it can be read from";
        continue;
      }
      ++compared;
      EXPECT_EQ(l->value, d.value) << l->where << ": the default of " << d.field;
    }
  }
  EXPECT_GE(compared, 20);
}

TEST(Defaults, DocsAreReadAsHelpPrintsThem) {
  EXPECT_EQ(DocValue("64 MiB"), "67108864");
  EXPECT_EQ(DocValue("1 TiB"), "1099511627776");
  EXPECT_EQ(DocValue("0 (unlimited)"), "0");
  EXPECT_EQ(DocValue("`127.0.0.1:50051`"), "127.0.0.1:50051");
  EXPECT_EQ(DocValue("on"), "on");
  EXPECT_EQ(DocValue("one per core, at least 2"), "");
  EXPECT_EQ(DocValue("none: a single server"), "");
  std::vector<Listed> prose;
  ProseDefaults("x.md",
                "the server's `--max-dim` (default 8192) bounds it; every `usage_interval_ms` "
                "(default 1 s)\nthe map size (`--state-map-bytes`, default 1 TiB) reserves",
                &prose);
  ASSERT_EQ(prose.size(), 2u);
  EXPECT_EQ(prose[0].name, "--max-dim");
  EXPECT_EQ(prose[0].value, "8192");
  EXPECT_EQ(prose[1].where, "x.md:2");
  EXPECT_EQ(prose[1].name, "--state-map-bytes");
  EXPECT_EQ(prose[1].value, "1099511627776");
}

// Each default read, as "where name=value".
std::vector<std::string> Read(const std::vector<Listed>& listed) {
  std::vector<std::string> read;
  for (const Listed& l : listed) read.push_back(absl::StrCat(l.where, " ", l.name, "=", l.value));
  return read;
}

TEST(Defaults, TimesAreReadInTheNamesOwnUnit) {
  std::vector<Listed> prose;
  ProseDefaults("x.md",
                "every `usage_interval_ms` (default 1000 ms) and `--max-queue-delay-us`, "
                "default 200 µs;\n`--shutdown-grace-seconds` (default 10 s), but `x_ms`, default "
                "2 s and `y_seconds` (default 5 ms)",
                &prose);
  // Neither x_ms's seconds nor y_seconds' milliseconds.
  EXPECT_EQ(Read(prose), (std::vector<std::string>{"x.md:1 usage_interval_ms=1000",
                                                   "x.md:1 --max-queue-delay-us=200",
                                                   "x.md:2 --shutdown-grace-seconds=10"}));
}

TEST(Defaults, ProtoCommentsAreReadByField) {
  const std::vector<Listed> fields = ProtoDefaults("c.proto",
                                                   "message M {\n"
                                                   "  // Where (default \"127.0.0.1:1\").\n"
                                                   "  string listen = 1;\n"
                                                   "  // Unrelated, the default list.\n"
                                                   "  repeated E encoders = 2;\n"
                                                   "  // Fsync (default true); bytes (default\n"
                                                   "  //   64 MiB).\n"
                                                   "  optional bool log_fsync = 3;\n"
                                                   "  // Off (default false).\n"
                                                   "\n"
                                                   "  map<string, Q> quotas = 4;\n"
                                                   "}\n");
  EXPECT_EQ(Read(fields),
            (std::vector<std::string>{"c.proto:3 listen=127.0.0.1:1",
                                      "c.proto:5 encoders=", "c.proto:8 log_fsync=on",
                                      "c.proto:8 log_fsync=67108864", "c.proto:11 quotas="}));
}

// The layers that apply a default themselves hold the constant's value.
TEST(Defaults, LayersApplyTheConstants) {
  const adapt::v1::ServerConfig config = DefaultConfig();
  EXPECT_EQ(config.listen(), defaults::kListen);
  EXPECT_EQ(config.metrics_listen(), defaults::kMetricsListen);
  // `off` is the flag's spelling of an empty address: no HTTP listener.
  EXPECT_EQ(std::string(defaults::kHttpListen), "off");
  EXPECT_EQ(config.http_listen(), "");
  EXPECT_EQ(config.data_dir(), defaults::kDataDir);
  EXPECT_EQ(config.max_message_bytes(), defaults::kMaxMessageBytes);
  EXPECT_EQ(config.max_call_bytes(), defaults::kMaxCallBytes);
  EXPECT_EQ(config.worker_threads(), defaults::kWorkerThreads);
  EXPECT_EQ(config.compile_threads(), defaults::kCompileThreads);
  EXPECT_EQ(config.max_dim(), defaults::kMaxDim);
  ASSERT_EQ(config.encoders_size(), 3);
  EXPECT_EQ(config.encoders(2).dim(), defaults::kTextEncoderDim);

  for (const SchedulerOptions& scheduling :
       {SchedulerOptionsFromConfig(adapt::v1::ServerConfig()), SchedulerOptions()}) {
    EXPECT_EQ(scheduling.max_batch_size, static_cast<int>(defaults::kMaxBatchSize));
    EXPECT_EQ(scheduling.max_queue_delay, absl::Microseconds(defaults::kMaxQueueDelayUs));
    EXPECT_EQ(scheduling.queue_capacity, defaults::kQueueCapacity);
    EXPECT_EQ(scheduling.tenant_queue_capacity, defaults::kTenantQueueCapacity);
  }

  const JournalOptions journal;
  EXPECT_EQ(journal.sync, defaults::kLogFsync);
  EXPECT_EQ(journal.snapshot_log_bytes, defaults::kSnapshotLogBytes);
  EXPECT_EQ(journal.max_ids_per_store, defaults::kMaxExampleIds);
  EXPECT_EQ(journal.state_map_bytes, defaults::kStateMapBytes);
  EXPECT_EQ(StateDbOptions().map_bytes, defaults::kStateMapBytes);
  EXPECT_EQ(MemoryDurability::Options().max_ids_per_store, defaults::kMaxExampleIds);
}

}  // namespace
}  // namespace adaptd
