#include "clustertwin/base/file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

namespace clustertwin::base {
namespace {

std::string system_message(int err) { return std::strerror(err); }

Unexpected system_error(std::string message, std::string path) {
  return Unexpected{Error{std::move(message), std::move(path), 0, ErrorKind::kSystem}};
}

/// Writes all of `text` to `fd`, retrying short writes and EINTR; 0 or the errno.
int write_all(int fd, std::string_view text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

Status write_in_place(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return system_error("cannot write file: " + system_message(errno), path);
  int err = write_all(fd, text);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) return system_error("write failed: " + system_message(err), path);
  return {};
}

}  // namespace

Status write_file_atomic(const std::string& path, std::string_view text) {
  if (path.empty()) return fail("cannot write file: empty path");
  std::string target = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return fail("cannot write file: it is a directory", path);
    if (!S_ISREG(st.st_mode)) return write_in_place(path, text);
    // A symbolic link keeps pointing where it did: the file it names is the one replaced.
    std::error_code ec;
    auto real = std::filesystem::canonical(path, ec);
    if (!ec) target = real.string();
  }
  std::string tmp = target + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    const int err = errno;
    return system_error("cannot write file: " + system_message(err) +
                            (err == ENOENT ? " (does the directory exist?)" : ""),
                        path);
  }
  // mkstemp creates 0600; an output gets the permissions any new file of the user gets.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  int err = ::fchmod(fd, 0666 & ~mask) == 0 ? 0 : errno;
  if (err == 0) err = write_all(fd, text);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), target.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return system_error("write failed: " + system_message(err), path);
  }
  return {};
}

Status write_stdout(std::string_view text) {
  std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
  return flush_stdout();
}

Status flush_stdout() {
  errno = 0;
  std::cout.flush();
  const int err1 = errno;
  const bool bad_stdio = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  const int err = errno != 0 ? errno : err1;
  if (!std::cout.good() || bad_stdio) {
    return system_error("cannot write to standard output: " +
                            (err != 0 ? system_message(err) : std::string("write failed")),
                        "<stdout>");
  }
  return {};
}

Result<std::string> read_all(std::istream& in, int64_t limit) {
  std::string text;
  std::vector<char> chunk(size_t{1} << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto n = static_cast<size_t>(in.gcount());
    if (static_cast<int64_t>(text.size() + n) > limit) {
      return fail(limit == kMaxInputBytes
                      ? std::string("more than 1 GiB, the most clustertwin reads from one input "
                                    "(base::kMaxInputBytes): not an input file")
                      : fmt::format("more than {} bytes, the most read from this input", limit));
    }
    text.append(chunk.data(), n);
  }
  if (in.bad()) return fail("cannot read: " + system_message(errno));
  return text;
}

}  // namespace clustertwin::base
