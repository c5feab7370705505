// How the onnx encoder keeps glibc's heaps from holding on to the freed tensors of text and
// image sessions (docs/ONNX.md, "Arena"). Those sessions run without ONNX Runtime's arena, so
// every tensor is a malloc block of its batch's size, allocated and freed by the worker thread
// that runs the batch, in that thread's own heap (a glibc arena).
//
// glibc's defaults let each such heap keep up to 64 MiB resident: the mmap threshold rises to
// the largest block freed (up to 32 MiB) and the trim threshold follows at twice that, and a
// thread's heap gives back the free space at its top only when it is past the trim threshold;
// malloc_trim never shrinks the top of a thread's heap. So two settings, once per process:
//  - the heap settings (ConfigureHeapsForVaryingShapes): the mmap threshold fixed at 32 MiB
//    (where glibc's own rise ends, so blocks come from the same places) and the trim threshold
//    at kOnnxHeapTopEnv MiB (default 16), so a heap hands back the top above it when a block
//    is freed (at 4 MiB the served MiniLM's batches were handed back and faulted in again
//    each time, about 28 % more CPU a predict; at 16 MiB no consistent cost was resolved on a
//    shared machine, bench/RESULTS.md);
//  - after a text or image batch, at most once every kOnnxHeapTrimEnv seconds (default 1),
//    malloc_trim(0), which hands back the free pages inside every heap.
// Both are thread-safe; the settings are process-wide and made once.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_HEAPS_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_HEAPS_H_

#include <cstdint>

namespace adaptd {

// The environment variable that sets how often, at most, text and image batches hand the
// heaps' free pages back (malloc_trim): seconds, default 1; 0 never.
inline constexpr char kOnnxHeapTrimEnv[] = "ADAPTD_ONNX_HEAP_TRIM_SECONDS";
// The environment variable that sets the free space (MiB) a heap keeps at its top: default 16;
// 0 leaves glibc's thresholds as they are (rising with the blocks freed, up to 64 MiB kept).
inline constexpr char kOnnxHeapTopEnv[] = "ADAPTD_ONNX_HEAP_TOP_MIB";

// The mmap threshold the heap settings fix: glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on
// 64-bit systems), the level its own rise ends at.
inline constexpr int64_t kOnnxMmapThresholdBytes = int64_t{32} << 20;

// Makes the heap settings, once per process; later calls return what the first did. Returns
// the trim threshold set, in bytes, or 0 where it left glibc's thresholds alone: kOnnxHeapTopEnv
// 0, or the process's environment already setting them (MALLOC_TRIM_THRESHOLD_,
// MALLOC_MMAP_THRESHOLD_, MALLOC_TOP_PAD_, or a glibc.malloc tunable in GLIBC_TUNABLES).
int64_t ConfigureHeapsForVaryingShapes();

// After a text or image batch: malloc_trim(0) at most once every kOnnxHeapTrimEnv seconds,
// whichever thread comes first.
void TrimHeapsNowAndThen();

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_HEAPS_H_
