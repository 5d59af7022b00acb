// What a subcommand of clp-transfer is to main.cpp: its CLI11 app, and what to run once the
// command line chose it. Each command's file (commands/<name>.cpp) adds its subcommand, registers
// its own options into a value of its own and interprets them; main.cpp only lists the commands.
// A new command is a new file and one line there; a new option, a line in its command's file.
// The options two commands share are registered here, once.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "execution_arguments.hpp"
#include "library_names.hpp"

namespace clp_transfer {

/// A subcommand: its CLI11 app, and what to do when the command line names it. `run` throws a
/// clp::error, or an io::file_error about a file it reads or writes, for anything it refuses.
struct command {
  CLI::App* app = nullptr;
  std::function<void()> run;
};

/// The commands (commands/<name>.cpp), each adding its subcommand to `app`.
command transfer_command(CLI::App& app);
command overlap_command(CLI::App& app);
command similarity_command(CLI::App& app);
command evaluate_command(CLI::App& app);
command verify_command(CLI::App& app);
command extend_command(CLI::App& app);

/// --threads and --tile-mb, as `transfer` and `similarity` both take them.
/// @param[in]  tile_help  what --tile-mb bounds, in the command's words
inline void add_execution_options(CLI::App& command, execution_arguments& execution, const std::string& tile_help) {
  command.add_option("--threads", execution.threads, "Worker threads (0: all cores)");
  command.add_option("--tile-mb", execution.tile_mb, tile_help)->capture_default_str();
}

/// --match, as `transfer` and `overlap` both take it; returns the option, which says whether it
/// was given (an explicit `bytes` refuses a spelling that cannot be told).
inline CLI::Option* add_match_option(CLI::App& command, std::string& value) {
  return command
      .add_option("--match", value,
                  "bytes: tokens that stand for the same bytes in their tokenizers' spellings (Ġhouse = ▁house); "
                  "exact: the same string (the paper)")
      ->capture_default_str();
}

}  // namespace clp_transfer
