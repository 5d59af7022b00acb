#include "io/system/interruption.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>

namespace clp_transfer::io {
namespace {

struct interruption_state {
  std::recursive_mutex mutex;  // held by the removal from the signal on, and by each commit (which registers)
  std::set<std::string> paths;
  std::atomic<int> signal{0};  // the first signal caught; 0: none
  int pipe[2] = {-1, -1};      // the handler's signal number to the removing thread
};

interruption_state& interruption_registry() {
  static interruption_state s;  // constructed before the handlers are installed
  return s;
}

static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free atomic");

extern "C" void on_interruption(int signal) {
  interruption_state& s = interruption_registry();
  int none = 0;
  if (!s.signal.compare_exchange_strong(none, signal)) ::_exit(128 + signal);  // a second signal
  const unsigned char byte = static_cast<unsigned char>(signal);
  const ssize_t written = ::write(s.pipe[1], &byte, 1);
  (void)written;
}

const char* interruption_signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

/// Removes `path` and what it holds; a writer still creating files in it is outpaced by a few tries.
bool remove_interrupted_path(const std::string& path) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::error_code error;
    std::filesystem::remove_all(path, error);
    if (!std::filesystem::exists(std::filesystem::symlink_status(path, error))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

[[noreturn]] void remove_and_exit(int signal) {
  interruption_state& s = interruption_registry();
  s.mutex.lock();  // never released: no commit starts, none is under way
  std::string removed, left;
  for (const std::string& path : s.paths) {
    std::string& list = remove_interrupted_path(path) ? removed : left;
    list += (list.empty() ? "" : ", ") + path;
  }
  std::string line = std::string(::isatty(STDERR_FILENO) ? "\r\033[K" : "") + "clp-transfer: interrupted by " +
                     interruption_signal_name(signal);
  if (!removed.empty()) line += "; removed what it had written: " + removed;
  if (!left.empty()) line += "; could not remove " + left + " (remove it by hand)";
  line += "\n";
  const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
  (void)written;
  ::_exit(128 + signal);
}

}  // namespace

void catch_interruptions() {
  static std::once_flag once;
  std::call_once(once, [] {
    interruption_state& s = interruption_registry();
    if (::pipe2(s.pipe, O_CLOEXEC) != 0) return;  // no pipe: signals keep their default action
    std::thread([read_end = s.pipe[0]] {
      unsigned char byte = 0;
      for (;;) {
        const ssize_t got = ::read(read_end, &byte, 1);
        if (got == 1) remove_and_exit(byte);
        if (got < 0 && errno == EINTR) continue;
        return;
      }
    }).detach();
    struct sigaction action {};
    action.sa_handler = on_interruption;
    ::sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (const int signal : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal, &action, nullptr);
  });
}

void remove_on_interruption(const std::filesystem::path& path) {
  interruption_state& s = interruption_registry();
  const std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.paths.insert(path.string());
}

void forget_on_interruption(const std::filesystem::path& path) {
  interruption_state& s = interruption_registry();
  const std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.paths.erase(path.string());
}

removed_if_interrupted::removed_if_interrupted(std::filesystem::path path) { reset(std::move(path)); }

void removed_if_interrupted::reset(std::filesystem::path path) {
  release();
  path_ = std::move(path);
  remove_on_interruption(path_);
}

removed_if_interrupted::~removed_if_interrupted() { release(); }

void removed_if_interrupted::release() {
  if (path_.empty()) return;
  forget_on_interruption(path_);
  path_.clear();
}

void commit_unless_interrupted(const std::function<void()>& commit) {
  interruption_state& s = interruption_registry();
  std::unique_lock<std::recursive_mutex> lock(s.mutex);
  if (s.signal.load() != 0) {
    lock.unlock();
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // the removal ends the process
  }
  commit();
}

void interruption_test_point(const char* point) {
  const char* const wanted = std::getenv("CLP_TRANSFER_TEST_SIGNAL");
  if (wanted == nullptr) return;
  const std::string value(wanted);
  const std::size_t colon = value.find(':');
  if (colon == std::string::npos || value.compare(0, colon, point) != 0) return;
  const std::string name = value.substr(colon + 1);
  const int signal = name == "INT" ? SIGINT : name == "TERM" ? SIGTERM : name == "HUP" ? SIGHUP : 0;
  if (signal != 0) ::kill(::getpid(), signal);
}

}  // namespace clp_transfer::io
