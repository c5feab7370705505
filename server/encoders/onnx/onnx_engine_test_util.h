// Test helpers of the onnx tests that run a store on an onnx encoder inside the engine: a faast
// store's creation for tenant "acme", and its adapt and compile calls.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENGINE_TEST_UTIL_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENGINE_TEST_UTIL_H_

#include <future>
#include <string>

#include "adapt/v1/adapt.pb.h"
#include "server/core/engine.h"

namespace adaptd::onnx_test {

// A faast store `name` of tenant "acme" on `encoder`, compiled only when asked.
inline adapt::v1::CreateStoreRequest FaastStore(const std::string& name,
                                                const std::string& encoder) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("acme");
  create.set_store(name);
  auto* spec = create.mutable_spec();
  spec->set_kind(adapt::v1::STORE_KIND_FAAST);
  spec->set_encoder(encoder);
  spec->mutable_faast()->set_ridge(0.1);
  spec->mutable_faast()->set_auto_compile_every(0);
  spec->mutable_faast()->set_auto_compile_delay_ms(0);
  return create;
}

// Adapts acme's `store` on `examples` in one write.
inline absl::Status Adapt(Engine& engine, const std::string& store,
                          const google::protobuf::RepeatedPtrField<adapt::v1::Example>& examples) {
  auto session = engine.StartWrite(TxnKind::kAdapt);
  if (absl::Status s = session->Add("acme", store, examples); !s.ok()) return s;
  return session->Finish().status();
}

// Compiles acme's `store` and waits for it.
inline absl::Status Compile(Engine& engine, const std::string& store) {
  adapt::v1::CompileRequest request;
  request.set_tenant("acme");
  request.set_store(store);
  std::promise<absl::Status> done;
  engine.Compile(request,
                 [&](absl::StatusOr<adapt::v1::CompileResponse> r) { done.set_value(r.status()); });
  return done.get_future().get();
}

}  // namespace adaptd::onnx_test

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENGINE_TEST_UTIL_H_
