#include "client/adaptctl/settings.h"

#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace adaptctl {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

struct Setting {
  std::string key;
  std::string value;
};

absl::StatusOr<Setting> SplitSetting(absl::string_view setting) {
  const size_t equals = setting.find('=');
  if (equals == absl::string_view::npos || equals == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--set ", setting, ": expected KEY=VALUE"));
  }
  Setting split;
  split.key = std::string(absl::StripAsciiWhitespace(setting.substr(0, equals)));
  split.value = std::string(absl::StripAsciiWhitespace(setting.substr(equals + 1)));
  return split;
}

// "auto-compile-every" and "Auto_Compile_Every" both name auto_compile_every.
std::string NormalizeKey(absl::string_view key) {
  std::string normalized = absl::AsciiStrToLower(key);
  for (char& c : normalized) {
    if (c == '-') c = '_';
  }
  return normalized;
}

// The prefix of an enum's value names: "KEY_NORM_" for KeyNorm.
std::string EnumPrefix(const EnumDescriptor& type) {
  std::string prefix;
  for (size_t i = 0; i < type.name().size(); ++i) {
    const char c = type.name()[i];
    if (i > 0 && absl::ascii_isupper(static_cast<unsigned char>(c))) prefix.push_back('_');
    prefix.push_back(absl::ascii_toupper(static_cast<unsigned char>(c)));
  }
  prefix.push_back('_');
  return prefix;
}

absl::Status BadValue(const FieldDescriptor& field, absl::string_view value,
                      absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("--set ", field.name(), "=", value, ": expected ", expected));
}

absl::StatusOr<const EnumValueDescriptor*> ParseEnum(const FieldDescriptor& field,
                                                     absl::string_view text) {
  const EnumDescriptor& type = *field.enum_type();
  const std::string upper = absl::AsciiStrToUpper(text);
  const std::string prefix = EnumPrefix(type);
  std::vector<std::string> short_names;
  for (int i = 0; i < type.value_count(); ++i) {
    const EnumValueDescriptor* value = type.value(i);
    if (value->name() == upper || value->name() == prefix + upper) return value;
    absl::string_view short_name = value->name();
    absl::ConsumePrefix(&short_name, prefix);
    if (short_name != "UNSPECIFIED") short_names.emplace_back(short_name);
  }
  return BadValue(field, text, absl::StrCat("one of ", absl::StrJoin(short_names, ", ")));
}

// Sets (or, for a repeated field, appends) one value.
absl::Status SetOne(Message& message, const FieldDescriptor& field, absl::string_view text) {
  const Reflection& reflection = *message.GetReflection();
  const bool repeated = field.is_repeated();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double value;
      if (!absl::SimpleAtod(text, &value) || !std::isfinite(value)) {
        return BadValue(field, text, "a finite number");
      }
      if (field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
        repeated ? reflection.AddFloat(&message, &field, static_cast<float>(value))
                 : reflection.SetFloat(&message, &field, static_cast<float>(value));
      } else {
        repeated ? reflection.AddDouble(&message, &field, value)
                 : reflection.SetDouble(&message, &field, value);
      }
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t value;
      if (!absl::SimpleAtoi(text, &value)) return BadValue(field, text, "a 32-bit integer");
      repeated ? reflection.AddInt32(&message, &field, value)
               : reflection.SetInt32(&message, &field, value);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t value;
      if (!absl::SimpleAtoi(text, &value)) return BadValue(field, text, "a 64-bit integer");
      repeated ? reflection.AddInt64(&message, &field, value)
               : reflection.SetInt64(&message, &field, value);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t value;
      if (!absl::SimpleAtoi(text, &value)) {
        return BadValue(field, text, "an unsigned 32-bit integer");
      }
      repeated ? reflection.AddUInt32(&message, &field, value)
               : reflection.SetUInt32(&message, &field, value);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t value;
      if (!absl::SimpleAtoi(text, &value)) {
        return BadValue(field, text, "an unsigned 64-bit integer");
      }
      repeated ? reflection.AddUInt64(&message, &field, value)
               : reflection.SetUInt64(&message, &field, value);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool value;
      if (!absl::SimpleAtob(text, &value)) return BadValue(field, text, "true or false");
      repeated ? reflection.AddBool(&message, &field, value)
               : reflection.SetBool(&message, &field, value);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      absl::StatusOr<const EnumValueDescriptor*> value = ParseEnum(field, text);
      if (!value.ok()) return value.status();
      repeated ? reflection.AddEnum(&message, &field, *value)
               : reflection.SetEnum(&message, &field, *value);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_STRING:
      repeated ? reflection.AddString(&message, &field, std::string(text))
               : reflection.SetString(&message, &field, std::string(text));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("--set ", field.name(), ": not settable"));
}

