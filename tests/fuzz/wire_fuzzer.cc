// Fuzzes the gRPC edge's own request parser (server/rpc/wire.h) over every request type the
// service reads, picked by the first byte. Besides crashing, it checks the parser's promise:
// bytes that parse hold no string field that is invalid UTF-8, and bytes in which the walker
// finds one are refused naming exactly that field.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "adapt/v1/adapt.pb.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "server/rpc/wire.h"

namespace {

std::unique_ptr<google::protobuf::Message> NewRequest(uint8_t pick) {
  switch (pick % 8) {
    case 0:
      return std::make_unique<adapt::v1::AdaptRequest>();
    case 1:
      return std::make_unique<adapt::v1::PredictRequest>();
    case 2:
      return std::make_unique<adapt::v1::CreateStoreRequest>();
    case 3:
      return std::make_unique<adapt::v1::ForgetRequest>();
    case 4:
      return std::make_unique<adapt::v1::CompileRequest>();
    case 5:
      return std::make_unique<adapt::v1::StoreChunk>();
    case 6:
      return std::make_unique<adapt::v1::ExportStoreRequest>();
    default:
      return std::make_unique<adapt::v1::ListStoresRequest>();
  }
}

void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "wire_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  adaptd::QuietProtobufUtf8Log();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::unique_ptr<google::protobuf::Message> message = NewRequest(data[0]);
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  grpc::Slice slice(bytes);
  const grpc::ByteBuffer buffer(&slice, 1);
  const grpc::Status status = adaptd::ParseMessage(buffer, message.get());
  const std::string field = adaptd::FindInvalidUtf8Field(bytes, *message->GetDescriptor());
  if (status.ok() && !field.empty()) Fail("parsed although this field is not UTF-8", field);
  if (!status.ok()) {
    if (status.error_code() != grpc::StatusCode::INVALID_ARGUMENT) {
      Fail("refused with a code other than INVALID_ARGUMENT", status.error_message());
    }
    if (!field.empty() && status.error_message() != field + ": not valid UTF-8") {
      Fail("refused without naming the field", status.error_message());
    }
    if (message->ByteSizeLong() != 0) Fail("a refused message kept content", "");
  }
  return 0;
}
