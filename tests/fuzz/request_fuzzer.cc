// Fuzzes request handling: the input's first byte picks an operation (Adapt, Forget, Predict,
// CreateStore, Compile) and a store; the rest is parsed as the operation's request message
// (protobuf wire format) and driven through the Engine as a handler would. Any outcome is
// fine except a crash, a sanitizer report or a hang; a refused write must not change the store.
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/synchronization/notification.h"
#include "tests/fuzz/engine_fuzz_env.h"

namespace {

using adaptd::fuzz::Env;

std::string Fingerprint(const std::string& store) {
  adapt::v1::GetStoreRequest get;
  get.set_tenant("t");
  get.set_store(store);
  auto info = Env().engine->GetStore(get);
  if (!info.ok()) return "";
  info->clear_memory_bytes();
  return info->SerializeAsString();
}

template <typename Request>
void Write(const Request& request, adaptd::TxnKind kind, const std::string& store) {
  const std::string before = Fingerprint(store);
  auto session = Env().engine->StartWrite(kind);
  absl::Status added;
  if constexpr (std::is_same_v<Request, adapt::v1::AdaptRequest>) {
    added = session->Add(request.tenant(), request.store(), request.examples(), request.sequence(),
                         request.passes() % 4, request.restart_sequence());
  } else {
    added = session->Add(request.tenant(), request.store(), request.examples());
  }
  if (!added.ok()) {
    // Nothing was committed: the store is as it was.
    if (Fingerprint(store) != before) __builtin_trap();
    return;
  }
  (void)session->Finish();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t selector = data[0];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  // Bit 7 keeps the names the message carries; otherwise they name one of the stores.
  const bool own_names = (selector & 0x80) != 0;
  const std::string& store = Env().store_names[(selector >> 3) % Env().store_names.size()];
  auto name = [&](auto& message) {
    if (own_names) return;
    message.set_tenant("t");
    message.set_store(store);
  };
  adaptd::Engine& engine = *Env().engine;
  switch (selector & 0x7) {
    case 0:
    case 1: {
      adapt::v1::AdaptRequest request;
      if (!request.ParseFromString(body)) return 0;
      name(request);
      Write(request, adaptd::TxnKind::kAdapt, store);
      break;
    }
    case 2: {
      adapt::v1::ForgetRequest request;
      if (!request.ParseFromString(body)) return 0;
      name(request);
      Write(request, adaptd::TxnKind::kForget, store);
      break;
    }
    case 3:
    case 4: {
      adapt::v1::PredictRequest request;
      if (!request.ParseFromString(body)) return 0;
      name(request);
      (void)engine.Predict(request);
      break;
    }
    case 5:
    case 6: {
      adapt::v1::CreateStoreRequest request;
      if (!request.ParseFromString(body)) return 0;
      if (!own_names) {
        request.set_tenant("fuzz");
        request.set_store("new");
      }
      if (engine.CreateStore(request).ok()) {
        adapt::v1::DeleteStoreRequest del;
        del.set_tenant(request.tenant());
        del.set_store(request.store());
        (void)engine.DeleteStore(del);
      }
      break;
    }
    default: {
      adapt::v1::CompileRequest request;
      if (!request.ParseFromString(body)) return 0;
      name(request);
      absl::Notification done;
      engine.Compile(request,
                     [&done](absl::StatusOr<adapt::v1::CompileResponse>) { done.Notify(); });
      done.WaitForNotification();
      break;
    }
  }
  return 0;
}
