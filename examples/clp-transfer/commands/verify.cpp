// `clp-transfer verify FOLDER`: checks any Hugging Face model folder before training or
// converting it (verify/verify_folder.hpp) and prints one line a finding. Exit status 0 when it
// finds nothing, 1 with findings, 2 when the folder cannot be read at all.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/command.hpp"
#include "errors.hpp"
#include "verify/finding.hpp"
#include "verify/verify_folder.hpp"

namespace clp_transfer {

namespace {

struct verify_options {
  std::filesystem::path folder;
  verify::tensor_choice names;
  bool json = false;
  bool quiet = false;
};

/// The findings on stdout (one line each, then what to do about it; or the JSON report), and how
/// many on stderr.
void print_findings(const verify_options& options, const std::vector<verify::finding>& findings) {
  if (options.json) {
    std::printf("%s\n", verify::findings_json(options.folder, findings).dump(2).c_str());
  } else {
    for (const verify::finding& finding : findings)
      std::printf("%s\n  what to do: %s\n", finding.line().c_str(),
                  std::string(verify::what_to_do(finding.kind)).c_str());
  }
  if (!options.quiet)
    std::fprintf(stderr, "clp-transfer: verify %s: %s\n", options.folder.c_str(),
                 findings.empty()
                     ? "no findings"
                     : (std::to_string(findings.size()) + (findings.size() == 1 ? " finding" : " findings")).c_str());
}

/// Exits with the command's own status: a finding is not an error of the program, and a folder
/// that cannot be read at all is told apart from one with findings.
void run_verify(const verify_options& options) {
  std::vector<verify::finding> findings;
  try {
    findings = verify::verify_folder(options.folder, options.names);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clp-transfer: error: %s\n", error_line(e).c_str());
    std::exit(2);
  }
  print_findings(options, findings);
  std::fflush(stdout);
  if (!findings.empty()) std::exit(1);
}

}  // namespace

command verify_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "verify",
      "Check a model folder: vocab_size, token ids, the tie flag, special ids and tokenizer files against "
      "each other, and the vocabulary tensors for NaN and zero rows (exit 0: none found, 1: findings)");
  const auto options = std::make_shared<verify_options>();
  command->add_option("FOLDER", options->folder, "Hugging Face model folder")->required();
  command->add_option("--embedding-tensor", options->names.embedding, "Input embedding name (default: found)");
  command->add_option("--lm-head-tensor", options->names.head, "Untied output head name (default: found)");
  command->add_flag("--json", options->json, "Print the findings as JSON");
  command->add_flag("--quiet", options->quiet, "Print the findings only, not their count");
  return {command, [options] { run_verify(*options); }};
}

}  // namespace clp_transfer
