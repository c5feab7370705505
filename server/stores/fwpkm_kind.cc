// The fwpkm store kind's descriptor (store_kind.h).
#include "server/stores/fwpkm_params.h"
#include "server/stores/fwpkm_store.h"
#include "server/stores/store_kind.h"

namespace adaptd {

StoreKind FwpkmKind() {
  StoreKind kind;
  kind.id = adapt::v1::STORE_KIND_FWPKM;
  kind.name = "fwpkm";
  kind.params = adapt::v1::FwpkmParams::descriptor();
  kind.rereads = true;
  kind.small_params = "sub_keys: 8 chunk: 4";
  kind.normalize = NormalizeFwpkmSpec;
  kind.create = CreateFwpkmStore;
  kind.restore = [](const adapt::v1::StoreSnapshot& snapshot, kernels::Backend* backend) {
    return RestoreFwpkmStore(snapshot, StateArrays(), backend);
  };
  kind.restore_arrays = RestoreFwpkmStore;
  using Aggregate = KindGauge::Aggregate;
  kind.gauges.push_back(
      {"adaptd_fwpkm_slots",
       "fwpkm: slots addressable, summed over stores",
       {Aggregate::kSum},
       [](const adapt::v1::StoreInfo& info) { return static_cast<double>(info.fwpkm().slots()); }});
  kind.gauges.push_back({"adaptd_fwpkm_slots_used",
                         "fwpkm: slots written at least once, summed over stores",
                         {Aggregate::kSum},
                         [](const adapt::v1::StoreInfo& info) {
                           return static_cast<double>(info.fwpkm().slots_used());
                         }});
  kind.gauges.push_back(
      {"adaptd_fwpkm_addressing_entropy_nats",
       "fwpkm: addressing entropy, mean and min over stores",
       {Aggregate::kMean, Aggregate::kMin},
       [](const adapt::v1::StoreInfo& info) { return info.fwpkm().addressing_entropy(); }});
  kind.no_base =
      "their values live in slots addressed by sub-keys that move with their own writes, so "
      "another store's slots mean nothing to them";
  return kind;
}

}  // namespace adaptd
