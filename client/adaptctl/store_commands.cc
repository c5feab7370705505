// store create | get | list | delete.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/adaptctl/commands.h"
#include "client/adaptctl/files.h"
#include "client/adaptctl/settings.h"

namespace adaptctl {
namespace {

struct CreateOptions {
  std::string store_ref;
  std::string kind;
  std::string encoder = "identity";
  std::string output = "labels";
  std::vector<std::string> settings;
  bool pinned = false;
  std::string label_encoder;
  std::vector<std::string> labels;
  std::string labels_file;
  std::string base;
  uint32_t feedback_window = 0;
  uint32_t feedback_age_s = 0;
};

absl::Status RunCreate(const CreateOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<StoreRef> ref = ParseStoreRef(options.store_ref);
  if (!ref.ok()) return ref.status();
  adapt::v1::CreateStoreRequest request;
  request.set_tenant(ref->tenant);
  request.set_store(ref->store);
  adapt::v1::StoreSpec& spec = *request.mutable_spec();
  absl::StatusOr<adapt::v1::StoreKind> kind = ParseStoreKind(options.kind);
  if (!kind.ok()) return UsageError(kind.status().message());
  spec.set_kind(*kind);
  spec.set_encoder(options.encoder);
  absl::StatusOr<adapt::v1::OutputSpec> output = ParseOutputSpec(options.output);
  if (!output.ok()) return UsageError(output.status().message());
  *spec.mutable_output() = *output;
  absl::Status settings = ApplyStoreSettings(options.settings, spec);
  if (!settings.ok()) return UsageError(settings.message());
  spec.set_pinned(options.pinned);
  spec.set_base(options.base);
  if (options.feedback_window > 0) {
    spec.mutable_feedback()->set_count(options.feedback_window);
    spec.mutable_feedback()->set_max_age_s(options.feedback_age_s);
  }
  spec.mutable_output()->set_label_encoder(options.label_encoder);
  for (const std::string& name : options.labels) spec.mutable_output()->add_labels(name);
  if (!options.labels_file.empty()) {
    absl::StatusOr<std::string> text = ReadBytes(options.labels_file);
    if (!text.ok()) return text.status();
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      line = absl::StripTrailingAsciiWhitespace(line);
      if (!line.empty()) spec.mutable_output()->add_labels(std::string(line));
    }
  }

  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::StoreInfo> info = (*client)->CreateStore(request);
  if (!info.ok()) return info.status();
  PrintSummary(MessageToJson(*info));
  return absl::OkStatus();
}

// `store get` (pin unset) and `store pin` / `store unpin`: print the store's info.
absl::Status RunGet(const std::string& store_ref, const GlobalOptions& globals,
                    std::optional<bool> pin = std::nullopt) {
  absl::StatusOr<StoreRef> ref = ParseStoreRef(store_ref);
  if (!ref.ok()) return ref.status();
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::StoreInfo> info =
      pin.has_value() ? (*client)->PinStore(ref->tenant, ref->store, *pin)
                      : (*client)->GetStore(ref->tenant, ref->store);
  if (!info.ok()) return info.status();
  PrintSummary(MessageToJson(*info));
  return absl::OkStatus();
}

struct ListOptions {
  std::string tenant;
  uint32_t page_size = 0;  // 0: the server's default
};

// Prints every store of the tenant: the pages are fetched one after another and printed as one
// list, so the output does not depend on the page size.
absl::Status RunList(const ListOptions& options, const GlobalOptions& globals) {
  const std::string& tenant = options.tenant;
  if (tenant.empty() || tenant.find('/') != std::string::npos) {
    return UsageError(absl::StrCat("\"", tenant, "\": expected TENANT"));
  }
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::ListStoresResponse> list =
      (*client)->ListStores(tenant, options.page_size);
  if (!list.ok()) return list.status();
  // Only the stores: the merged list has no next page, so next_page_token would say nothing.
  Json stores = Json::array();
  for (const adapt::v1::StoreInfo& info : list->stores()) stores.push_back(MessageToJson(info));
  PrintSummary(Json{{"stores", std::move(stores)}});
  return absl::OkStatus();
}

absl::Status RunDelete(const std::string& store_ref, const GlobalOptions& globals) {
  absl::StatusOr<StoreRef> ref = ParseStoreRef(store_ref);
  if (!ref.ok()) return ref.status();
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::Status deleted = (*client)->DeleteStore(ref->tenant, ref->store);
  if (!deleted.ok()) return deleted;
  PrintSummary(Json{{"tenant", ref->tenant}, {"store", ref->store}, {"deleted", true}});
  return absl::OkStatus();
}

void AddCreate(CLI::App& store, Action* action) {
  auto options = std::make_shared<CreateOptions>();
  CLI::App* create = store.add_subcommand("create", "Create a store");
  create->add_option("store", options->store_ref, "The store")
      ->type_name("TENANT/STORE")
      ->required();
  create->footer(StoreSettingsHelp());
  create
      ->add_option("--kind", options->kind,
                   absl::StrCat("Store kind: ", absl::StrJoin(StoreKindNames(), ", ")))
      ->type_name("KIND")
      ->required();
  create->add_option("--encoder", options->encoder, "Encoder name (see `encoders`)")
      ->type_name("NAME")
      ->capture_default_str();
  create->add_option("--output", options->output, "Output: labels, vector:M or next")
      ->type_name("OUTPUT")
      ->capture_default_str();
  create
      ->add_option("--set", options->settings,
                   "KEY=VALUE: a field of the kind's parameters (e.g. rcond=1e-6, "
                   "variant=1a, beta=0.5,0.5), or dim=D; repeatable")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  create
      ->add_option("--label-encoder", options->label_encoder,
                   "faast labels: a text encoder that embeds the label names (label-embedding "
                   "mode)")
      ->type_name("NAME");
  create
      ->add_option("--label", options->labels,
                   "A label declared at creation (with --label-encoder; zero-shot with "
                   "--set prior_examples=N0); repeatable")
      ->type_name("NAME");
  create
      ->add_option("--labels-file", options->labels_file,
                   "Labels declared at creation, one per line (as --label)")
      ->type_name("FILE");
  create
      ->add_option("--base", options->base,
                   "Start from this store's published read-out (faast with ridge > 0: the ridge "
                   "pulls towards it; falcon: its first state); STORE means one of this tenant")
      ->type_name("[TENANT/]STORE");
  CLI::Option* window =
      create
          ->add_option("--feedback-window", options->feedback_window,
                       "Remember the last N served predictions for `feedback` (docs/FEEDBACK.md); "
                       "predict then prints their prediction_id")
          ->type_name("N");
  create
      ->add_option("--feedback-age", options->feedback_age_s,
                   "With --feedback-window: forget predictions older than this many seconds")
      ->type_name("SECONDS")
      ->needs(window);
  create->add_flag("--pinned", options->pinned,
                   "Keep the store loaded: never evicted under the server's memory budget");
  create->callback([options, action] {
    *action = [options](const GlobalOptions& globals) { return RunCreate(*options, globals); };
  });
}

}  // namespace

