// OutputFile: the one way rtloop's tools write a result file (JSON, histogram, sample log, status
// snapshot), so that a result is either complete where the user asked for it or its loss is an
// error with a message, never a silent half-file and never a process stuck in open().
//
//   Result<OutputTarget> target = ResolveOutputPath("run.json", {.what = "--json"});
//   if (!target.ok()) return Usage(target.status());       // before anything is measured
//   Result<OutputFile> file = OutputFile::Open(*target);   // creates run.json.partial
//   if (!file.ok()) return Fatal(file.status());
//   ... measure ...
//   Status s = file->Write(json);                          // every write is checked
//   if (s.ok()) s = file->Commit();                        // fsync, close, rename to run.json
//   if (!s.ok()) return Fatal(s);                          // run.json.partial removed
//
// The rules (ResolveOutputPath checks them without creating anything):
//   - "-" (and "/dev/stdout") is the process' standard output, for every option alike.
//   - A regular file, new or existing, is written under PATH.partial in the same directory and
//     renamed to PATH by Commit(): readers never see a half-written PATH, and a run killed before
//     the end leaves PATH.partial (a sample log there is readable up to the cut) and an existing
//     PATH untouched. A stale PATH.partial from an earlier run is overwritten.
//   - /dev/null is written directly.
//   - Everything else is refused with a message: a FIFO (opening it blocks until a reader comes),
//     other character devices such as /dev/full or a terminal, sockets, directories, files on
//     kernel file systems (/proc, /sys), a directory that does not exist or is a file, a name too
//     long for the file system (PATH.partial included), a PATH.partial that is not a regular file.
//   - Every write, flush, sync, close and the rename is checked; the first error is kept.
//
// OutputFifo (for cyclictest's -F) creates a named pipe at a path that is free or already a FIFO,
// never deletes anything else, writes without ever blocking, and removes only its own pipe.
//
// Threading: ResolveOutputPath is a plain function. An OutputFile or OutputFifo is used by one
// thread at a time (it may be moved between threads). Not RT-safe: file-system calls.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "rtloop/framework/status.h"

namespace rtloop::telemetry {

enum class OutputKind {
  kStdout,   // "-": the process' standard output (through stdio's stdout)
  kRegular,  // a regular file, written as PATH.partial and renamed at Commit()
  kNull,     // /dev/null
};

struct OutputPathOptions {
  std::string what = "output file";  // the option or role, for messages: "--json", "recording"
  bool allow_stdout = true;          // "-" means stdout; false: "-" is refused (binary output)
};

// Where an output goes, as ResolveOutputPath() found it.
struct OutputTarget {
  std::string what;  // from OutputPathOptions
  std::string path;  // as given
  OutputKind kind = OutputKind::kRegular;
  std::string final_path;    // kRegular: the file's path, symbolic links resolved
  std::string partial_path;  // kRegular: final_path + ".partial"
  bool exists = false;       // kRegular: final_path exists now (Commit() replaces it)
  mode_t mode = 0;           // kRegular, `exists`: the existing file's mode, kept by the new file
  // kRegular: identity of the destination, to find two outputs that would write the same file.
  dev_t dir_dev = 0;
  ino_t dir_ino = 0;
  std::string name;  // last component of final_path
  dev_t file_dev = 0;
  ino_t file_ino = 0;  // when `exists`: the existing file (hard links compare equal)

  // True when both would write the same file (or both go to stdout). /dev/null never collides.
  bool SameAs(const OutputTarget& other) const noexcept;
};

// Checks that `path` can take an output (the rules above) without creating or changing anything.
// InvalidArgument (or NotFound/PermissionDenied) naming options.what, the path and the fix.
Result<OutputTarget> ResolveOutputPath(std::string_view path,
                                       const OutputPathOptions& options = {});

class OutputFile {
 public:
  // Opens the target: kRegular creates PATH.partial (O_EXCL after removing a stale regular one,
  // O_NOFOLLOW, O_NONBLOCK: it can never block); kStdout and kNull need nothing. Errors name the
  // path and errno.
  static Result<OutputFile> Open(const OutputTarget& target);
  // ResolveOutputPath() then Open().
  static Result<OutputFile> Open(std::string_view path, const OutputPathOptions& options = {});

  OutputFile() = default;  // closed; Write() fails
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // Discard() unless committed or kept

  // Writes all of `data` (retrying short writes and EINTR). After a failure every later call
  // returns the first error and writes nothing.
  Status Write(std::string_view data);
  // Completes the file: flushes (stdout), fsyncs when `sync` (kRegular), closes and renames
  // PATH.partial to PATH. Returns the first error of the file's life; on an error PATH is left as
  // it was and PATH.partial is removed, or kept with `keep_partial_on_error` (a sample log: what
  // it holds is still readable). Idempotent.
  Status Commit(bool sync = true, bool keep_partial_on_error = false);
  // Closes and leaves PATH.partial in place (e.g. a sample log that stopped early: what it holds
  // is still readable). Returns the first error, if any, else OK.
  Status KeepPartial();
  // Closes and removes PATH.partial; PATH is left as it was. Idempotent.
  void Discard();

  bool is_open() const noexcept { return open_; }
  Status status() const { return error_; }
  const OutputTarget& target() const noexcept { return target_; }
  // Where the bytes are now: PATH.partial until Commit(), then PATH; "-" for stdout.
  const std::string& current_path() const noexcept;

 private:
  OutputFile(OutputTarget target, int fd) noexcept : target_(std::move(target)), fd_(fd) {
    open_ = true;
  }
  Status Fail(int err, std::string_view action);
  Status CloseFd();

  OutputTarget target_;
  int fd_ = -1;  // kRegular / kNull
  bool open_ = false;
  bool committed_ = false;
  Status error_;
};

// A named pipe for a live reader (cyclictest -F): ResolveFifoPath() accepts a free path or an
// existing FIFO (replaced, as cyclictest does) and refuses anything else; Create() makes the pipe;
// TryWrite() hands text to a reader if one has the pipe open, never blocking; the destructor
// removes the pipe if it is still the one it created.
class OutputFifo {
 public:
  // `what` names the option ("-F/--fifo") in messages.
  static Result<OutputTarget> ResolveFifoPath(std::string_view path, std::string_view what);
  static Result<OutputFifo> Create(const OutputTarget& target);

  OutputFifo() = default;
  OutputFifo(OutputFifo&& other) noexcept;
  OutputFifo& operator=(OutputFifo&& other) noexcept;
  OutputFifo(const OutputFifo&) = delete;
  OutputFifo& operator=(const OutputFifo&) = delete;
  ~OutputFifo();

  // Opens the pipe without blocking, writes what fits, closes. False when no reader has it open,
  // the pipe is full or it was replaced by something else.
  bool TryWrite(std::string_view text) const;
  // Removes the pipe if it is still ours. Idempotent.
  void Remove();
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// `text` with control characters and DEL written as escapes (\n, \t, \x1b): for messages that
// quote a path or a value, so that they stay on one line and show what is there.
std::string EscapeControlCharacters(std::string_view text);

}  // namespace rtloop::telemetry
