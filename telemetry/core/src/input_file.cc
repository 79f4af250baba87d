#include "rtloop/telemetry/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "rtloop/telemetry/output_file.h"

namespace rtloop::telemetry {
namespace {

constexpr std::size_t kMaxTokenFileBytes = 16u << 10;

std::string Hex(unsigned char u) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", u);
  return buf;
}

// Why a file of this type cannot be read as a small input file; empty for a regular file.
std::string NotRegularReason(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return {};
  if (S_ISDIR(st.st_mode)) return "is a directory; give the file itself";
  if (S_ISFIFO(st.st_mode)) {
    return "is a named pipe (FIFO), which could keep the reader waiting forever; give a regular "
           "file";
  }
  if (S_ISCHR(st.st_mode))
    return "is a character device (/dev/zero, a terminal, ...); give a regular file";
  if (S_ISBLK(st.st_mode)) return "is a block device; give a regular file";
  if (S_ISSOCK(st.st_mode)) return "is a socket; give a regular file";
  return "is not a regular file; give a regular file";
}

}  // namespace

Result<std::string> ReadInputFile(std::string_view path_view, const InputFileOptions& options) {
  const std::string path(path_view);
  const std::string where = options.what + " '" + EscapeControlCharacters(path) + "'";
  if (path.empty()) return InvalidArgumentError(options.what + ": the path is empty");
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer;
  // O_NOCTTY: a terminal never becomes our controlling terminal.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return ErrnoError(err, "cannot open " + where, "check the path and its permissions");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoError(err, "cannot inspect " + where);
  }
  if (const std::string why = NotRegularReason(st); !why.empty()) {
    ::close(fd);
    return InvalidArgumentError(where + ": " + why);
  }
  const auto too_big = [&](const std::string& size) {
    return Status(StatusCode::kResourceExhausted,
                  where + ": is " + size + "; " + options.what + "s of up to " +
                      std::to_string(options.max_bytes) + " bytes are read: is it the right file?");
  };
  if (st.st_size > 0 && static_cast<std::uint64_t>(st.st_size) > options.max_bytes) {
    ::close(fd);
    return too_big(std::to_string(st.st_size) + " bytes");
  }
  // Read at most max_bytes + 1: files whose size the kernel does not know (/proc) are bounded too.
  // The buffer starts at the size fstat gave (plus a page, to see a file that grew) and doubles,
  // so a large bound costs memory only for a file that really holds that much.
  const std::size_t limit = options.max_bytes + 1;
  std::string content;
  content.resize(std::min(limit, static_cast<std::size_t>(st.st_size) + std::size_t{4096}));
  std::size_t got = 0;
  while (got < limit) {
    if (got == content.size()) content.resize(std::min(limit, content.size() * 2));
    const ssize_t n = ::read(fd, content.data() + got, content.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return ErrnoError(err, "cannot read " + where);
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got > options.max_bytes)
    return too_big("larger than " + std::to_string(options.max_bytes) + " bytes");
  content.resize(got);
  if (content.empty() && !options.allow_empty) {
    return InvalidArgumentError(where + ": is empty; is it the right file?");
  }
  return content;
}

Status CheckBearerToken(std::string_view token, std::string_view where_view) {
  const std::string where(where_view);
  if (token.empty()) {
    return InvalidArgumentError(where +
                                ": the token is empty; write the bearer token (one line) into it");
  }
  if (token.size() > kMaxBearerTokenBytes) {
    return InvalidArgumentError(
        where + ": the token is " + std::to_string(token.size()) + " characters long; at most " +
        std::to_string(kMaxBearerTokenBytes) +
        " fit into a request's metadata (gRPC's limit is 8 KiB for all of it)");
  }
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto u = static_cast<unsigned char>(token[i]);
    if (u == ' ' || u == '\t' || u == '\n' || u == '\r') {
      return InvalidArgumentError(where + ": the token holds whitespace (" + Hex(u) + ") at byte " +
                                  std::to_string(i) +
                                  "; a token is one word of printable ASCII characters");
    }
    if (u < 0x21 || u == 0x7f) {
      return InvalidArgumentError(where + ": the token holds a control character (" + Hex(u) +
                                  ") at byte " + std::to_string(i) +
                                  "; a token is one word of printable ASCII characters");
    }
    if (u > 0x7e) {
      return InvalidArgumentError(where + ": the token holds a non-ASCII byte (" + Hex(u) +
                                  ") at byte " + std::to_string(i) +
                                  "; a token is one word of printable ASCII characters");
    }
  }
  return Status::Ok();
}

Result<std::string> ReadTokenFile(std::string_view path) {
  Result<std::string> content = ReadInputFile(
      path, {.what = "token file", .max_bytes = kMaxTokenFileBytes, .allow_empty = true});
  if (!content.ok()) return content.status();
  std::string_view token = *content;
  constexpr std::string_view kSpace = " \t\r\n";
  const std::size_t first = token.find_first_not_of(kSpace);
  const std::string where = "token file '" + EscapeControlCharacters(path) + "'";
  if (first == std::string_view::npos) {
    return InvalidArgumentError(where + ": is empty; write the bearer token (one line) into it");
  }
  token = token.substr(first, token.find_last_not_of(kSpace) - first + 1);
  RTLOOP_RETURN_IF_ERROR(CheckBearerToken(token, where));
  return std::string(token);
}

}  // namespace rtloop::telemetry
