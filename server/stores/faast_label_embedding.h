// FAAST's label-embedding mode, the part that needs the label encoder: a faast label store
// whose spec names an output.label_encoder learns each example's target as the embedding of
// its label's name (instead of a one-hot column) and decodes predictions by cosine against
// the label embeddings (faast_weights.h). Each label is embedded once, at its first adapt;
// the store keeps that embedding, snapshots it, and reuses it for later examples.
//
// Thread safety: the function reads the store through its own locks.
#ifndef ADAPTD_SERVER_STORES_FAAST_LABEL_EMBEDDING_H_
#define ADAPTD_SERVER_STORES_FAAST_LABEL_EMBEDDING_H_

#include "absl/status/status.h"
#include "server/encoders/encoder.h"
#include "server/stores/store.h"

namespace adaptd {

// Fills batch->targets (rows × label_dim) with the embedding of each row's label: the one the
// store holds, or `label_encoder`'s (all new distinct labels of the batch in one Encode call).
// FailedPrecondition when `store` is not a label-embedding faast store or the encoder's width
// differs from the store's label_dim.
absl::Status EmbedLabelTargets(const Encoder& label_encoder, const Store& store,
                               ExampleBatch* batch);

// A new faast store whose spec declares labels (output.labels): embeds them with
// `label_encoder` and hands them to the store (FaastStore::SeedDeclaredLabels), which then
// answers zero-shot when its spec asks for it. OK and nothing done when none are declared.
absl::Status SeedDeclaredLabels(const Encoder& label_encoder, Store* store);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_LABEL_EMBEDDING_H_
