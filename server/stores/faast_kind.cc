// The faast store kind's descriptor (store_kind.h).
#include <utility>

#include "server/base/status_macros.h"
#include "server/stores/faast_params.h"
#include "server/stores/faast_snapshot.h"
#include "server/stores/faast_store.h"
#include "server/stores/store_kind.h"

namespace adaptd {

StoreKind FaastKind() {
  StoreKind kind;
  kind.id = adapt::v1::STORE_KIND_FAAST;
  kind.name = "faast";
  kind.warm = true;
  kind.params = adapt::v1::FaastParams::descriptor();
  kind.embeds_labels = true;
  kind.small_params = "auto_compile_every: 0 auto_compile_delay_ms: 0";
  kind.normalize = NormalizeFaastSpec;
  kind.create = [](const adapt::v1::StoreSpec& spec,
                   kernels::Backend* backend) -> absl::StatusOr<std::unique_ptr<Store>> {
    return std::make_unique<FaastStore>(spec, backend);
  };
  kind.restore_arrays = [](const adapt::v1::StoreSnapshot& snapshot, const StateArrays& arrays,
                           kernels::Backend* backend) -> absl::StatusOr<std::unique_ptr<Store>> {
    ASSIGN_OR_RETURN(adapt::v1::StoreSpec spec, NormalizeFaastSpec(snapshot.spec()));
    FaastPersistent state;
    RETURN_IF_ERROR(FaastStateFromProto(snapshot.faast(), spec, &state, arrays));
    ASSIGN_OR_RETURN(std::unique_ptr<FaastStore> store,
                     FaastStore::Restore(spec, std::move(state), backend));
    return std::unique_ptr<Store>(std::move(store));
  };
  kind.restore = [restore = kind.restore_arrays](const adapt::v1::StoreSnapshot& snapshot,
                                                 kernels::Backend* backend) {
    return restore(snapshot, StateArrays(), backend);
  };
  kind.compile_seconds = [](const adapt::v1::CompileResponse& r) {
    return r.faast().compile_seconds();
  };
  kind.compile_gauges = {
      {"adaptd_faast_effective_rank", "faast: directions kept by the last compile",
       [](const adapt::v1::CompileResponse& r) {
         return static_cast<double>(r.faast().effective_rank());
       }},
      {"adaptd_faast_cutoff_ratio", "faast: relative singular-value cut-off of the last compile",
       [](const adapt::v1::CompileResponse& r) { return r.faast().cutoff(); }},
      {"adaptd_faast_condition_number",
       "faast: condition number over the kept directions at the last compile",
       [](const adapt::v1::CompileResponse& r) { return r.faast().condition_number(); }},
  };
  kind.compile_after_load = [](const adapt::v1::StoreInfo& info) {
    const adapt::v1::FaastParams& params = info.spec().faast();
    return info.has_faast() && info.faast().pending_examples() > 0 &&
           (params.auto_compile_every() > 0 || params.auto_compile_delay_ms() > 0);
  };
  return kind;
}

}  // namespace adaptd
