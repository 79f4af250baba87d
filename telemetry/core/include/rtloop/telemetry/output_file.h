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
//     PATH untouched.
//   - PATH.partial is locked (flock) by its writer from before it appears until after it is
//     renamed. A live one (another process is writing it) is never taken over: Open() refuses.
//     A stale one (its writer ended without completing it) is renamed to PATH.partial.stale-N,
//     and the new name reported (OutputPathOptions::notice), never silently replaced.
//   - /dev/null is written directly.
//   - Everything else is refused with a message: a FIFO (opening it blocks until a reader comes),
//     other character devices such as /dev/full or a terminal, sockets, directories, files on
//     kernel file systems (/proc, /sys), a directory that does not exist or is a file, a name too
//     long for the file system (PATH.partial included), a PATH.partial that is not a regular file.
//   - Every write, flush, sync, close and the rename is checked; the first error is kept.
//
// CheckOutputsApart() is the rule every tool applies to its command line before it writes: no
// output may name an input or another output. Files are compared by device and inode (a second
// name, a symbolic or hard link is the same file), not by name.
//
// OutputFifo (for cyclictest's -F) creates a named pipe at a path that is free or already a FIFO,
// never deletes anything else, writes without ever blocking, and removes only its own pipe.
//
// Threading: ResolveOutputPath is a plain function. An OutputFile or OutputFifo is used by one
// thread at a time (it may be moved between threads). Not RT-safe: file-system calls.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
  // Open() calls it with one line when it renamed a stale PATH.partial out of the way; empty:
  // the line goes to stderr, prefixed with the program's name.
  std::function<void(const std::string&)> notice = {};
};

// Where an output goes, as ResolveOutputPath() found it.
struct OutputTarget {
  std::string what;                                // from OutputPathOptions
  std::string path;                                // as given
  std::function<void(const std::string&)> notice;  // from OutputPathOptions
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

// An input file a tool reads (a configuration, a result to plot), for CheckOutputsApart().
struct InputPath {
  std::string what;  // the option or role, for messages: "--config", "INPUT"
  std::string path;  // as given; "" and "-" (standard input) never collide
};

// The rule for every tool: InvalidArgument when an output is the same file as an input (same
// device and inode, the output or its PATH.partial), or two outputs would write one file
// (OutputTarget::SameAs; several on standard output are allowed: they are printed in turn).
// Call it with everything the command line names, before anything is read or written. The
// message names both options and both paths.
Status CheckOutputsApart(const std::vector<OutputTarget>& outputs,
                         const std::vector<InputPath>& inputs);

class OutputFile {
 public:
  // Opens the target: kRegular creates PATH.partial, locked (flock) before it appears under that
  // name; it can never block (O_NOFOLLOW, O_NONBLOCK, LOCK_NB). A PATH.partial another process
  // holds is refused (Unavailable); a stale one is renamed (see above). kStdout and kNull need
  // nothing. Errors name the path and errno.
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
  // Completes the file: flushes (stdout), fsyncs when `sync` (kRegular), renames PATH.partial to
  // PATH and closes it (the lock is held until the name is gone). Returns the first error of the
  // file's life; on an error PATH is left as it was and PATH.partial is removed, or kept with
  // `keep_partial_on_error` (a sample log: what it holds is still readable). Idempotent.
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
