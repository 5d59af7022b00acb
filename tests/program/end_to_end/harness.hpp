// Running the clp-transfer program from an end-to-end test: the program started with posix_spawn
// (no shell, so no quoting), its exit status, stdout and stderr captured, and the checks every
// refusal must pass as a user sees it (one line "clp-transfer: error: <message>" on stderr,
// exit status 1, nothing on stdout).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <doctest/doctest.h>

#include "support/files.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

namespace program_test {

namespace fs = std::filesystem;

using clp_test::folder_entries;
using clp_test::read_file;
using clp_test::temp_dir;
using clp_test::write_file;

/// What one run of the program did.
struct program_result {
  int exit_status = -1;  ///< exit code, or 128 + signal number when killed by a signal
  std::string out, err;
};

namespace detail {

inline void close_quietly(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

/// Starts the program with `arguments`, stdin from /dev/null, stdout and stderr onto the
/// given descriptors; returns its pid.
inline pid_t spawn(const std::vector<std::string>& arguments, int out_fd, int err_fd) {
  std::vector<std::string> words{CLP_TRANSFER_EXE};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw std::runtime_error(std::string("posix_spawn ") + argv[0] + " failed: " + std::strerror(error));
  return pid;
}

inline int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace detail

/// Runs `clp-transfer arguments...` and collects its exit status, stdout and stderr.
inline program_result run_program(const std::vector<std::string>& arguments) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error("pipe failed");
  }
  const pid_t pid = detail::spawn(arguments, out_pipe[1], err_pipe[1]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  // Both pipes drained together, so that a full stderr never blocks the program while we
  // wait on stdout.
  program_result result;
  int fds[2] = {out_pipe[0], err_pipe[0]};
  std::string* sinks[2] = {&result.out, &result.err};
  char buffer[4096];
  while (fds[0] >= 0 || fds[1] >= 0) {
    pollfd polled[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (::poll(polled, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("poll failed");
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || polled[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i], buffer, sizeof buffer);
      if (got > 0)
        sinks[i]->append(buffer, static_cast<std::size_t>(got));
      else if (got == 0 || errno != EINTR)
        detail::close_quietly(fds[i]);
    }
  }
  result.exit_status = detail::wait_for(pid);
  return result;
}

/// Runs the program with its stderr on a pseudo-terminal (so that it draws progress bars) and
/// returns the bytes the terminal received; stdout goes to /dev/null.
inline program_result run_program_on_terminal(const std::vector<std::string>& arguments) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) throw std::runtime_error("no pty");
  int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const pid_t pid = detail::spawn(arguments, null, terminal);
  detail::close_quietly(terminal);
  detail::close_quietly(null);
  program_result result;
  char buffer[4096];
  for (;;) {  // ends with EIO once the program (the last holder of the terminal) has exited
    const ssize_t got = ::read(master, buffer, sizeof buffer);
    if (got > 0)
      result.err.append(buffer, static_cast<std::size_t>(got));
    else if (got < 0 && errno == EINTR)
      continue;
    else
      break;
  }
  ::close(master);
  result.exit_status = detail::wait_for(pid);
  return result;
}

/// `text` split at '\n'; a final line without '\n' is kept, an empty tail is not.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/// Checks a refusal that ran with --quiet: exit status `status` (1: a refused input; 2: a
/// refused command line), nothing on stdout, and stderr exactly one line
/// "clp-transfer: error: ..." naming `culprit` and holding every key word.
inline void check_error_line(const program_result& result, const std::string& culprit,
                             std::initializer_list<std::string_view> key_words, int status = 1) {
  INFO("stderr: [", result.err, "]");
  CHECK(result.exit_status == status);
  CHECK(result.out.empty());
  REQUIRE(!result.err.empty());
  CHECK(result.err.back() == '\n');
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  CHECK(result.err.rfind("clp-transfer: error: ", 0) == 0);
  CHECK(result.err.find(culprit) != std::string::npos);
  for (std::string_view word : key_words) {
    INFO("key word: ", word);
    CHECK(result.err.find(word) != std::string::npos);
  }
}

/// Checks a refusal without --quiet: exit status 1, and stderr is phase lines
/// ("clp-transfer: read ...") followed by exactly one error line naming `culprit`; no blank line.
inline void check_error_line_after_progress(const program_result& result, const std::string& culprit) {
  INFO("stderr: [", result.err, "]");
  CHECK(result.exit_status == 1);
  const std::vector<std::string> lines = lines_of(result.err);
  REQUIRE(!lines.empty());
  CHECK(result.err.back() == '\n');
  int error_lines = 0;
  for (const std::string& line : lines) {
    INFO("line: [", line, "]");
    CHECK(!line.empty());
    if (line.find("error:") != std::string::npos)
      ++error_lines;
    else
      CHECK((line.rfind("clp-transfer: ", 0) == 0 && line.size() > 4 && line.substr(line.size() - 4) == " ..."));
  }
  CHECK(error_lines == 1);
  CHECK(lines.back().rfind("clp-transfer: error: ", 0) == 0);
  CHECK(lines.back().find(culprit) != std::string::npos);
}

}  // namespace program_test
