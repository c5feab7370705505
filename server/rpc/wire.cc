#include "server/rpc/wire.h"

#include <atomic>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "server/base/utf8.h"

namespace adaptd {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

constexpr int kMaxDepth = 100;  // protobuf's own default recursion limit

// Walks the fields of one message up to the current limit of `in`. Returns false to stop:
// with `*found` set when a string field is not valid UTF-8, empty when the bytes are
// malformed.
bool Walk(CodedInputStream* in, const Descriptor& type, const std::string& prefix, int depth,
          std::string* found) {
  if (depth > kMaxDepth) return false;
  std::map<int, int> seen;  // per field number: how many values came so far
  while (true) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) return true;  // the end of this message (or of the bytes)
    const FieldDescriptor* field = type.FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    const bool delimited =
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (field == nullptr || !delimited ||
        (field->type() != FieldDescriptor::TYPE_STRING &&
         field->type() != FieldDescriptor::TYPE_MESSAGE)) {
      if (!WireFormatLite::SkipField(in, tag)) return false;
      continue;
    }
    const int index = seen[field->number()]++;
    std::string path = absl::StrCat(prefix, field->name());
    if (field->is_repeated()) absl::StrAppend(&path, "[", index, "]");
    uint32_t length = 0;
    if (!in->ReadVarint32(&length)) return false;
    if (field->type() == FieldDescriptor::TYPE_STRING) {
      std::string value;
      if (!in->ReadString(&value, static_cast<int>(length))) return false;
      if (!IsValidUtf8(value)) {
        *found = std::move(path);
        return false;
      }
      continue;
    }
    const CodedInputStream::Limit limit = in->PushLimit(static_cast<int>(length));
    if (!Walk(in, *field->message_type(), absl::StrCat(path, "."), depth + 1, found)) {
      return false;
    }
    if (!in->ConsumedEntireMessage()) return false;
    in->PopLimit(limit);
  }
}

constexpr char kUtf8LogText[] = "contains invalid UTF-8 data when parsing a protocol buffer";
std::atomic<google::protobuf::LogHandler*> previous_handler{nullptr};

void FilteredLogHandler(google::protobuf::LogLevel level, const char* filename, int line,
                        const std::string& message) {
  if (absl::StrContains(message, kUtf8LogText)) return;
  if (auto* previous = previous_handler.load(); previous != nullptr) {
    previous(level, filename, line, message);
  }
}

}  // namespace

std::string FindInvalidUtf8Field(const std::string& bytes, const Descriptor& type) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  std::string found;
  Walk(&in, type, "", 0, &found);
  return found;
}

grpc::Status ParseMessage(const grpc::ByteBuffer& buffer, google::protobuf::Message* message) {
  message->Clear();
  {
    grpc::ByteBuffer view(buffer);  // shares the slices
    grpc::ProtoBufferReader reader(&view);
    if (reader.status().ok() && message->ParseFromZeroCopyStream(&reader)) {
      return grpc::Status::OK;
    }
  }
  message->Clear();
  // The slow path, for refused requests only: find out why.
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (buffer.Dump(&slices).ok()) {
    for (const grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
  }
  const std::string field = FindInvalidUtf8Field(bytes, *message->GetDescriptor());
  if (!field.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat(field, ": not valid UTF-8"));
  }
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("request: not a valid ", message->GetTypeName(),
                                   " message (malformed protobuf)"));
}

grpc::Status SerializeMessage(const google::protobuf::Message& message, grpc::ByteBuffer* buffer) {
  // A reactor's outgoing buffer is reused from one message to the next.
  buffer->Clear();
  bool own_buffer = false;
  return grpc::SerializationTraits<google::protobuf::Message>::Serialize(message, buffer,
                                                                         &own_buffer);
}

void QuietProtobufUtf8Log() {
  static const bool installed = [] {
    previous_handler.store(google::protobuf::SetLogHandler(&FilteredLogHandler));
    return true;
  }();
  (void)installed;
}

}  // namespace adaptd
