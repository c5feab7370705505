// The falcon store kind's descriptor (store_kind.h).
#include "server/stores/falcon_params.h"
#include "server/stores/falcon_store.h"
#include "server/stores/store_kind.h"

namespace adaptd {

StoreKind FalconKind() {
  StoreKind kind;
  kind.id = adapt::v1::STORE_KIND_FALCON;
  kind.name = "falcon";
  kind.warm = true;
  kind.params = adapt::v1::FalconParams::descriptor();
  kind.small_params = "variant: VARIANT_1";
  kind.normalize = NormalizeFalconSpec;
  kind.create = CreateFalconStore;
  kind.restore = [](const adapt::v1::StoreSnapshot& snapshot, kernels::Backend* backend) {
    return RestoreFalconStore(snapshot, StateArrays(), backend);
  };
  kind.restore_arrays = RestoreFalconStore;
  kind.readout_prepare = [](const adapt::v1::StoreSpec& spec, int64_t dim) {
    return ReadoutKeyNorm(FalconConfigOf(spec.falcon()).key_norm, dim);
  };
  KindGauge residual;
  residual.name = "adaptd_falcon_residual_norm";
  residual.help = "falcon: moving average of the residual norm, mean and max over stores";
  residual.aggregates = {KindGauge::Aggregate::kMean, KindGauge::Aggregate::kMax};
  residual.value = [](const adapt::v1::StoreInfo& info) {
    return info.falcon().residual_norm_avg();
  };
  kind.gauges.push_back(std::move(residual));
  kind.adopt_base = [](const BaseReadout& base, adapt::v1::StoreSpec* spec) {
    if (spec->falcon().key_norm() == adapt::v1::FalconParams::KEY_NORM_UNSPECIFIED) {
      spec->mutable_falcon()->set_key_norm(base.key_norm);  // read keys as the base does
    }
  };
  return kind;
}

}  // namespace adaptd
