#include "server/encoders/encoder_set.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/names.h"
#include "server/encoders/bert/sentence_bert_encoder.h"
#include "server/encoders/fasttext_encoder.h"
#include "server/encoders/fingerprint.h"
#include "server/encoders/hashed_ngrams_encoder.h"
#include "server/encoders/identity_encoder.h"
#include "server/encoders/onnx/onnx_encoder.h"
#include "server/encoders/random_features_encoder.h"
#include "server/scheduler/scheduler_config.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

constexpr const char* kKnownTypes =
    "identity, hashed_ngrams, random_features, fasttext, sentence_bert, onnx";

template <typename T>
absl::StatusOr<std::unique_ptr<Encoder>> Upcast(absl::StatusOr<std::unique_ptr<T>> made) {
  if (!made.ok()) return made.status();
  return std::unique_ptr<Encoder>(std::move(*made));
}

// One encoder of the config; `field` is "encoders[i]".
absl::StatusOr<std::unique_ptr<Encoder>> MakeEncoder(const adapt::v1::EncoderConfig& config,
                                                     const std::string& field,
                                                     kernels::Backend* backend,
                                                     const EncoderSetOptions& options) {
  const std::string& type = config.type();
  if (type == "identity") return std::unique_ptr<Encoder>(new IdentityEncoder(config));
  if (type == "hashed_ngrams") return Upcast(HashedNgramsEncoder::Create(config, field));
  if (type == "random_features") return Upcast(RandomFeaturesEncoder::Create(config, field));
  if (type == "fasttext") return Upcast(FastTextEncoder::Create(config, field));
  if (type == "sentence_bert") return MakeSentenceBertEncoder(config, field, backend);
  if (type == "onnx") {
    OnnxEncoderOptions onnx{options.onnxruntime_library, options.backend_threads, options.device};
    if (options.on_truncated_texts) {
      onnx.on_truncated = [hook = options.on_truncated_texts,
                           name = config.name()](uint64_t texts) { hook(name, texts); };
    }
    return Upcast(OnnxEncoder::Create(config, field, onnx));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ".type: unknown encoder type '", type, "' (known: ", kKnownTypes, ")"));
}

}  // namespace

EncoderSetOptions EncoderSetOptionsFromConfig(const adapt::v1::ServerConfig& config) {
  return {config.onnxruntime_library(),
          BackendThreadsFromConfig(config, std::thread::hardware_concurrency()), config.device()};
}

absl::StatusOr<std::unique_ptr<EncoderSet>> EncoderSet::Create(
    const google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig>& configs,
    kernels::Backend* backend, const EncoderSetOptions& options) {
  auto set = std::make_unique<EncoderSet>();
  for (int i = 0; i < configs.size(); ++i) {
    const auto& config = configs[i];
    const std::string field = absl::StrCat("encoders[", i, "]");
    if (auto s = ValidateName(field + ".name", config.name()); !s.ok()) return s;
    if (set->encoders_.contains(config.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".name: duplicate encoder name '", config.name(), "'"));
    }
    absl::StatusOr<std::unique_ptr<Encoder>> encoder = MakeEncoder(config, field, backend, options);
    if (!encoder.ok()) return encoder.status();
    set->encoders_.emplace(config.name(), *std::move(encoder));
  }
  return set;
}

const Encoder* EncoderSet::Find(const std::string& name) const {
  auto it = encoders_.find(name);
  return it == encoders_.end() ? nullptr : it->second.get();
}

adapt::v1::ListEncodersResponse EncoderSet::List() const {
  adapt::v1::ListEncodersResponse response;
  for (const auto& [name, encoder] : encoders_) *response.add_encoders() = encoder->info();
  return response;
}

std::string EncoderSet::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, encoder] : encoders_) names.push_back(name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<const Encoder*> EncoderSet::ForStore(const adapt::v1::StoreSpec& spec) const {
  const Encoder* encoder = Find(spec.encoder());
  if (encoder == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("the store's encoder '", spec.encoder(),
                     "' is not hosted by this server (it hosts: ", Names(), ")"));
  }
  if (absl::Status s = CheckEncoderFingerprint(spec, *encoder); !s.ok()) return s;
  return encoder;
}

absl::StatusOr<const Encoder*> EncoderSet::LabelEncoderForStore(
    const adapt::v1::StoreSpec& spec) const {
  const std::string& name = spec.output().label_encoder();
  if (name.empty()) return nullptr;
  const Encoder* encoder = Find(name);
  if (encoder == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("the store's label encoder '", name,
                     "' is not hosted by this server (it hosts: ", Names(), ")"));
  }
  if (absl::Status s = CheckLabelEncoderFingerprint(spec, *encoder); !s.ok()) return s;
  return encoder;
}

absl::Status EncoderSet::BindToSpec(adapt::v1::StoreSpec* spec) const {
  const Encoder* encoder = Find(spec->encoder());
  if (encoder == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("spec.encoder: unknown encoder '",
                                                   spec->encoder(),
                                                   "' (this server hosts: ", Names(), ")"));
  }
  if (absl::Status s = CheckEncoderFingerprint(*spec, *encoder); !s.ok()) return s;
  spec->set_encoder_fingerprint(encoder->fingerprint());
  adapt::v1::OutputSpec* output = spec->mutable_output();
  const std::string name = output->label_encoder();
  if (name.empty()) {
    output->clear_label_encoder_fingerprint();
    output->clear_label_dim();
    return absl::OkStatus();
  }
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("spec.output.label_encoder: ", why));
  };
  const StoreKind* kind = StoreKinds::Global().Find(spec->kind());
  if (kind == nullptr || !kind->embeds_labels) {
    std::string embedding;
    for (const StoreKind* k : StoreKinds::Global().All()) {
      if (k->embeds_labels) absl::StrAppend(&embedding, embedding.empty() ? "" : ", ", k->name);
    }
    return bad(absl::StrCat("only ", embedding, " stores embed their labels"));
  }
  if (output->kind() != adapt::v1::OutputSpec::KIND_LABELS) {
    return bad("a label encoder needs a labels output");
  }
  const Encoder* label_encoder = Find(name);
  if (label_encoder == nullptr) {
    return bad(absl::StrCat("unknown encoder '", name, "' (this server hosts: ", Names(), ")"));
  }
  if (!label_encoder->takes_text()) {
    return bad(absl::StrCat("encoder '", name, "' takes vectors; label names are text"));
  }
  if (label_encoder->dim() < 1) {
    return bad(absl::StrCat("encoder '", name, "' has no fixed output dimension"));
  }
  if (absl::Status s = CheckLabelEncoderFingerprint(*spec, *label_encoder); !s.ok()) return s;
  output->set_label_encoder_fingerprint(label_encoder->fingerprint());
  output->set_label_dim(static_cast<uint32_t>(label_encoder->dim()));
  return absl::OkStatus();
}

}  // namespace adaptd
