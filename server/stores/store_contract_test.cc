// The Store contract (store_contract.h) for every built-in kind, in the configurations whose
// code paths differ: faast's solvers and decay, each Falcon variant, fwpkm's value types.
#include "server/stores/store_contract.h"

namespace adaptd::contract {
namespace {

struct Faast {
  static constexpr const char* kKind = "faast";
  static constexpr const char* kParams = "";
};
struct FaastRidgeDecay {
  static constexpr const char* kKind = "faast";
  static constexpr const char* kParams = "ridge: 0.5 decay: 0.9";
};
struct FaastNoFewShot {
  static constexpr const char* kKind = "faast";
  static constexpr const char* kParams = "few_shot: false";
};
struct Falcon1 {
  static constexpr const char* kKind = "falcon";
  static constexpr const char* kParams = "variant: VARIANT_1 key_norm: KEY_NORM_L2";
};
struct Falcon2 {
  static constexpr const char* kKind = "falcon";
  static constexpr const char* kParams = "variant: VARIANT_2 lambda: 0.1";
};
struct Falcon3 {
  static constexpr const char* kKind = "falcon";
  static constexpr const char* kParams = "variant: VARIANT_3 window: 4";
};
struct Falcon1A {
  static constexpr const char* kKind = "falcon";
  static constexpr const char* kParams = "variant: VARIANT_1A key_norm: KEY_NORM_RMS";
};
struct Falcon2A {
  static constexpr const char* kKind = "falcon";
  static constexpr const char* kParams = "variant: VARIANT_2A lambda: 0.2";
};
struct Falcon3A {
  static constexpr const char* kKind = "falcon";
  static constexpr const char* kParams = "variant: VARIANT_3A window: 3";
};
struct Fwpkm {
  static constexpr const char* kKind = "fwpkm";
  static constexpr const char* kParams = "";
};
struct FwpkmBfloat16 {
  static constexpr const char* kKind = "fwpkm";
  static constexpr const char* kParams = "value_type: VALUE_TYPE_BFLOAT16 gate: GATE_CONFIDENCE";
};

using BuiltinKinds = ::testing::Types<Faast, FaastRidgeDecay, FaastNoFewShot, Falcon1, Falcon2,
                                      Falcon3, Falcon1A, Falcon2A, Falcon3A, Fwpkm, FwpkmBfloat16>;
INSTANTIATE_TYPED_TEST_SUITE_P(Builtin, StoreContract, BuiltinKinds);

}  // namespace
}  // namespace adaptd::contract
