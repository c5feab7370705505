// The gRPC edge parses and serializes its own messages (the service's methods are registered
// raw), so a request that protobuf refuses still gets an answer that names the field: proto3
// rejects a string field holding invalid UTF-8, and gRPC alone would answer such a unary call
// UNIMPLEMENTED with no message.
#ifndef ADAPTD_SERVER_RPC_WIRE_H_
#define ADAPTD_SERVER_RPC_WIRE_H_

#include <string>

#include "google/protobuf/message.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"

namespace adaptd {

// Parses `buffer` into `message` (cleared first). A buffer that does not parse is
// INVALID_ARGUMENT: "<field path>: not valid UTF-8" when a string field is the cause (for
// example `examples[2].text`), otherwise a message naming the request type.
grpc::Status ParseMessage(const grpc::ByteBuffer& buffer, google::protobuf::Message* message);

// Serializes `message` into `buffer` (replacing its contents); INTERNAL when it cannot.
grpc::Status SerializeMessage(const google::protobuf::Message& message, grpc::ByteBuffer* buffer);

// The path of the first string field of `bytes` (wire format of `type`) whose value is not
// valid UTF-8, such as "examples[2].text"; empty when there is none or the bytes are not
// well-formed. Exposed for tests.
std::string FindInvalidUtf8Field(const std::string& bytes,
                                 const google::protobuf::Descriptor& type);

// Keeps protobuf from logging each string field it refuses as invalid UTF-8: ParseMessage
// reports those to the caller instead. Other protobuf log lines still reach stderr. Call once
// at start-up.
void QuietProtobufUtf8Log();

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_WIRE_H_
