// An fwpkm store whose state is past 2 GiB, the most one protobuf holds: all 2^24 slots
// written, width 32, bfloat16 storage (about 1.6 GiB in memory, a 2.06 GiB snapshot file).
// For the `large` tests and the snapshot file bench. Pure functions; thread-safe.
#ifndef ADAPTD_TESTS_LARGE_BIG_FWPKM_STATE_H_
#define ADAPTD_TESTS_LARGE_BIG_FWPKM_STATE_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "adapt/v1/snapshot.pb.h"
#include "kernels/backend.h"
#include "server/stores/store_factory.h"
#include "server/stores/store_state.h"

namespace adaptd::large {

inline constexpr uint32_t kSubKeys = 4096;  // 2^24 slots
inline constexpr uint64_t kSlots = uint64_t{kSubKeys} * kSubKeys;
inline constexpr uint32_t kWidth = 32;

inline adapt::v1::StoreSpec BigFwpkmSpec() {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FWPKM);
  spec.set_encoder("identity");
  spec.set_dim(2);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
  spec.mutable_output()->set_dim(kWidth);
  spec.mutable_fwpkm()->set_sub_keys(kSubKeys);
  spec.mutable_fwpkm()->set_key_dim(2);
  spec.mutable_fwpkm()->set_value_type(adapt::v1::FwpkmParams::VALUE_TYPE_BFLOAT16);
  return spec;
}

// A store with every slot written, restored from arrays made here: writing 2^24 slots through
// commits would take far longer than a test may run. Peak memory: the 2 GiB of arrays and the
// store.
inline absl::StatusOr<std::unique_ptr<Store>> BigFwpkmStore(kernels::Backend* backend) {
  adapt::v1::StoreSnapshot header;
  *header.mutable_spec() = BigFwpkmSpec();
  adapt::v1::FwpkmState* s = header.mutable_fwpkm();
  s->set_key_dim(2);
  s->set_columns(kWidth);
  s->set_dim(2);
  s->set_sub_keys(kSubKeys);
  s->set_version(1);
  s->set_chunks(1);
  s->set_examples(kSlots);
  for (uint32_t i = 0; i < kSubKeys; ++i) {
    s->add_usage_1(1.0 / kSubKeys);
    s->add_usage_2(1.0 / kSubKeys);
  }
  std::string keys(kSubKeys * sizeof(float), '\0'), slots(kSlots * sizeof(uint32_t), '\0');
  std::string values(kSlots * kWidth * sizeof(float), '\0');
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (uint32_t i = 0; i < kSubKeys; ++i) {
    const float k = normal(rng);
    std::memcpy(keys.data() + i * sizeof(float), &k, sizeof(k));
  }
  // Slots in a scrambled order (an odd multiplier permutes 2^24), values varying per row.
  for (uint64_t r = 0; r < kSlots; ++r) {
    const uint32_t slot = static_cast<uint32_t>((r * 2654435761u) % kSlots);
    std::memcpy(slots.data() + r * 4, &slot, 4);
    for (uint32_t c = 0; c < kWidth; ++c) {
      const float v = static_cast<float>((r + 7 * c) % 1021) / 64.0f - 8.0f;
      std::memcpy(values.data() + (r * kWidth + c) * 4, &v, 4);
    }
  }
  StateArrays arrays;
  arrays.Add("sub_keys_1", adapt::v1::ArraySection::TYPE_FLOAT32, keys);
  arrays.Add("sub_keys_2", adapt::v1::ArraySection::TYPE_FLOAT32, keys);
  arrays.Add("slots", adapt::v1::ArraySection::TYPE_UINT32, slots);
  arrays.Add("values", adapt::v1::ArraySection::TYPE_FLOAT32, values);
  return RestoreStore(header, arrays, backend);
}

}  // namespace adaptd::large

#endif  // ADAPTD_TESTS_LARGE_BIG_FWPKM_STATE_H_
