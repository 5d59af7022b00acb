// The replay driver: the fuzz targets without libFuzzer, all in one executable. `clp_fuzz_replay
// TARGET PATH...` feeds every file under the folders (or the files) named to TARGET's entry point
// (fuzz_registry.hpp), in sorted order, so the regular test suite proves the seed corpus and
// every past finding with any compiler, under the sanitize preset too. A finding aborts (a
// failed test); otherwise it prints a count.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_registry.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const auto target = argc > 1 ? clp_fuzz::targets().find(argv[1]) : clp_fuzz::targets().end();
  if (target == clp_fuzz::targets().end()) {
    std::fprintf(stderr, "usage: clp_fuzz_replay TARGET PATH...   (TARGET one of:");
    for (const auto& [name, entry] : clp_fuzz::targets()) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, ")\n");
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 2; i < argc; ++i) {
    const fs::path where = argv[i];
    if (fs::is_directory(where)) {
      for (const auto& entry : fs::recursive_directory_iterator(where))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else if (fs::is_regular_file(where)) {
      files.push_back(where);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.eof() && !in) {
      std::fprintf(stderr, "replay: %s: cannot read\n", file.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
    target->second(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs for %s, no finding\n", files.size(), argv[1]);
  return files.empty() ? 2 : 0;
}
