// The spelling of a compute device in the config and on the command line: "cpu" (or empty),
// "cuda" (device 0) or "cuda:N". Header-only so the config validation can use it without
// linking the backends. Thread safety: stateless.
#ifndef ADAPTD_KERNELS_DEVICE_NAME_H_
#define ADAPTD_KERNELS_DEVICE_NAME_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace adaptd::kernels {

struct DeviceName {
  bool cuda = false;
  int index = 0;  // the CUDA device; 0 for the CPU
};

inline absl::StatusOr<DeviceName> ParseDeviceName(std::string_view device) {
  if (device.empty() || device == "cpu") return DeviceName{};
  if (device == "cuda") return DeviceName{true, 0};
  constexpr std::string_view kPrefix = "cuda:";
  int index = -1;
  if (device.substr(0, kPrefix.size()) == kPrefix &&
      absl::SimpleAtoi(
          absl::string_view(device.data() + kPrefix.size(), device.size() - kPrefix.size()),
          &index) &&
      index >= 0) {
    return DeviceName{true, index};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "device: \"", std::string(device), "\" is not cpu, cuda or cuda:N (N a device index)"));
}

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_DEVICE_NAME_H_
