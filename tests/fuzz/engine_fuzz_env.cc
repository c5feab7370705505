#include "tests/fuzz/engine_fuzz_env.h"

#include <cstdio>
#include <cstdlib>

#include "server/config/config.h"

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
  const adapt::v1::StoreKind kinds[kStores] = {
      adapt::v1::STORE_KIND_FAAST, adapt::v1::STORE_KIND_FALCON, adapt::v1::STORE_KIND_FWPKM};
  for (int i = 0; i < kStores; ++i) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("t");
    create.set_store(env->store_names[i]);
    create.mutable_spec()->set_kind(kinds[i]);
    create.mutable_spec()->set_dim(4);
    if (kinds[i] == adapt::v1::STORE_KIND_FAAST) {
      // No automatic compiles: one running in the background would change the store between
      // the fuzzer's before-and-after fingerprints of a refused write.
      create.mutable_spec()->mutable_faast()->set_auto_compile_every(0);
      create.mutable_spec()->mutable_faast()->set_auto_compile_delay_ms(0);
    }
    if (kinds[i] == adapt::v1::STORE_KIND_FALCON) {
      create.mutable_spec()->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
    }
    if (kinds[i] == adapt::v1::STORE_KIND_FWPKM) {
      create.mutable_spec()->mutable_fwpkm()->set_sub_keys(8);
      create.mutable_spec()->mutable_fwpkm()->set_chunk(4);
    }
    Check(env->engine->CreateStore(create).status(), "CreateStore");
    adapt::v1::AdaptRequest adapt;
    for (int k = 0; k < 8; ++k) {
      adapt::v1::Example* e = adapt.add_examples();
      for (int j = 0; j < 4; ++j) e->mutable_input()->mutable_vector()->add_values(j == k % 4);
      e->set_label(k % 2 == 0 ? "even" : "odd");
    }
    auto session = env->engine->StartWrite(TxnKind::kAdapt);
    Check(session->Add("t", env->store_names[i], adapt.examples()), "Adapt");
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