// Sets `key` on `message`, or fails listing `extra_keys` and the message's keys as valid.
absl::Status SetFieldOrExplain(Message& message, absl::string_view key, absl::string_view value,
                               const std::vector<std::string>& extra_keys,
                               absl::string_view owner) {
  const Descriptor& descriptor = *message.GetDescriptor();
  const FieldDescriptor* field = descriptor.FindFieldByName(NormalizeKey(key));
  if (field == nullptr || field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    std::vector<std::string> keys = extra_keys;
    for (std::string& name : SettableKeys(descriptor)) keys.push_back(std::move(name));
    return absl::InvalidArgumentError(absl::StrCat("--set: unknown key \"", key, "\" for ", owner,
                                                   "; valid keys: ", absl::StrJoin(keys, ", ")));
  }
  if (!field->is_repeated()) return SetOne(message, *field, value);
  message.GetReflection()->ClearField(&message, field);
  if (value.empty()) return absl::OkStatus();
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    absl::Status status = SetOne(message, *field, absl::StripAsciiWhitespace(item));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> StoreKindNames() {
  std::vector<std::string> names;
  const google::protobuf::EnumDescriptor* kinds = adapt::v1::StoreKind_descriptor();
  for (int i = 0; i < kinds->value_count(); ++i) {
    if (kinds->value(i)->number() == adapt::v1::STORE_KIND_UNSPECIFIED) continue;
    absl::string_view name = kinds->value(i)->name();
    absl::ConsumePrefix(&name, "STORE_KIND_");
    names.push_back(absl::AsciiStrToLower(name));
  }
  return names;
}

absl::StatusOr<adapt::v1::StoreKind> ParseStoreKind(absl::string_view text) {
  const std::string upper = absl::StrCat("STORE_KIND_", absl::AsciiStrToUpper(text));
  const google::protobuf::EnumValueDescriptor* value =
      adapt::v1::StoreKind_descriptor()->FindValueByName(upper);
  if (value != nullptr && value->number() != adapt::v1::STORE_KIND_UNSPECIFIED) {
    return static_cast<adapt::v1::StoreKind>(value->number());
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--kind ", text, ": expected ", absl::StrJoin(StoreKindNames(), ", ")));
}

const FieldDescriptor* KindParamsField(adapt::v1::StoreKind kind) {
  const google::protobuf::EnumValueDescriptor* value =
      adapt::v1::StoreKind_descriptor()->FindValueByNumber(kind);
  if (value == nullptr || kind == adapt::v1::STORE_KIND_UNSPECIFIED) return nullptr;
  absl::string_view name = value->name();
  absl::ConsumePrefix(&name, "STORE_KIND_");
  const FieldDescriptor* field =
      adapt::v1::StoreSpec::descriptor()->FindFieldByName(absl::AsciiStrToLower(name));
  const google::protobuf::OneofDescriptor* params =
      adapt::v1::StoreSpec::descriptor()->FindOneofByName("params");
  if (field == nullptr || field->containing_oneof() != params) return nullptr;
  return field;
}

std::string StoreSettingsHelp() {
  std::string help = "Settable with --set KEY=VALUE, by kind (and dim=D for every kind):";
  for (const std::string& name : StoreKindNames()) {
    absl::StatusOr<adapt::v1::StoreKind> kind = ParseStoreKind(name);
    const FieldDescriptor* field = kind.ok() ? KindParamsField(*kind) : nullptr;
    const std::vector<std::string> keys =
        field == nullptr ? std::vector<std::string>{} : SettableKeys(*field->message_type());
    absl::StrAppend(&help, "\n  ", name, ": ", keys.empty() ? "(none)" : absl::StrJoin(keys, ", "));
  }
  return help;
}

absl::StatusOr<adapt::v1::OutputSpec> ParseOutputSpec(absl::string_view text) {
  adapt::v1::OutputSpec output;
  uint32_t dim = 0;
  absl::string_view rest = text;
  if (text == "labels") {
    output.set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  } else if (text == "next") {
    output.set_kind(adapt::v1::OutputSpec::KIND_NEXT);
  } else if (absl::ConsumePrefix(&rest, "vector:") && absl::SimpleAtoi(rest, &dim) && dim > 0) {
    output.set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
    output.set_dim(dim);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--output ", text, ": expected labels, vector:M (M >= 1) or next"));
  }
  return output;
}

std::vector<std::string> SettableKeys(const Descriptor& descriptor) {
  std::vector<std::string> keys;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const FieldDescriptor* field = descriptor.field(i);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) keys.push_back(field->name());
  }
  return keys;
}

absl::Status SetField(Message& message, absl::string_view key, absl::string_view value) {
  return SetFieldOrExplain(message, key, value, {}, message.GetDescriptor()->full_name());
}

absl::Status ApplyStoreSettings(const std::vector<std::string>& settings,
                                adapt::v1::StoreSpec& spec) {
  if (spec.kind() == adapt::v1::STORE_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError("the store kind is not set");
  }
  const FieldDescriptor* params_field = KindParamsField(spec.kind());
  Message* params =
      params_field == nullptr ? nullptr : spec.GetReflection()->MutableMessage(&spec, params_field);
  const std::string kind_name =
      params_field == nullptr ? std::to_string(spec.kind()) : params_field->name();
  const std::string owner = absl::StrCat(
      absl::string_view("aeiou").find(kind_name[0]) == absl::string_view::npos ? "a " : "an ",
      kind_name, " store");
  for (const std::string& setting : settings) {
    absl::StatusOr<Setting> split = SplitSetting(setting);
    if (!split.ok()) return split.status();
    if (NormalizeKey(split->key) == "dim") {
      uint32_t dim;
      if (!absl::SimpleAtoi(split->value, &dim)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--set dim=", split->value, ": expected an unsigned 32-bit integer"));
      }
      spec.set_dim(dim);
      continue;
    }
    if (params == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("--set: unknown key \"", split->key, "\" for ",
                                                     owner,
                                                     ", which has no parameters; valid keys: dim"));
    }
    absl::Status status = SetFieldOrExplain(*params, split->key, split->value, {"dim"}, owner);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ApplyCompileSettings(const std::vector<std::string>& settings,
                                  adapt::v1::CompileRequest& request) {
  for (const std::string& setting : settings) {
    absl::StatusOr<Setting> split = SplitSetting(setting);
    if (!split.ok()) return split.status();
    absl::Status status =
        SetFieldOrExplain(*request.mutable_faast(), split->key, split->value, {}, "compile");
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace adaptctl
