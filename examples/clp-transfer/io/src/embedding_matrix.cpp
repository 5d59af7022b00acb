#include "io/embedding_matrix.hpp"

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace clp_transfer {

page_buffer::page_buffer(std::size_t bytes) {
  if (bytes == 0) return;
  const std::size_t alignment = bytes >= huge_page ? huge_page : 64;
  size_ = (bytes + alignment - 1) / alignment * alignment;
#ifdef __linux__
  if (alignment == huge_page) {
    memory_ = map_aligned(size_);
    return;
  }
#endif
  void* memory = std::aligned_alloc(alignment, size_);
  if (memory == nullptr) throw std::bad_alloc();
  memory_.reset(memory);
}

std::size_t page_buffer::move_pages(std::size_t from, std::size_t size, std::size_t to) {
  std::size_t moved = 0;
#if defined(__linux__) && defined(MREMAP_DONTUNMAP)
  if (memory_.get_deleter().mapped == 0) return 0;
  auto* const base = static_cast<char*>(data());
  // One huge page per call: earlier moves split the mapping, and mremap moves within one piece.
  // DONTUNMAP leaves the old range mapped (empty), so no other mapping can take its place.
  for (; moved < size; moved += huge_page)
    if (::mremap(base + from + moved, huge_page, huge_page, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
                 base + to + moved) == MAP_FAILED)
      break;
#else
  (void)from;
  (void)size;
  (void)to;
#endif
  return moved;
}

void page_buffer::release::operator()(void* p) const {
#ifdef __linux__
  if (mapped != 0) {
    ::munmap(p, mapped);
    return;
  }
#endif
  std::free(p);
}

#ifdef __linux__
std::unique_ptr<void, page_buffer::release> page_buffer::map_aligned(std::size_t size) {
  void* const mapped = ::mmap(nullptr, size + huge_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(mapped);
  const std::uintptr_t aligned = (start + huge_page - 1) / huge_page * huge_page;
  if (aligned > start) ::munmap(mapped, aligned - start);
  if (const std::uintptr_t tail = start + huge_page - aligned; tail > 0)
    ::munmap(reinterpret_cast<void*>(aligned + size), tail);
  ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return {reinterpret_cast<void*>(aligned), release{size}};
}
#endif

std::optional<clp::element_type> element_type_of(io::dtype dtype) {
  switch (dtype) {
    case io::dtype::f32:
      return clp::element_type::float32;
    case io::dtype::f64:
      return clp::element_type::float64;
    case io::dtype::f16:
      return clp::element_type::float16;
    case io::dtype::bf16:
      return clp::element_type::bfloat16;
    default:
      return std::nullopt;
  }
}

embedding_matrix embedding_matrix::read(const io::model_weights& weights, const std::string& name) {
  const io::located_tensor found = weights.locate(name);
  if (found.tensor.shape.size() != 2)
    io::malformed(found.file.path(), "has shape " + io::format_shape(found.tensor.shape) + ", not [rows, cols]", name);
  return map(found, found.tensor.shape[0], found.tensor.shape[1]);
}

embedding_matrix embedding_matrix::read(const io::model_weights& weights, const std::string& name, Index rows,
                                        Index cols) {
  const io::located_tensor found = weights.locate(name);
  std::int64_t count = 1;
  for (std::int64_t d : found.tensor.shape) count *= d;
  if (count != rows * cols)
    io::malformed(found.file.path(),
                  "has shape " + io::format_shape(found.tensor.shape) + ", not " + std::to_string(rows) + " x " +
                      std::to_string(cols) + " values",
                  name);
  return map(found, rows, cols);
}

embedding_matrix embedding_matrix::map(const io::located_tensor& found, Index rows, Index cols) {
  const io::tensor_entry& tensor = found.tensor;
  embedding_matrix m(tensor.dtype, rows, cols, found.file.path(), tensor.name);
  if (tensor.byte_size > 0 && tensor.offset % clp::element_size(m.type_) == 0) {
    m.mapping_ = found.file.map(tensor);
    m.data_ = const_cast<void*>(m.mapping_.data());  // never written: writable_ stays false
  } else {
    m.memory_ = page_buffer(tensor.byte_size);
    m.data_ = m.memory_.data();
    found.file.read(tensor, m.data_, tensor.byte_size);
  }
  return m;
}

void embedding_matrix::release_pages(std::size_t offset, std::size_t size) {
  if (!writable_) throw std::logic_error(description() + " is read-only");
#ifdef __linux__
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<std::uintptr_t>(data_) + offset;
  const std::uintptr_t begin = (start + page - 1) / page * page, end = (start + size) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
  (void)offset;
  (void)size;
#endif
}

void require_finite(const embedding_matrix& m, const std::vector<Index>& rows, int threads) {
  if (const auto at = clp::find_non_finite(m.view(), rows, threads)) {
    clp::error_facts facts = m.origin();
    facts.row = at->row;
    facts.column = at->column;
    throw clp::non_finite_input(std::move(facts));
  }
}

void require_finite(const embedding_matrix& m, int threads) {
  std::vector<Index> all(static_cast<std::size_t>(m.rows()));
  for (Index r = 0; r < m.rows(); ++r) all[static_cast<std::size_t>(r)] = r;
  require_finite(m, all, threads);
}

}  // namespace clp_transfer
