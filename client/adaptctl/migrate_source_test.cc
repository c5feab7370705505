#include "client/adaptctl/migrate_source.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace adaptctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class MigrateSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "migrate-source-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& relative, const std::string& text) {
    fs::create_directories((fs::path(dir_) / relative).parent_path());
    std::ofstream(fs::path(dir_) / relative) << text;
  }

  std::string dir_;
};

TEST_F(MigrateSourceTest, DrainedMembersFromTheClusterStateFile) {
  EXPECT_TRUE(ReadDrainedMembers(dir_).value().empty());  // never written
  Write("cluster.state",
        "adaptd cluster state 1\ndraining b\nsettled 00ff00ff00ff00ff\n"
        "draining  c\n");
  EXPECT_EQ(ReadDrainedMembers(dir_).value(), (std::set<std::string>{"b", "c"}));
}

TEST_F(MigrateSourceTest, ADirectoryIsInUseWhileAProcessLocksItsStateDatabase) {
  EXPECT_EQ(CheckNotInUse(dir_ + "/missing").code(), absl::StatusCode::kNotFound);
  Write("state/lock.mdb", "");
  Write("state/catalog/lock.mdb", "");
  EXPECT_TRUE(CheckNotInUse(dir_).ok());

  // A process holding a shared lock on the catalog's lock file, as a running adaptd's LMDB does.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const std::string lock_path = dir_ + "/state/catalog/lock.mdb";
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    const int fd = open(lock_path.c_str(), O_RDONLY);
    struct flock lock {};
    lock.l_type = F_RDLCK;
    lock.l_whence = SEEK_SET;
    if (fd < 0 || fcntl(fd, F_SETLK, &lock) != 0) _exit(1);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  const absl::Status in_use = CheckNotInUse(dir_);
  EXPECT_EQ(in_use.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(in_use.message(), HasSubstr(absl::StrCat("in use by process ", holder)));
  EXPECT_THAT(in_use.message(), HasSubstr("state/catalog/lock.mdb"));
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  EXPECT_TRUE(CheckNotInUse(dir_).ok());
}

TEST_F(MigrateSourceTest, TheCopyIsRefusedOverAnExistingScratchDirectory) {
  Write("source/wal/x", "bytes");
  fs::create_directories(dir_ + "/scratch");
  EXPECT_EQ(
      ScratchSource::Create(dir_ + "/source", dir_ + "/scratch", "/bin/true", {}).status().code(),
      absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(ScratchSource::Create(dir_ + "/source", dir_ + "/copy", "/bin/true", {}).ok());
  std::ifstream copied(dir_ + "/copy/wal/x");
  std::string text;
  copied >> text;
  EXPECT_EQ(text, "bytes");
}

}  // namespace
}  // namespace adaptctl
