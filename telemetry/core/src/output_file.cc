#include "rtloop/telemetry/output_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace rtloop::telemetry {
namespace {

constexpr std::string_view kPartialSuffix = ".partial";

// File systems whose "files" are kernel interfaces: a result written there is lost or worse.
bool IsKernelFileSystem(long type) {
  switch (static_cast<unsigned long>(type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case SECURITYFS_MAGIC:
    case BPF_FS_MAGIC:
    case PSTOREFS_MAGIC:
    case EFIVARFS_MAGIC:
      return true;
    default:
      return false;
  }
}

bool IsDevNull(const struct stat& st) {
  return S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
}

// "is a FIFO ..." etc. for an existing path that is not a regular file; empty for a regular file.
std::string NonRegularReason(const struct stat& st, bool allow_stdout) {
  if (S_ISREG(st.st_mode)) return {};
  if (S_ISDIR(st.st_mode)) return "is a directory; give a file name";
  const std::string or_stdout = allow_stdout ? ", or '-' for standard output" : "";
  if (S_ISFIFO(st.st_mode)) {
    return "is a named pipe (FIFO): opening it would block until a reader comes; give a regular "
           "file" +
           or_stdout;
  }
  if (S_ISCHR(st.st_mode)) {
    return "is a character device (a terminal, /dev/full, ...), not a file that can keep a result; "
           "give a regular file" +
           or_stdout;
  }
  if (S_ISBLK(st.st_mode)) return "is a block device; give a regular file";
  if (S_ISSOCK(st.st_mode)) return "is a socket; give a regular file";
  return "is not a regular file; give a regular file";
}

struct SplitPath {
  std::string dir;   // "." when the path has no '/'
  std::string base;  // "" when the path ends with '/'
};

SplitPath Split(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// The first existing prefix of `dir` that is not a directory ("/etc/hostname" for
// "/etc/hostname/sub"), or "" when there is none.
std::string FirstNonDirectory(const std::string& dir) {
  std::size_t pos = dir[0] == '/' ? 1 : 0;
  for (;;) {
    const std::size_t slash = dir.find('/', pos);
    std::string prefix = dir.substr(0, slash);
    struct stat st {};
    if (!prefix.empty() && ::stat(prefix.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) return prefix;
    if (slash == std::string::npos) return {};
    pos = slash + 1;
  }
}

// Checks the directory an output (or a FIFO) goes to; fills the identity fields of `t`.
Status CheckDirectory(const std::string& what, const std::string& shown, const std::string& dir,
                      const std::string& base, OutputTarget& t) {
  const auto refuse = [&](const std::string& why) {
    return InvalidArgumentError(what + " '" + shown + "': " + why);
  };
  if (base.empty() || base == "." || base == "..")
    return refuse("names a directory; give a file name");
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) {
    const int err = errno;
    if (err == ENOTDIR) {
      const std::string file = FirstNonDirectory(dir);
      return refuse("'" + EscapeControlCharacters(file.empty() ? dir : file) +
                    "' is a file, not a directory; choose a path in an existing directory");
    }
    if (err == ENOENT) {
      return NotFoundError(what + " '" + shown + "': directory '" + EscapeControlCharacters(dir) +
                           "' does not exist; create it first or choose another path");
    }
    return ErrnoError(err, what + " '" + shown + "': cannot use directory '" +
                               EscapeControlCharacters(dir) + "'");
  }
  if (!S_ISDIR(dst.st_mode)) {
    return refuse("'" + EscapeControlCharacters(dir) +
                  "' is a file, not a directory; choose a path in an existing directory");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return refuse("directory '" + EscapeControlCharacters(dir) +
                  "' is not writable; choose another directory or fix its permissions");
  }
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) == 0 && IsKernelFileSystem(fs.f_type)) {
    return refuse("'" + EscapeControlCharacters(dir) +
                  "' is a kernel interface (/proc, /sys, ...), not a place for results; give a "
                  "file on a normal file system");
  }
  long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = NAME_MAX;
  const auto limit = static_cast<std::size_t>(name_max);
  if (base.size() > limit) {
    return refuse("the file name is " + std::to_string(base.size()) +
                  " bytes long; this file system allows " + std::to_string(limit) +
                  ": use a shorter name");
  }
  if (base.size() + kPartialSuffix.size() > limit) {
    return refuse("the file name is " + std::to_string(base.size()) + " bytes long; with '" +
                  std::string(kPartialSuffix) + "' (the name used while writing) it exceeds this " +
                  "file system's " + std::to_string(limit) + ": use a shorter name");
  }
  t.dir_dev = dst.st_dev;
  t.dir_ino = dst.st_ino;
  t.name = base;
  return Status::Ok();
}

// A name of our own next to PATH.partial, free now: ".rtloop-PID-N" (short: it must fit wherever
// PATH.partial fits).
std::string PrivateName(const std::string& dir) {
  static std::atomic<unsigned> counter{0};
  return (dir == "/" ? std::string() : dir) + "/.rtloop-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1)) + ".partial";
}

void Notice(const OutputTarget& target, const std::string& line) {
  if (target.notice) {
    target.notice(line);
  } else {
    std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, line.c_str());
  }
}

