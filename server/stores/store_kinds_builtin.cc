// The store kinds built into adaptd: the one list to extend when a kind joins the tree
// (docs/ARCHITECTURE.md, "Adding a store kind").
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/stores/store_kind.h"

namespace adaptd {

// Each defined in its kind's <name>_kind.cc.
StoreKind FaastKind();
StoreKind FalconKind();
StoreKind FwpkmKind();

void RegisterBuiltinKinds(StoreKinds& kinds) {
  for (StoreKind kind : {FaastKind(), FalconKind(), FwpkmKind()}) {
    // The built-in kinds are distinct and complete; a clash is a defect of the build.
    const absl::Status status = kinds.Register(std::move(kind));
    if (!status.ok()) {
      std::fprintf(stderr, "adaptd: %s\n", std::string(status.message()).c_str());
      std::abort();
    }
  }
}

}  // namespace adaptd
