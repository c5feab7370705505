#include "tests/fuzz/engine_fuzz_env.h"

#include <cstdio>
#include <cstdlib>

#include "server/config/config.h"
#include "server/stores/store_kind.h"

namespace adaptd::fuzz {
namespace {

void Check(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "fuzz set-up: %s: %s\n", what, std::string(status.message()).c_str());
    std::abort();
  }
}

EngineEnv* Build() {
  auto* env = new EngineEnv();
  env->backend = kernels::MakeCpuBackend(1);
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_data_dir("");
  config.set_max_dim(kMaxDim);
  config.set_compile_threads(1);
  auto engine = Engine::Create(config, env->backend.get(), nullptr);
  Check(engine.status(), "Engine::Create");
  env->engine = *std::move(engine);
  // One store of each registered kind, small and with no background work (for faast: no
  // automatic compile that could change a store between the fuzzer's before-and-after
  // fingerprints of a refused write).
  for (const StoreKind* kind : StoreKinds::Global().All()) {
    env->store_names.push_back(kind->name);
    const std::string& name = env->store_names.back();
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("t");
    create.set_store(name);
    auto spec = SmallSpec(*kind, 4, adapt::v1::OutputSpec());
    Check(spec.status(), "SmallSpec");
    *create.mutable_spec() = *std::move(spec);
    Check(env->engine->CreateStore(create).status(), "CreateStore");
    adapt::v1::AdaptRequest adapt;
    for (int k = 0; k < 8; ++k) {
      adapt::v1::Example* e = adapt.add_examples();
      for (int j = 0; j < 4; ++j) e->mutable_input()->mutable_vector()->add_values(j == k % 4);
      e->set_label(k % 2 == 0 ? "even" : "odd");
    }
    auto session = env->engine->StartWrite(TxnKind::kAdapt);
    Check(session->Add("t", name, adapt.examples()), "Adapt");
    Check(session->Finish().status(), "Adapt commit");
  }
  return env;
}

}  // namespace

EngineEnv& Env() {
  static EngineEnv* env = Build();
  return *env;
}

}  // namespace adaptd::fuzz