// Moves `from` to `to` unless `to` exists (then EEXIST): 0 or an errno. renameat2's
// RENAME_NOREPLACE where the file system has it, else link() + unlink() (link never replaces),
// else (no hard links either: vfat, some FUSE) a check before a plain rename.
int RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
  if (::link(from.c_str(), to.c_str()) == 0) {
    ::unlink(from.c_str());
    return 0;
  }
  if (errno != EPERM && errno != EOPNOTSUPP) return errno;
  struct stat st {};
  if (::lstat(to.c_str(), &st) == 0) return EEXIST;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

// Holding the lock of the stale PATH.partial: moves it to PATH.partial.stale-N (the first free
// N) and reports the new name.
Status KeepStalePartial(const OutputTarget& target, const std::string& shown) {
  const std::string& partial = target.partial_path;
  for (int n = 1;; ++n) {
    const std::string stale = partial + ".stale-" + std::to_string(n);
    const int err = RenameNoReplace(partial, stale);
    if (err == 0) {
      Notice(target, target.what + ": '" + EscapeControlCharacters(partial) +
                         "' was left by a run that did not complete it (no process holds it); "
                         "kept as '" +
                         EscapeControlCharacters(stale) + "'");
      return Status::Ok();
    }
    if (err == EEXIST && n < 1000) continue;
    return ErrnoError(err,
                      target.what + " '" + shown + "': cannot move the stale '" +
                          EscapeControlCharacters(partial) + "' out of the way",
                      "remove it or choose another path");
  }
}

// PATH.partial exists: Unavailable when its writer is alive (it holds the lock); else it is kept
// under a new name (KeepStalePartial) and OK is returned so that the caller tries again. A file
// that is not a regular file, or one on a file system without locks, is refused.
Status MoveStalePartial(const OutputTarget& target, const std::string& shown) {
  const std::string& partial = target.partial_path;
  const std::string partial_shown = EscapeControlCharacters(partial);
  const std::string fix = "remove it if no run is writing it, or choose another path";
  const int fd = ::open(partial.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Ok();  // gone meanwhile: try again
    return ErrnoError(
        errno, target.what + " '" + shown + "': cannot check the existing '" + partial_shown + "'",
        fix);
  }
  struct stat st {};
  struct stat now {};
  Status result = Status::Ok();
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    result = InvalidArgumentError(target.what + " '" + shown + "': '" + partial_shown +
                                  "' exists and is not a regular file: remove it");
  } else if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    result = errno == EWOULDBLOCK
                 ? Status(StatusCode::kUnavailable,
                          target.what + " '" + shown + "': another process is writing '" +
                              partial_shown +
                              "' (it holds its lock): wait for it to end or choose another path")
                 : ErrnoError(errno,
                              target.what + " '" + shown +
                                  "': cannot tell whether a process is writing '" + partial_shown +
                                  "' (no lock)",
                              fix);
  } else if (::lstat(partial.c_str(), &now) == 0 && now.st_dev == st.st_dev &&
             now.st_ino == st.st_ino) {
    // We hold its lock: its writer is gone. (Otherwise it was replaced or renamed between open
    // and flock: look again.)
    result = KeepStalePartial(target, shown);
  }
  ::close(fd);
  return result;
}

