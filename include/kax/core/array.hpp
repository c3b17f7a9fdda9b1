// kax/core/array.hpp — kax::Array (owning) and kax::ArrayView (non-owning).
//
// Semantics (read this once): an Array is a handle to a reference-counted Kokkos::View, like
// Kokkos::View and std::shared_ptr.  Copying an Array shares its buffer (cheap, no data copy);
// kax::copy(a) makes an independent copy.  Assigning an *expression* to an existing Array whose
// shape matches writes into that buffer in place (no allocation — every handle sharing the buffer
// sees the new values); if the shape differs, the Array is rebound to a fresh buffer.  JAX arrays
// are immutable values; kax keeps JAX's pure-function model for expressions and transforms, and
// Eigen's in-place assignment for results, so that loops do not allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "kax/core/config.hpp"
#include "kax/core/detail/huge_pages.hpp"
#include "kax/core/dtype.hpp"
#include "kax/core/errors.hpp"
#include "kax/core/extents.hpp"
#include "kax/expr/concepts.hpp"

namespace kax {

template <element_dtype T, std::size_t R, class MemorySpace>
struct ArrayLeaf;

namespace detail {

// T*...* with R stars: the Kokkos::View data type of a rank-R array.
template <class T, std::size_t R>
struct view_data {
  using type = typename view_data<T, R - 1>::type*;
};
template <class T>
struct view_data<T, 0> {
  using type = T;
};

// A new View; large host buffers get the huge-page hint before anything touches them (so a
// zero-filled one is allocated uninitialized, advised, then filled).
template <class View, std::size_t R, std::size_t... K>
View make_view(const std::string& label, const shape<R>& s, bool init, std::index_sequence<K...>) {
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible;
  if (init && !host) return View(Kokkos::view_alloc(label), s[K]...);
  View v(Kokkos::view_alloc(label, Kokkos::WithoutInitializing), s[K]...);
  if constexpr (host) {
    advise_huge_pages(v.data(), v.span() * sizeof(typename View::value_type));
    if (init) Kokkos::deep_copy(v, typename View::value_type{});
  }
  return v;
}

template <class View, class T, std::size_t R, std::size_t... K>
View wrap_pointer(T* p, const shape<R>& s, std::index_sequence<K...>) {
  return View(p, s[K]...);
}

template <class View, std::size_t R>
shape<R> view_extents(const View& v) {
  shape<R> s{};
  for (std::size_t k = 0; k < R; ++k) s[k] = v.extent(k);
  return s;
}

// Forward declaration; defined in kax/exec/assign.hpp (include kax/kax.hpp to assign).
template <class T, std::size_t R, class MemorySpace, expression E>
void evaluate_into_view(
    const Kokkos::View<typename view_data<T, R>::type, Kokkos::LayoutRight, MemorySpace>& out,
    const E& e);

}  // namespace detail

// True when host code may dereference memory of this space.
template <class MemorySpace>
inline constexpr bool host_accessible =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;

template <element_dtype T, std::size_t R, class MemorySpace>
class ArrayView;

namespace detail {
// Marks an Array as an argument being differentiated (transform/grad.hpp).
struct tracer;
}  // namespace detail

// An owning, reference-counted, row-major array of static rank R (jax.Array's counterpart).
template <element_dtype T, std::size_t R, class MemorySpace = default_memory_space>
class Array {
 public:
  using value_type = T;
  using memory_space = MemorySpace;
  using view_type =
      Kokkos::View<typename detail::view_data<T, R>::type, Kokkos::LayoutRight, MemorySpace>;
  static constexpr std::size_t rank = R;

  // An empty array (all extents 0, no buffer).
  Array() = default;

  // A zero-filled array of the given shape.
  explicit Array(const shape<R>& s) : view_(allocate(s, true)) {}

  // A zero-filled array, one extent per axis: Array<float, 2> a(3, 4).
  template <std::integral... I>
    requires(sizeof...(I) == R && R > 0)
  explicit Array(I... extents) : Array(shape<R>{static_cast<std::size_t>(extents)...}) {}

  // Takes over an existing View (shares it; no copy).
  explicit Array(view_type v) : view_(std::move(v)) {}

  // Evaluates an expression into a new buffer: one fused kernel.
  template <expression E>
  Array(const E& e) {  // NOLINT: implicit, so that `Array<float, 2> y = a * b;` reads naturally
    static_assert(rank_of<E> == R, "kax::Array: the expression's rank differs from the Array's rank");
    view_ = allocate(e.extents(), false);
    detail::evaluate_into_view<T, R, MemorySpace>(view_, e);
  }