void AddStoreCommands(CLI::App& app, Action* action) {
  CLI::App* store = app.add_subcommand("store", "Create, inspect, list, pin and delete stores");
  store->require_subcommand(1);
  AddCreate(*store, action);

  auto get_ref = std::make_shared<std::string>();
  CLI::App* get = store->add_subcommand("get", "Print a store's spec, counts and statistics");
  get->add_option("store", *get_ref, "The store")->type_name("TENANT/STORE")->required();
  get->callback([get_ref, action] {
    *action = [get_ref](const GlobalOptions& globals) { return RunGet(*get_ref, globals); };
  });

  for (const bool pin : {true, false}) {
    auto ref = std::make_shared<std::string>();
    CLI::App* command = store->add_subcommand(
        pin ? "pin" : "unpin",
        pin ? "Keep a store loaded: never evicted under the server's memory budget"
            : "Let a pinned store be evicted again");
    command->add_option("store", *ref, "The store")->type_name("TENANT/STORE")->required();
    command->callback([ref, action, pin] {
      *action = [ref, pin](const GlobalOptions& globals) { return RunGet(*ref, globals, pin); };
    });
  }

  auto list_options = std::make_shared<ListOptions>();
  CLI::App* list = store->add_subcommand("list", "List a tenant's stores (every page)");
  list->add_option("tenant", list_options->tenant, "The tenant")->type_name("TENANT")->required();
  list->add_option("--page-size", list_options->page_size,
                   "Stores fetched per call (0: the server's default, 100; at most 1000)")
      ->type_name("N")
      ->capture_default_str();
  list->callback([list_options, action] {
    *action = [list_options](const GlobalOptions& globals) {
      return RunList(*list_options, globals);
    };
  });

  auto delete_ref = std::make_shared<std::string>();
  CLI::App* remove = store->add_subcommand("delete", "Delete a store and its data");
  remove->add_option("store", *delete_ref, "The store")->type_name("TENANT/STORE")->required();
  remove->callback([delete_ref, action] {
    *action = [delete_ref](const GlobalOptions& globals) {
      return RunDelete(*delete_ref, globals);
    };
  });
}

}  // namespace adaptctl
