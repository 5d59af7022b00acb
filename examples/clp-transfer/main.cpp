// clp-transfer: give a large language model a new vocabulary (CLP-Transfer, Ostendorff & Rehm
// 2023), and the paper's two diagnostics. This file only lists the commands and reports their
// errors; each command registers its own options and runs in commands/<name>.cpp.
#include <unistd.h>
#include <CLI/CLI.hpp>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <clp/version.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "commands/command.hpp"
#include "commands/option_checks.hpp"
#include "errors.hpp"
#include "io/system/interruption.hpp"

#ifdef CLP_HAVE_BLAS
// Each worker thread of the library runs its own single-threaded product; OpenBLAS's own
// threads would only oversubscribe the cores. Weak, so any other BLAS links too.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
#endif

namespace {

/// Settings of the process, before any command runs.
void configure_process() {
#if defined(__GLIBC__)
  // Buffers of 1 MiB and more straight from mmap, and back to the system when freed. By
  // default glibc raises this threshold after the first large free (up to 32 MiB), and the
  // multi-MB buffers freed after reading the vocabularies would then stay in the heap through
  // the synthesis, as peak memory. The program's few large buffers live long, so the extra
  // mmap calls cost next to nothing.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
#ifdef CLP_HAVE_BLAS
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#endif
}

/// Runs the program again with glibc's malloc asking the kernel for transparent huge pages
/// (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`), where the kernel grants them only on request (its
/// `madvise` mode, Debian's default): a transfer's large buffers are mapped fresh and first
/// touched once each, and with 4 KiB pages the faults cost seconds at real shapes
/// (docs/performance.md). glibc reads the variable only as the process starts, hence the exec;
/// it returns where it changes nothing (the variable already names the setting, the user's or
/// ours), or where the exec fails.
void run_with_huge_pages(char** argv) {
#if defined(__GLIBC__) && defined(__linux__)
  const char* const tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.hugetlb") != nullptr) return;
  std::FILE* const mode = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (mode == nullptr) return;
  char line[128] = {};
  const bool on_request = std::fgets(line, sizeof line, mode) != nullptr && std::strstr(line, "[madvise]") != nullptr;
  std::fclose(mode);
  if (!on_request) return;
  const std::string value = (tunables != nullptr && *tunables != '\0' ? std::string(tunables) + ":" : std::string()) +
                            "glibc.malloc.hugetlb=1";
  // The program's own path, not /proc/self/exe itself: under a tool that runs it (valgrind), that
  // link is the tool, and the tool answers readlink with the program.
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return;
  self[length] = '\0';
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  ::execv(self, argv);
  // No exec: go on with 4 KiB pages, the variable left for nobody to read.
#else
  (void)argv;
#endif
}

/// CLI11's message for a usage error; for a first word that names no command, which CLI11 reports
/// only as "A subcommand is required", that word and the commands there are.
std::string usage_error(const CLI::ParseError& e, int argc, char** argv,
                        const std::vector<clp_transfer::command>& commands) {
  if (argc < 2 || argv[1][0] == '-') return e.what();
  std::string names;
  for (const clp_transfer::command& command : commands) {
    if (command.app->get_name() == argv[1]) return e.what();
    names += (names.empty() ? "" : ", ") + command.app->get_name();
  }
  return "unknown command '" + std::string(argv[1]) + "'; one of " + names;
}

}  // namespace

int main(int argc, char** argv) {
  configure_process();
  CLI::App app{"clp-transfer: a new vocabulary for a large language model, from a small model that speaks it"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "clp-transfer " + std::to_string(clp::version_major) + "." +
                                        std::to_string(clp::version_minor) + "." + std::to_string(clp::version_patch));
  namespace program = clp_transfer;
  const std::vector<program::command> commands = {program::transfer_command(app),   program::overlap_command(app),
                                                  program::similarity_command(app), program::evaluate_command(app),
                                                  program::verify_command(app),     program::extend_command(app)};
  // Every numeric option of every command refuses an empty value, which CLI11 converts to 0.
  for (const program::command& command : commands)
    for (CLI::Option* option : command.app->get_options())
      if (const std::string type = option->get_type_name();
          type == "INT" || type == "UINT" || type == "FLOAT" || type == "NUMBER")
        option->check(program::a_number());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors are one line too, with the usual exit status of a usage error.
    std::fprintf(stderr, "clp-transfer: error: %s (see clp-transfer --help)\n",
                 usage_error(e, argc, argv, commands).c_str());
    return 2;
  }
  // The commands that synthesise or multiply large matrices run with huge pages; the others
  // start in a few milliseconds, which an exec would double.
  for (const char* heavy : {"transfer", "evaluate", "similarity", "extend"})
    if (app.got_subcommand(heavy)) run_with_huge_pages(argv);
  // A run stopped by SIGINT, SIGTERM or SIGHUP leaves nothing it wrote behind.
  clp_transfer::io::catch_interruptions();
  try {
    for (const program::command& command : commands)
      if (command.app->parsed()) command.run();
  } catch (const std::exception& e) {
    // On a terminal, first clear a progress bar the error may have interrupted.
    std::fprintf(stderr, "%sclp-transfer: error: %s\n", ::isatty(STDERR_FILENO) ? "\r\033[K" : "",
                 program::error_line(e).c_str());
    return 1;
  }
  return 0;
}