// Creates PATH.partial, locked before it appears under that name: the file is made under a
// private name, locked, then moved to PATH.partial without ever replacing one (a live writer's
// file is never taken over). Returns the descriptor.
Result<int> CreateLockedPartial(const OutputTarget& target) {
  const std::string shown = EscapeControlCharacters(target.path);
  const std::string& partial = target.partial_path;
  const std::string own = PrivateName(Split(partial).dir);
  // O_EXCL|O_NOFOLLOW: the file is ours, not a symlink or FIFO planted meanwhile; O_NONBLOCK:
  // nothing can make this open() wait.
  const int fd =
      ::open(own.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    return ErrnoError(
        err,
        target.what + " '" + shown + "': cannot create '" + EscapeControlCharacters(partial) + "'",
        err == ENOSPC ? "free space on the file system or choose another"
                      : "check the directory's permissions and free space");
  }
  // A file system without locks: the file is still written; only the protection is missing.
  (void)::flock(fd, LOCK_EX | LOCK_NB);
  Status s = Status::Ok();
  for (int attempt = 0; s.ok(); ++attempt) {
    const int err = RenameNoReplace(own, partial);
    if (err == 0) return fd;
    if (err != EEXIST || attempt == 10) {
      s = ErrnoError(err, target.what + " '" + shown + "': cannot create '" +
                              EscapeControlCharacters(partial) + "'");
      break;
    }
    s = MoveStalePartial(target, shown);
  }
  ::unlink(own.c_str());
  ::close(fd);
  return s;
}

}  // namespace

std::string EscapeControlCharacters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool OutputTarget::SameAs(const OutputTarget& other) const noexcept {
  if (kind == OutputKind::kNull || other.kind == OutputKind::kNull) return false;
  if (kind != other.kind) return false;
  if (kind == OutputKind::kStdout) return true;
  if (exists && other.exists && file_dev == other.file_dev && file_ino == other.file_ino) {
    return true;
  }
  return dir_dev == other.dir_dev && dir_ino == other.dir_ino && name == other.name;
}

