#include "client/adaptctl/proto_json.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "client/adaptctl/numbers.h"

namespace adaptctl {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A float widened to the double nearest to its shortest decimal form: 0.1f prints as 0.1.
double WidenFloat(float value) {
  double widened = value;
  absl::SimpleAtod(FormatFloat(value), &widened);
  return widened;
}

// Element `index` of a repeated field, or the singular value when index < 0.
Json FieldValue(const Message& message, const FieldDescriptor& field, int index) {
  const Reflection& r = *message.GetReflection();
  const bool one = index < 0;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return one ? r.GetInt32(message, &field) : r.GetRepeatedInt32(message, &field, index);
    case FieldDescriptor::CPPTYPE_INT64:
      return one ? r.GetInt64(message, &field) : r.GetRepeatedInt64(message, &field, index);
    case FieldDescriptor::CPPTYPE_UINT32:
      return one ? r.GetUInt32(message, &field) : r.GetRepeatedUInt32(message, &field, index);
    case FieldDescriptor::CPPTYPE_UINT64:
      return one ? r.GetUInt64(message, &field) : r.GetRepeatedUInt64(message, &field, index);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return one ? r.GetDouble(message, &field) : r.GetRepeatedDouble(message, &field, index);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return WidenFloat(one ? r.GetFloat(message, &field)
                            : r.GetRepeatedFloat(message, &field, index));
    case FieldDescriptor::CPPTYPE_BOOL:
      return one ? r.GetBool(message, &field) : r.GetRepeatedBool(message, &field, index);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int number =
          one ? r.GetEnumValue(message, &field) : r.GetRepeatedEnumValue(message, &field, index);
      const auto* value = field.enum_type()->FindValueByNumber(number);
      if (value == nullptr) return number;
      return value->name();
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string text =
          one ? r.GetString(message, &field) : r.GetRepeatedString(message, &field, index);
      if (field.type() == FieldDescriptor::TYPE_BYTES) return absl::Base64Escape(text);
      return text;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageToJson(one ? r.GetMessage(message, &field)
                               : r.GetRepeatedMessage(message, &field, index));
  }
  return nullptr;
}

}  // namespace

Json MessageToJson(const Message& message) {
  Json object = Json::object();
  const Reflection& reflection = *message.GetReflection();
  const google::protobuf::Descriptor& descriptor = *message.GetDescriptor();
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const FieldDescriptor& field = *descriptor.field(i);
    if (field.is_repeated()) {
      Json array = Json::array();
      const int size = reflection.FieldSize(message, &field);
      for (int j = 0; j < size; ++j) array.push_back(FieldValue(message, field, j));
      object[field.name()] = std::move(array);
    } else if (!field.has_presence() || reflection.HasField(message, &field)) {
      object[field.name()] = FieldValue(message, field, -1);
    }
  }
  return object;
}

}  // namespace adaptctl