  // Evaluates an expression in place when shapes match, else into a fresh buffer (file comment).
  template <expression E>
  Array& operator=(const E& e) {
    static_assert(rank_of<E> == R, "kax::Array: the expression's rank differs from the Array's rank");
    // A default-constructed rank-0 Array has the right (empty) shape but no buffer yet.
    if (extents() != e.extents() || (view_.data() == nullptr && size_of(e.extents()) > 0))
      view_ = allocate(e.extents(), false);
    detail::evaluate_into_view<T, R, MemorySpace>(view_, e);
    return *this;
  }

  // Converts another array-like (an Array of another dtype, an ArrayView): a copy, one kernel.
  template <array_like A>
    requires(!std::same_as<std::remove_cvref_t<A>, Array>)
  explicit Array(const A& a) : Array(a.as_leaf()) {}

  Array(const Array&) = default;
  Array(Array&&) noexcept = default;
  Array& operator=(const Array&) = default;
  Array& operator=(Array&&) noexcept = default;

  shape<R> extents() const { return detail::view_extents<view_type, R>(view_); }
  std::size_t extent(std::size_t k) const { return view_.extent(k); }
  std::size_t size() const { return view_.size(); }
  bool empty() const { return size() == 0; }
  T* data() const { return view_.data(); }
  const view_type& view() const { return view_; }
  // How many handles share this buffer (Kokkos' reference count).
  int use_count() const { return view_.use_count(); }

  // Host element access; the memory must be host-accessible (see kax::to_host).
  template <std::integral... I>
    requires(sizeof...(I) == R)
  T& operator()(I... i) const {
    static_assert(host_accessible<MemorySpace>,
                  "kax::Array::operator(): this array lives in device memory; copy it with "
                  "kax::to_host first");
    return view_(static_cast<std::size_t>(i)...);
  }

  // Bounds-checked host element access; throws kax::shape_error.
  template <std::integral... I>
    requires(sizeof...(I) == R)
  T& at(I... i) const {
    const shape<R> idx{static_cast<std::size_t>(i)...};
    const shape<R> ext = extents();
    for (std::size_t k = 0; k < R; ++k)
      if (idx[k] >= ext[k])
        throw shape_error("kax::Array::at: index " + shape_string(idx) +
                          " is out of bounds for shape " + shape_string(ext));
    return (*this)(i...);
  }

  // The expression leaf that reads this array (shares ownership of the buffer).
  ArrayLeaf<T, R, MemorySpace> as_leaf() const;

 private:
  static view_type allocate(const shape<R>& s, bool init) {
    return detail::make_view<view_type, R>("kax::Array", s, init, std::make_index_sequence<R>{});
  }

  friend struct detail::tracer;

  view_type view_;
  // Nonzero on the copy of an argument that kax::grad passes to the differentiated function: the
  // leaves that read it carry the number, which is how the backward pass finds its gradient.
  std::uint32_t trace_ = 0;
};

// A non-owning view of row-major memory (an Array's, or any pointer's): the caller keeps the
// memory alive, as with std::span or Eigen::Map.
template <element_dtype T, std::size_t R, class MemorySpace = default_memory_space>
class ArrayView {
 public:
  using value_type = T;
  using memory_space = MemorySpace;
  using view_type = typename Array<T, R, MemorySpace>::view_type;
  static constexpr std::size_t rank = R;

  ArrayView() = default;
  ArrayView(T* data, const shape<R>& s)
      : view_(detail::wrap_pointer<view_type, T, R>(data, s, std::make_index_sequence<R>{})) {}
  // Views an Array's buffer without taking a reference.
  ArrayView(const Array<T, R, MemorySpace>& a)  // NOLINT: implicit, like std::span from vector
      : ArrayView(a.data(), a.extents()) {}

  // Evaluates an expression into the viewed memory; shapes must match.
  template <expression E>
  ArrayView& operator=(const E& e) {
    static_assert(rank_of<E> == R,
                  "kax::ArrayView: the expression's rank differs from the view's rank");
    if (extents() != e.extents())
      throw shape_error("kax::ArrayView: cannot assign an expression of shape " +
                        shape_string(e.extents()) + " to a view of shape " +
                        shape_string(extents()));
    detail::evaluate_into_view<T, R, MemorySpace>(view_, e);
    return *this;
  }

  shape<R> extents() const { return detail::view_extents<view_type, R>(view_); }
  std::size_t extent(std::size_t k) const { return view_.extent(k); }
  std::size_t size() const { return view_.size(); }
  T* data() const { return view_.data(); }
  const view_type& view() const { return view_; }

  template <std::integral... I>
    requires(sizeof...(I) == R)
  T& operator()(I... i) const {
    static_assert(host_accessible<MemorySpace>,
                  "kax::ArrayView::operator(): this memory is not host-accessible");
    return view_(static_cast<std::size_t>(i)...);
  }

  ArrayLeaf<T, R, MemorySpace> as_leaf() const;

 private:
  view_type view_;
};

}  // namespace kax
