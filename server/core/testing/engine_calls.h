// Test code: the few Engine calls the shard and cluster-member tests make, on tenant/store with
// vector inputs of `dim` values: a faast label store created (compiles left to the test), an
// Adapt call of random examples, a compile waited for, and the answer to a fixed query.
#ifndef ADAPTD_SERVER_CORE_TESTING_ENGINE_CALLS_H_
#define ADAPTD_SERVER_CORE_TESTING_ENGINE_CALLS_H_

#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "server/base/status_macros.h"
#include "server/core/engine.h"

namespace adaptd::testing_util {

inline absl::Status CreateFaast(Engine& engine, const std::string& tenant,
                                const std::string& store) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant(tenant);
  create.set_store(store);
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  create.mutable_spec()->mutable_faast()->set_auto_compile_delay_ms(0);
  return engine.CreateStore(create).status();
}

// Four random examples labelled "even" and "odd" in turn, one Adapt call; with `id`, their
// ids are ID-0 to ID-3.
inline absl::StatusOr<adapt::v1::AdaptResponse> AdaptRandom(Engine& engine,
                                                            const std::string& tenant,
                                                            const std::string& store, int dim,
                                                            std::mt19937& rng,
                                                            const std::string& id = "") {
  google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
  std::normal_distribution<double> normal;
  for (int i = 0; i < 4; ++i) {
    adapt::v1::Example* e = examples.Add();
    e->set_label(i % 2 ? "odd" : "even");
    if (!id.empty()) e->set_id(absl::StrCat(id, "-", i));
    for (int j = 0; j < dim; ++j) {
      e->mutable_input()->mutable_vector()->add_values(static_cast<float>(normal(rng)));
    }
  }
  auto session = engine.StartWrite(TxnKind::kAdapt);
  RETURN_IF_ERROR(session->Add(tenant, store, examples));
  return session->Finish();
}

inline absl::Status CompileNow(Engine& engine, const std::string& tenant,
                               const std::string& store) {
  adapt::v1::CompileRequest compile;
  compile.set_tenant(tenant);
  compile.set_store(store);
  absl::Notification compiled;
  absl::Status result = absl::UnknownError("not run");
  engine.Compile(compile, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
    result = r.status();
    compiled.Notify();
  });
  compiled.WaitForNotification();
  return result;
}

// The answer to a fixed query of `dim` values, top 2, serialized: equal answers, equal stores.
inline absl::StatusOr<std::string> AnswerOf(Engine& engine, const std::string& tenant,
                                            const std::string& store, int dim) {
  adapt::v1::PredictRequest predict;
  predict.set_tenant(tenant);
  predict.set_store(store);
  predict.set_top_k(2);
  adapt::v1::Input* query = predict.add_inputs();
  for (int j = 0; j < dim; ++j) {
    query->mutable_vector()->add_values(0.3f * static_cast<float>(j) - 0.5f);
  }
  ASSIGN_OR_RETURN(adapt::v1::PredictResponse answer, engine.Predict(predict));
  return answer.SerializeAsString();
}

}  // namespace adaptd::testing_util

#endif  // ADAPTD_SERVER_CORE_TESTING_ENGINE_CALLS_H_
