#include "server/stores/falcon_chunked.h"

#include <algorithm>
#include <vector>

#include "server/base/status_macros.h"

namespace adaptd {
namespace {

// One chunk on the backend (kernels::Backend::FalconChunkStep): the history and the chunk's
// pairs as one list, the per-step windows, and per column group the rates log γ_t and η_t/B_t.
// Without history the chunk's own rows are the list; with it, the list is built in `xe` and
// `ve`, buffers the caller keeps from chunk to chunk.
template <typename T>
absl::Status ApplyChunk(const FalconConfig& config, const std::vector<std::vector<int64_t>>& groups,
                        const FalconStep* steps, const T* keys, const T* targets, int64_t c,
                        FalconMemoryT<T>* mem, T* predictions, kernels::Backend* backend,
                        std::vector<T>* xe, std::vector<T>* ve) {
  const int64_t d = mem->dim, m = mem->columns;
  if (mem->history > 0) {
    xe->assign(mem->history_keys.begin(), mem->history_keys.end());
    xe->insert(xe->end(), keys, keys + c * d);
    ve->assign(mem->history_targets.begin(), mem->history_targets.end());
    ve->insert(ve->end(), targets, targets + c * m);
  }
  std::vector<int64_t> window(c);
  for (int64_t t = 0; t < c; ++t) window[t] = steps[t].window;
  std::vector<std::vector<double>> log_gamma(groups.size()), rate(groups.size());
  std::vector<kernels::FalconColumnGroup> column_groups(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const double beta = config.BetaOf(groups[g][0]);
    log_gamma[g].resize(c);
    rate[g].resize(c);
    for (int64_t t = 0; t < c; ++t) {
      const FalconRates rates = RatesOf(config, steps[t], beta);
      log_gamma[g][t] = rates.log_gamma;
      rate[g][t] = rates.eta / static_cast<double>(steps[t].window);
    }
    column_groups[g] = {groups[g], log_gamma[g], rate[g]};
  }
  kernels::FalconChunk<T> chunk;
  chunk.d = d;
  chunk.m = m;
  chunk.h = mem->history;
  chunk.c = c;
  chunk.keys = mem->history > 0 ? xe->data() : keys;
  chunk.targets = mem->history > 0 ? ve->data() : targets;
  chunk.window = window;
  chunk.residual = config.residual();
  chunk.groups = column_groups;
  chunk.s = mem->s.data();
  chunk.predictions = predictions;
  return backend->FalconChunkStep(chunk);
}

}  // namespace

template <typename T>
absl::Status FalconChunked(const FalconConfig& config, int64_t chunk, const T* keys,
                           const T* targets, int64_t rows, FalconMemoryT<T>* mem,
                           typename FalconMemoryT<T>::Value* predictions,
                           kernels::Backend* backend) {
  if (chunk < 1) return absl::InvalidArgumentError("chunk: must be at least 1");
  const int64_t d = mem->dim, m = mem->columns;
  const std::vector<FalconStep> steps =
      FalconSchedule(config, mem->history_keys.data(), mem->history, keys, rows, d, mem->steps);
  const std::vector<std::vector<int64_t>> groups = ColumnGroups(config, m);
  std::vector<T> xe, ve;
  for (int64_t first = 0; first < rows; first += chunk) {
    const int64_t c = std::min(chunk, rows - first);
    if (m > 0) {
      RETURN_IF_ERROR(ApplyChunk(
          config, groups, steps.data() + first, keys + first * d, targets + first * m, c, mem,
          predictions == nullptr ? nullptr : predictions + first * m, backend, &xe, &ve));
    }
    if (config.window > 1) {
      mem->PushHistory(keys + first * d, targets + first * m, c, config.window - 1);
    }
  }
  mem->steps += rows;
  return absl::OkStatus();
}

template absl::Status FalconChunked<double>(const FalconConfig&, int64_t, const double*,
                                            const double*, int64_t, FalconMemoryT<double>*, double*,
                                            kernels::Backend*);
template absl::Status FalconChunked<float>(const FalconConfig&, int64_t, const float*, const float*,
                                           int64_t, FalconMemoryT<float>*, float*,
                                           kernels::Backend*);

}  // namespace adaptd
