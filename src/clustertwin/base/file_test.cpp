#include "clustertwin/base/file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace clustertwin::base {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ct-file-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  /// Files of the directory other than `keep`: stray temporaries.
  int others(const std::string& keep) const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) n += e.path().filename() != keep ? 1 : 0;
    return n;
  }
  fs::path dir_;
};

TEST_F(FileTest, ReplacesTheFileWholeAndLeavesNoTemporary) {
  const auto p = dir_ / "out.json";
  std::ofstream(p) << "old";
  ASSERT_TRUE(write_file_atomic(p.string(), "new content"));
  EXPECT_EQ(slurp(p), "new content");
  EXPECT_EQ(others("out.json"), 0);
  // Permissions of an ordinary new file, not mkstemp's 0600.
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST_F(FileTest, MissingDirectoryIsAnErrorWithThePath) {
  auto st = write_file_atomic((dir_ / "nope" / "out.json").string(), "x");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().file.find("out.json"), std::string::npos);
  EXPECT_NE(st.error().message.find("No such file or directory"), std::string::npos)
      << st.error().message;
}

TEST_F(FileTest, DirectoryIsRefusedAndKept) {
  fs::create_directories(dir_ / "d");
  auto st = write_file_atomic((dir_ / "d").string(), "x");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("directory"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(dir_ / "d"));
}

TEST_F(FileTest, FullDeviceIsAnError) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  auto st = write_file_atomic("/dev/full", "x");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("No space left on device"), std::string::npos)
      << st.error().message;
  EXPECT_TRUE(fs::exists("/dev/full"));  // written in place, never renamed over
}

TEST_F(FileTest, SymbolicLinkKeepsPointingAtTheReplacedFile) {
  const auto real = dir_ / "real.json", link = dir_ / "link.json";
  std::ofstream(real) << "old";
  fs::create_symlink(real, link);
  ASSERT_TRUE(write_file_atomic(link.string(), "new"));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(real), "new");
}

TEST(ReadAll, ReadsAWholeStreamUpToTheLimit) {
  const std::string text(200'000, 'x');  // several read chunks
  std::istringstream in(text);
  auto r = read_all(in, 200'000);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, text);
  std::istringstream empty;
  EXPECT_EQ(read_all(empty).value(), "");
}

TEST(ReadAll, MoreThanTheLimitIsAnError) {
  std::istringstream in(std::string(200'001, 'x'));
  auto r = read_all(in, 200'000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "more than 200000 bytes, the most read from this input");
}

TEST(ReadAll, AnEndlessDeviceStopsAtTheLimit) {
  std::ifstream zero("/dev/zero", std::ios::binary);
  if (!zero) GTEST_SKIP() << "no /dev/zero";
  auto r = read_all(zero, 1 << 20);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("more than 1048576 bytes"), std::string::npos);
}

}  // namespace
}  // namespace clustertwin::base
