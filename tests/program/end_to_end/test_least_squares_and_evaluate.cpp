// `--weighting least-squares` end to end (the written rows against the normal equations solved
// in double, the summary's and report's fit), and `clp-transfer evaluate`: its table, its JSON,
// its recommendation and its refusals.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <clp/adapters/eigen.hpp>
#include <clp/synthesize.hpp>
#include <clp/vocabulary.hpp>

#include <Eigen/Core>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "clp_oracle.hpp"
#include "harness.hpp"
#include "model_fixtures.hpp"
#include "output_checks.hpp"

using namespace program_test;

#ifdef CLP_HAVE_BLAS
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
#endif

namespace {

void check_map_transfer(const workspace& ws, double lambda, std::size_t maps, const std::string& row_norms) {
  weighting_choice choice{"least-squares"};
  choice.lambda = lambda;
  choice.row_norms = row_norms;
  const fs::path report = ws.dir / "report.json";
  std::vector<std::string> extra = choice.arguments();
  extra.insert(extra.end(), {"--report", report.string()});
  const program_result result = run_program(ws.transfer(extra));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(result.err.find("least-squares map  lambda") != std::string::npos);
  CHECK(result.err.find("(--lambda), R^2 on the overlap") != std::string::npos);
  check_embeddings(ws.pair, ws.output, clp_oracle(ws.pair, choice));
  const auto json = nlohmann::json::parse(read_file(report));
  REQUIRE(json.contains("least_squares"));
  REQUIRE(json["least_squares"]["maps"].size() == maps);
  for (const auto& map : json["least_squares"]["maps"]) {
    CHECK(map["relative_lambda"].get<double>() == doctest::Approx(lambda));
    CHECK(map["lambda_chosen_by_gcv"] == false);
    CHECK(map["r_squared_on_overlap"].get<double>() <= 1.0);
  }
  CHECK(json["least_squares"]["held_out"]["rows"].get<int>() > 0);
  CHECK(std::abs(json["least_squares"]["held_out"]["mean_cosine"].get<double>()) <= 1.0);
}

std::vector<std::string> evaluate_args(const model_pair& pair, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"evaluate", "--source", pair.source.folder.string(), "--helper",
                                pair.helper.folder.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("least-squares: GPT-2 pair (tied F32) matches the normal equations solved in double") {
  for (const std::string row_norms : {"top-k", "top-k-mean", "map"}) {
    CAPTURE(row_norms);
    check_map_transfer(gpt2_workspace(), 0.1, 1, row_norms);
  }
}

TEST_CASE("least-squares: Llama pair (BF16, untied head): embedding and head each get their own map") {
  for (const std::string row_norms : {"top-k", "top-k-mean", "map"}) {
    CAPTURE(row_norms);
    check_map_transfer(llama_workspace(), 0.5, 2, row_norms);
  }
}

TEST_CASE("default: no --weighting writes what clp::synthesize_rows with no policy writes, on the shipped pair") {
  const fs::path models = CLP_EXAMPLE_MODELS_DIR;
  const temp_dir dir;
  // The library's product is float32; so is the program's with --similarity-product float32.
  const program_result result =
      run_program({"transfer", "--source", (models / "en-large").string(), "--helper", (models / "de-small").string(),
                   "--output", (dir / "out").string(), "--similarity-product", "float32", "--quiet"});
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);

  const auto vocabulary = [](const fs::path& folder) {
    return nlohmann::json::parse(read_file(folder / "vocab.json")).get<std::map<std::string, std::int64_t>>();
  };
  const std::string name = "transformer.wte.weight";
  const matrix source = read_matrix(models / "en-large" / "model.safetensors", name);
  const matrix helper = read_matrix(models / "de-small" / "model.safetensors", name);
  using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto as_float = [](const matrix& m) {
    row_major out(m.rows, m.cols);
    for (std::int64_t i = 0; i < m.rows * m.cols; ++i) out.data()[i] = float(m.values[std::size_t(i)]);
    return out;
  };
  const row_major source_rows = as_float(source), helper_rows = as_float(helper);
  const clp::vocabulary_overlap overlap = clp::intersect_vocabularies(
      vocabulary(models / "en-large"), vocabulary(models / "de-small"), {source.rows, helper.rows, {}});
  row_major expected(helper.rows, source.cols);
#ifdef CLP_HAVE_BLAS
  // As the program runs its products (main.cpp): one BLAS thread inside each of the library's
  // workers. A multi-threaded BLAS may round the last bit differently.
  if (openblas_set_num_threads) openblas_set_num_threads(1);
#endif
  clp::synthesize_rows(source_rows, helper_rows, overlap, expected);

  const matrix written = read_matrix(dir / "out" / "model.safetensors", name);
  REQUIRE(written.rows == helper.rows);
  std::int64_t differing = 0;
  for (std::int64_t i = 0; i < written.rows * written.cols; ++i)
    differing += float(written.values[std::size_t(i)]) != expected.data()[i];
  CHECK(differing == 0);
}

TEST_CASE("least-squares: without --lambda the summary says GCV chose it") {
  const workspace ws = gpt2_workspace();
  const program_result result = run_program(ws.transfer({"--weighting", "least-squares"}));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(result.err.find("(chosen by GCV)") != std::string::npos);
}

TEST_CASE("evaluate --json: every weighting, sorted by score, three splits, a recommendation without inflated rows") {
  const workspace ws = gpt2_workspace();
  const program_result result = run_program(evaluate_args(ws.pair, {"--json", "--quiet"}));
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  CHECK(result.err.empty());
  const auto json = nlohmann::json::parse(result.out);
  CHECK(json["splits"] == 3);
  CHECK(json["held_out_share"].get<double>() == doctest::Approx(0.1));
  const auto& rows = json["weightings"];
  REQUIRE(rows.size() == 12);  // 6 without k, top-k and softmax at k 5, 10, 30
  double previous = 2;
  for (const auto& row : rows) {
    INFO(row.dump());
    const double cosine = row["mean_cosine"].get<double>();
    CHECK(cosine <= previous);
    previous = cosine;
    REQUIRE(row["split_cosines"].size() == 3);
    double mean = 0;
    for (const auto& x : row["split_cosines"]) mean += x.get<double>() / 3;
    CHECK(cosine == doctest::Approx(mean));
    CHECK(row["spread"].get<double>() >= 0);
    CHECK(row["missing_inflated_rows"].get<int>() >= 0);
  }
  REQUIRE(json["recommended"].is_object());
  const auto best = std::find_if(rows.begin(), rows.end(), [&](const auto& row) {
    return row["weighting"] == json["recommended"]["weighting"] && row["k"] == json["recommended"]["k"];
  });
  REQUIRE(best != rows.end());
  CHECK((*best)["missing_inflated_rows"] == 0);
  // The default, unless the best score among the rows that inflate none leads it, paired by
  // split, by more than half the range of the paired differences.
  const auto by_default = std::find_if(rows.begin(), rows.end(), [](const auto& row) {
    return row["weighting"] == "least-squares" && row["k"].is_null();
  });
  REQUIRE(by_default != rows.end());
  const auto leader = std::find_if(
      rows.begin(), rows.end(), [](const auto& row) { return row["missing_inflated_rows"].template get<int>() == 0; });
  std::vector<double> d;
  for (std::size_t s = 0; s < 3; ++s)
    d.push_back((*leader)["split_cosines"][s].get<double>() - (*by_default)["split_cosines"][s].get<double>());
  const double lead = (d[0] + d[1] + d[2]) / 3;
  const double spread = (*std::max_element(d.begin(), d.end()) - *std::min_element(d.begin(), d.end())) / 2;
  CHECK(json["recommended"]["default"] == (best == by_default));
  CHECK(json["recommended"]["lead_over_default"].get<double>() == doctest::Approx(lead));
  CHECK(json["recommended"]["splits_spread"].get<double>() == doctest::Approx(spread));
  if (lead > spread && leader != by_default)
    CHECK(best == leader);
  else
    CHECK(best == by_default);
}

TEST_CASE("evaluate --json on the shipped pair equals the reference to float32 rounding") {
  // tests/data/evaluate/PROVENANCE.md: what the build that formed the cosines once per weighting
  // and split printed. Every weighting's diagnostics now come from one pass over the missing rows
  // and each split's from one pass over its held-out rows; the figures must not move.
  const fs::path models = CLP_EXAMPLE_MODELS_DIR;
  const program_result result = run_program({"evaluate", "--source", (models / "en-large").string(), "--helper",
                                             (models / "de-small").string(), "--json", "--threads", "1"});
  INFO("stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  const auto got = nlohmann::json::parse(result.out);
  const auto want = nlohmann::json::parse(read_file(fs::path(CLP_TEST_DATA_DIR) / "evaluate" / "shipped_pair.json"));
  CHECK(got["missing_rows_similarity_product"] == "float32");  // paper and omp read whole rows
  // Every value of the reference, the same in the output: numbers to float32 rounding, the rest
  // exactly; what depends on the run (its paths, its time) is left out.
  std::vector<std::pair<std::string, std::pair<const nlohmann::json*, const nlohmann::json*>>> pending{
      {"", {&want, &got}}};
  while (!pending.empty()) {
    const auto [path, values] = pending.back();
    pending.pop_back();
    const nlohmann::json& a = *values.first;
    const nlohmann::json& b = *values.second;
    INFO("at ", path, ": reference ", a.dump(), ", now ", b.dump());
    if (path == "/source" || path == "/helper" || path == "/seconds") continue;
    if (a.is_object() || a.is_array()) {
      REQUIRE(b.type() == a.type());
      REQUIRE((a.is_object() || b.size() == a.size()));
      for (auto item = a.begin(); item != a.end(); ++item) {
        const std::string key = a.is_object() ? item.key() : std::to_string(std::distance(a.begin(), item));
        const nlohmann::json& other = a.is_object() ? b[key] : b[std::size_t(std::distance(a.begin(), item))];
        pending.push_back({path + "/" + key, {&*item, &other}});
      }
    } else if (a.is_number_float()) {
      REQUIRE(b.is_number());
      CHECK(std::abs(b.get<double>() - a.get<double>()) <= 4e-7 * std::max(1.0, std::abs(a.get<double>())));
    } else {
      CHECK(b == a);
    }
  }
}

TEST_CASE("evaluate --weightings: only the weightings named, each as in the whole table") {
  const workspace ws = gpt2_workspace();
  const program_result all = run_program(evaluate_args(ws.pair, {"--json", "--quiet", "--threads", "1"}));
  const program_result some = run_program(
      evaluate_args(ws.pair, {"--json", "--quiet", "--threads", "1", "--weightings", "top-k:30,least-squares,omp"}));
  INFO("stderr: ", all.err, some.err);
  REQUIRE(all.exit_status == 0);
  REQUIRE(some.exit_status == 0);
  const auto whole = nlohmann::json::parse(all.out)["weightings"];
  const auto chosen = nlohmann::json::parse(some.out)["weightings"];
  REQUIRE(chosen.size() == 3);
  for (const auto& row : chosen) {
    INFO(row.dump());
    const auto same = std::find_if(whole.begin(), whole.end(), [&](const auto& other) {
      return other["weighting"] == row["weighting"] && other["k"] == row["k"];
    });
    REQUIRE(same != whole.end());
    CHECK(row["split_cosines"] == (*same)["split_cosines"]);
    CHECK(row["missing_inflated_rows"] == (*same)["missing_inflated_rows"]);
    CHECK(row["missing_negative_sum_rows"] == (*same)["missing_negative_sum_rows"]);
  }
  CHECK(nlohmann::json::parse(some.out)["recommended"]["weighting"] != "omp");  // it inflates rows here
}

TEST_CASE("evaluate: progress on stderr, one line per phase when stderr is not a terminal") {
  const workspace ws = gpt2_workspace();
  const program_result result = run_program(evaluate_args(ws.pair, {"--weightings", "top-k", "--splits", "2"}));
  REQUIRE(result.exit_status == 0);
  CHECK(lines_of(result.err) == std::vector<std::string>{"clp-transfer: read ...",
                                                         "clp-transfer: held out (2 splits) ...",
                                                         "clp-transfer: missing rows ..."});
}

TEST_CASE("evaluate on the shipped pair: the table and a recommendation, in seconds") {
  const fs::path models = CLP_EXAMPLE_MODELS_DIR;
  const program_result result =
      run_program({"evaluate", "--source", (models / "en-large").string(), "--helper", (models / "de-small").string()});
  INFO("stdout: ", result.out, " stderr: ", result.err);
  REQUIRE(result.exit_status == 0);
  const std::vector<std::string> lines = lines_of(result.out);
  REQUIRE(lines.size() == 16);  // heading, column names, 12 weightings, recommendation, legend
  CHECK(lines[0] == "held out 10% of 1401 overlapping tokens (3 splits); 3599 missing rows");
  CHECK(lines[14].rfind("recommended: --weighting ", 0) == 0);
  CHECK(lines[14].find("paper") == std::string::npos);  // paper inflates rows on this pair
}

TEST_CASE("evaluate refusals: one line naming the problem, status 1, nothing on stdout, nothing written") {
  const workspace ws = gpt2_workspace();
  SUBCASE("a missing source folder") {
    const fs::path gone = ws.dir / "no-such-model";
    check_error_line_after_progress(
        run_program({"evaluate", "--source", gone.string(), "--helper", ws.pair.helper.folder.string()}),
        gone.string());
  }
  SUBCASE("--weightings: an unknown name, a bad k, a k for a weighting without one, a name twice, an empty entry") {
    check_error_line(run_program(evaluate_args(ws.pair, {"--weightings", "top-k,ridge"})), "--weightings",
                     {"unknown weighting 'ridge'"});
    check_error_line(run_program(evaluate_args(ws.pair, {"--weightings", "top-k:0"})), "--weightings",
                     {"entry 'top-k:0': k must be a whole number of at least 1"});
    check_error_line(run_program(evaluate_args(ws.pair, {"--weightings", "paper:3"})), "--weightings",
                     {"entry 'paper:3': paper reads no k"});
    check_error_line(run_program(evaluate_args(ws.pair, {"--weightings", "top-k,top-k:10"})), "--weightings",
                     {"names top-k k=10 twice"});
    check_error_line(run_program(evaluate_args(ws.pair, {"--weightings", "top-k,,omp"})), "--weightings",
                     {"empty entry"});
  }
  SUBCASE("--similarity-product bf16 with a weighting that reads whole rows") {
    check_error_line(
        run_program(evaluate_args(ws.pair, {"--weightings", "top-k,paper", "--similarity-product", "bf16"})),
        "--similarity-product", {"does not apply when paper is scored"});
  }
  SUBCASE("--held-out out of range") {
    check_error_line(run_program(evaluate_args(ws.pair, {"--held-out", "1.5"})), "--held-out", {"between 0 and 1"});
  }
  SUBCASE("--splits 0") {
    check_error_line(run_program(evaluate_args(ws.pair, {"--splits", "0"})), "--splits", {"at least 1"});
  }
  CHECK(fs::is_empty(ws.out_parent));
}