Result<OutputTarget> ResolveOutputPath(std::string_view path_view,
                                       const OutputPathOptions& options) {
  const std::string path(path_view);
  const std::string shown = EscapeControlCharacters(path);
  const std::string& what = options.what;
  const auto refuse = [&](const std::string& why) {
    return InvalidArgumentError(what + " '" + shown + "': " + why);
  };
  OutputTarget t;
  t.what = what;
  t.path = path;
  t.notice = options.notice;
  if (path.empty()) return InvalidArgumentError(what + " needs a file name");
  if (path == "-" || path == "/dev/stdout") {
    if (!options.allow_stdout) {
      return refuse("this output cannot go to standard output; give a file name");
    }
    t.kind = OutputKind::kStdout;
    return t;
  }
  if (path.size() >= PATH_MAX) {
    return refuse("the path is " + std::to_string(path.size()) + " bytes long; the limit is " +
                  std::to_string(PATH_MAX - 1));
  }
  std::string final_path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (IsDevNull(st)) {
      t.kind = OutputKind::kNull;
      t.final_path = "/dev/null";
      return t;
    }
    if (const std::string why = NonRegularReason(st, options.allow_stdout); !why.empty()) {
      return refuse(why);
    }
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr)
      return ErrnoError(errno, what + " '" + shown + "': cannot resolve the path");
    final_path = real;
    std::free(real);
    t.exists = true;
    t.mode = st.st_mode & 07777;
    t.file_dev = st.st_dev;
    t.file_ino = st.st_ino;
    if (::access(path.c_str(), W_OK) != 0) {
      return refuse("exists and is not writable; choose another path or fix its permissions");
    }
  } else {
    const int err = errno;
    struct stat lst {};
    if (err == ENOENT && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      return refuse("is a symbolic link to a file that does not exist; give the real path");
    }
    // ENAMETOOLONG: CheckDirectory() names the component and the limit.
    if (err != ENOENT && err != ENOTDIR && err != ENAMETOOLONG) {
      return ErrnoError(err, what + " '" + shown + "': cannot check the path");
    }
  }
  const SplitPath parts = Split(final_path);
  RTLOOP_RETURN_IF_ERROR(CheckDirectory(what, shown, parts.dir, parts.base, t));
  t.final_path = final_path;
  t.partial_path = final_path + std::string(kPartialSuffix);
  struct stat pst {};
  if (::lstat(t.partial_path.c_str(), &pst) == 0 && !S_ISREG(pst.st_mode)) {
    return refuse("'" + EscapeControlCharacters(t.partial_path) +
                  "' exists and is not a regular file; rtloop writes the output there until it "
                  "is complete: remove it or choose another path");
  }
  return t;
}

