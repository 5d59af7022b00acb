// What a run leaves behind when it is stopped: nothing. SIGINT, SIGTERM and SIGHUP are caught;
// a thread of the program then removes every path registered here (the staging folder, a
// partial report, a file half written through its temporary name), says so on stderr and ends
// the process with 128 + the signal's number (130 for SIGINT), as a shell reports a process the
// signal ended. A second signal while it removes ends the process at once. The commit of an
// output and the removal exclude each other: a run is either committed whole or removed.
#pragma once

#include <filesystem>
#include <functional>

namespace clp_transfer::io {

/// Installs the handlers and starts the thread that removes; once per process, before any
/// command runs. Idempotent.
void catch_interruptions();

/// Registers `path` (a file or a folder, removed with what it holds) to be removed if the run is
/// interrupted; forget_on_interruption(path) takes it back.
void remove_on_interruption(const std::filesystem::path& path);
void forget_on_interruption(const std::filesystem::path& path);

/// remove_on_interruption for the lifetime of the object (or until release()).
class removed_if_interrupted {
 public:
  removed_if_interrupted() = default;
  explicit removed_if_interrupted(std::filesystem::path path);
  removed_if_interrupted(const removed_if_interrupted&) = delete;
  removed_if_interrupted& operator=(const removed_if_interrupted&) = delete;
  ~removed_if_interrupted();
  /// Registers `path` instead of the path held so far.
  void reset(std::filesystem::path path);
  /// Takes the registration back: the path is no longer removed by an interruption.
  void release();

 private:
  std::filesystem::path path_;
};

/// Runs `commit` (the renames that put an output in place) unless the run has been interrupted,
/// with no interruption's removal running meanwhile: after an interruption it waits for the
/// removal to end the process.
void commit_unless_interrupted(const std::function<void()>& commit);

/// For the tests: where the environment variable CLP_TRANSFER_TEST_SIGNAL is "POINT:SIGNAL"
/// (SIGNAL one of INT, TERM, HUP) and `point` is POINT, sends that signal to the process, as a
/// user or a scheduler would at that point of a run. Points: "read" (nothing written yet),
/// "synthesize" (the staging folder and its weight files exist), "write", "commit" (the report
/// written beside its final name, the output not yet moved into place).
void interruption_test_point(const char* point);

}  // namespace clp_transfer::io
