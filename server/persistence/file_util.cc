#include "server/persistence/file_util.h"

#include <filesystem>

namespace adaptd {

std::string ParentDir(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

absl::Status WriteFileAtomically(Env* env, const std::string& path, std::string_view data,
                                 bool sync) {
  const std::string tmp = path + ".tmp";
  auto file = env->NewWritableFile(tmp, /*truncate=*/true);
  if (!file.ok()) return file.status();
  absl::Status status = (*file)->Append(data);
  if (status.ok() && sync) status = (*file)->Sync();
  const absl::Status closed = (*file)->Close();
  if (status.ok()) status = closed;
  if (status.ok()) status = env->RenameFile(tmp, path);
  if (!status.ok()) {
    (void)env->RemoveFile(tmp);  // best effort; recovery deletes .tmp left-overs too
    return status;
  }
  if (!sync) return absl::OkStatus();
  return env->SyncDir(ParentDir(path));
}

}  // namespace adaptd