Status CheckOutputsApart(const std::vector<OutputTarget>& outputs,
                         const std::vector<InputPath>& inputs) {
  const auto shown = [](const std::string& what, const std::string& path) {
    return what + " '" + EscapeControlCharacters(path) + "'";
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const OutputTarget& out = outputs[i];
    if (out.kind != OutputKind::kRegular) continue;
    for (const InputPath& in : inputs) {
      struct stat ist {};
      if (in.path.empty() || in.path == "-" || ::stat(in.path.c_str(), &ist) != 0) continue;
      struct stat pst {};
      const bool is_file = out.exists && out.file_dev == ist.st_dev && out.file_ino == ist.st_ino;
      const bool is_partial = ::stat(out.partial_path.c_str(), &pst) == 0 &&
                              pst.st_dev == ist.st_dev && pst.st_ino == ist.st_ino;
      if (is_file || is_partial) {
        return InvalidArgumentError(
            shown(out.what, out.path) + " is " +
            (is_file ? "the same file as "
                     : "where the output is written while incomplete, and is ") +
            shown(in.what, in.path) +
            ": writing it would destroy the input; give the output "
            "another path");
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (outputs[j].kind == OutputKind::kRegular && out.SameAs(outputs[j])) {
        return InvalidArgumentError(outputs[j].what + " and " + out.what + " both write to '" +
                                    EscapeControlCharacters(out.path) +
                                    "': give each output its own file");
      }
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// OutputFile

Result<OutputFile> OutputFile::Open(std::string_view path, const OutputPathOptions& options) {
  Result<OutputTarget> target = ResolveOutputPath(path, options);
  if (!target.ok()) return target.status();
  return Open(*target);
}

Result<OutputFile> OutputFile::Open(const OutputTarget& target) {
  const std::string shown = EscapeControlCharacters(target.path);
  switch (target.kind) {
    case OutputKind::kStdout:
      return OutputFile(target, -1);
    case OutputKind::kNull: {
      const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (fd < 0) return ErrnoError(errno, target.what + ": cannot open /dev/null");
      return OutputFile(target, fd);
    }
    case OutputKind::kRegular:
      break;
  }
  Result<int> fd = CreateLockedPartial(target);
  if (!fd.ok()) return fd.status();
  if (target.exists && ::fchmod(*fd, target.mode) != 0) {
    // Best effort: the content is what matters; the new file keeps the default mode.
  }
  return OutputFile(target, *fd);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : target_(std::move(other.target_)),
      fd_(std::exchange(other.fd_, -1)),
      open_(std::exchange(other.open_, false)),
      committed_(std::exchange(other.committed_, false)),
      error_(std::move(other.error_)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    Discard();
    target_ = std::move(other.target_);
    fd_ = std::exchange(other.fd_, -1);
    open_ = std::exchange(other.open_, false);
    committed_ = std::exchange(other.committed_, false);
    error_ = std::move(other.error_);
  }
  return *this;
}

OutputFile::~OutputFile() { Discard(); }

const std::string& OutputFile::current_path() const noexcept {
  if (target_.kind == OutputKind::kStdout) return target_.path;
  if (target_.kind == OutputKind::kNull) return target_.final_path;
  return committed_ ? target_.final_path : target_.partial_path;
}

Status OutputFile::Fail(int err, std::string_view action) {
  if (error_.ok()) {
    const std::string where = target_.kind == OutputKind::kStdout
                                  ? std::string("standard output")
                                  : "'" + EscapeControlCharacters(current_path()) + "'";
    error_ = ErrnoError(err, target_.what + ": cannot " + std::string(action) + " " + where,
                        err == ENOSPC || err == EFBIG || err == EDQUOT
                            ? "free space on the file system (or raise the file size limit) "
                              "or write to another one"
                            : std::string_view{});
  }
  return error_;
}

Status OutputFile::Write(std::string_view data) {
  if (!error_.ok()) return error_;
  if (!open_) {
    error_ = FailedPreconditionError(target_.what + ": write to a closed output file");
    return error_;
  }
  if (target_.kind == OutputKind::kStdout) {
    if (!data.empty() && std::fwrite(data.data(), 1, data.size(), stdout) != data.size()) {
      return Fail(errno != 0 ? errno : EIO, "write to");
    }
    return Status::Ok();
  }
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(errno, "write to");
    }
    if (n == 0) return Fail(EIO, "write to");
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

Status OutputFile::CloseFd() {
  if (fd_ < 0) return Status::Ok();
  const int fd = std::exchange(fd_, -1);
  // close() reports deferred write errors (NFS, some FUSE file systems); EINTR still closed it.
  if (::close(fd) != 0 && errno != EINTR) return Fail(errno, "close");
  return Status::Ok();
}

Status OutputFile::Commit(bool sync, bool keep_partial_on_error) {
  if (committed_ || !open_) return error_;
  if (target_.kind == OutputKind::kStdout) {
    if (error_.ok() && (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)) {
      (void)Fail(errno != 0 ? errno : EIO, "flush");
    }
    open_ = false;
    committed_ = error_.ok();
    return error_;
  }
  if (error_.ok() && sync && target_.kind == OutputKind::kRegular && ::fsync(fd_) != 0 &&
      errno != EINVAL && errno != EROFS) {
    (void)Fail(errno, "sync");
  }
  // close() reports deferred write errors: a file that failed there is not renamed. The lock
  // (on the file, held by fd_) must outlive the name PATH.partial, so the file is closed through
  // a second descriptor first and fd_ last, after the rename.
  if (error_.ok() && target_.kind == OutputKind::kRegular) {
    const int probe = ::dup(fd_);
    if (probe >= 0 && ::close(probe) != 0 && errno != EINTR) (void)Fail(errno, "close");
  }
  if (target_.kind == OutputKind::kRegular) {
    if (error_.ok() && ::rename(target_.partial_path.c_str(), target_.final_path.c_str()) != 0) {
      const int err = errno;
      error_ = ErrnoError(err, target_.what + ": cannot rename '" +
                                   EscapeControlCharacters(target_.partial_path) + "' to '" +
                                   EscapeControlCharacters(target_.final_path) + "'");
    }
    if (!error_.ok() && !keep_partial_on_error) ::unlink(target_.partial_path.c_str());
  }
  (void)CloseFd();
  open_ = false;
  committed_ = error_.ok();
  return error_;
}

Status OutputFile::KeepPartial() {
  if (!open_) return error_;
  if (target_.kind == OutputKind::kStdout) std::fflush(stdout);
  (void)CloseFd();
  open_ = false;
  return error_;
}

void OutputFile::Discard() {
  if (!open_) return;
  // Removed while still locked: no other process can take it for stale meanwhile.
  if (target_.kind == OutputKind::kRegular) ::unlink(target_.partial_path.c_str());
  const int fd = std::exchange(fd_, -1);
  if (fd >= 0) ::close(fd);
  open_ = false;
}

// ---------------------------------------------------------------------------------------------
// OutputFifo

Result<OutputTarget> OutputFifo::ResolveFifoPath(std::string_view path_view,
                                                 std::string_view what_view) {
  const std::string path(path_view);
  const std::string what(what_view);
  const std::string shown = EscapeControlCharacters(path);
  if (path.empty()) return InvalidArgumentError(what + " needs a path for the named pipe");
  OutputTarget t;
  t.what = what;
  t.path = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISFIFO(st.st_mode)) {
      const char* kind = S_ISREG(st.st_mode)   ? "a regular file"
                         : S_ISDIR(st.st_mode) ? "a directory"
                         : S_ISLNK(st.st_mode) ? "a symbolic link"
                                               : "not a named pipe";
      return InvalidArgumentError(what + " '" + shown + "': exists and is " + kind +
                                  "; the named pipe would replace it, and rtloop never deletes "
                                  "it: remove it yourself or choose another path");
    }
    t.exists = true;
    t.file_dev = st.st_dev;
    t.file_ino = st.st_ino;
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return ErrnoError(errno, what + " '" + shown + "': cannot check the path");
  }
  const SplitPath parts = Split(path);
  RTLOOP_RETURN_IF_ERROR(CheckDirectory(what, shown, parts.dir, parts.base, t));
  t.final_path = path;
  return t;
}

Result<OutputFifo> OutputFifo::Create(const OutputTarget& target) {
  const std::string& path = target.final_path;
  const std::string shown = EscapeControlCharacters(target.path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISFIFO(st.st_mode)) {
      return InvalidArgumentError(target.what + " '" + shown +
                                  "': exists and is not a named pipe; it is left alone: remove it "
                                  "yourself or choose another path");
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError(errno, target.what + " '" + shown + "': cannot replace the old named pipe");
    }
  }
  if (::mkfifo(path.c_str(), 0666) != 0) {
    return ErrnoError(errno, target.what + " '" + shown + "': cannot create the named pipe");
  }
  OutputFifo fifo;
  fifo.path_ = path;
  if (::lstat(path.c_str(), &st) == 0) {
    fifo.dev_ = st.st_dev;
    fifo.ino_ = st.st_ino;
  }
  return fifo;
}

OutputFifo::OutputFifo(OutputFifo&& other) noexcept
    : path_(std::exchange(other.path_, {})), dev_(other.dev_), ino_(other.ino_) {}

OutputFifo& OutputFifo::operator=(OutputFifo&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, {});
    dev_ = other.dev_;
    ino_ = other.ino_;
  }
  return *this;
}

OutputFifo::~OutputFifo() { Remove(); }

bool OutputFifo::TryWrite(std::string_view text) const {
  if (path_.empty()) return false;
  // Without a reader, open() fails with ENXIO at once instead of waiting.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_dev == dev_ && st.st_ino == ino_;
  if (ok) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    ok = n == static_cast<ssize_t>(text.size());
  }
  ::close(fd);
  return ok;
}

void OutputFifo::Remove() {
  if (path_.empty()) return;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISFIFO(st.st_mode) && st.st_dev == dev_ &&
      st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
  path_.clear();
}

}  // namespace rtloop::telemetry
