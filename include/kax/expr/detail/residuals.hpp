// kax/expr/detail/residuals.hpp — operands that kax::grad's forward pass evaluated into memory,
// kept for its backward pass.
//
// A contraction on the GEMM path evaluates an operand that is not a plain array (gelu(x W1 + b1)
// feeding the next layer's matmul) into a temporary first.  The backward pass needs that operand
// again: the weight's gradient is a contraction of the output's cotangent with it.  Without a
// record of the forward's temporary, the backward pass would evaluate the operand a second time
// (a kernel over the whole activation, its tanh included).  While kax::grad runs its forward pass
// it installs a residual_sink on its thread; the GEMM path hands each operand temporary to it,
// keyed by the contraction's stage buffer and the operand's side, and the backward rule of the
// contraction reads it back (transform/detail/vjp.hpp).  JAX saves the same residuals.
#pragma once

#include <memory>
#include <vector>

namespace kax::detail {

// A distinct address per type: type-erased objects (a kept residual, kax::grad's gradient slots)
// record it and are checked against it where they are cast back.
template <class A>
inline constexpr char type_key = 0;

struct residual_sink {
  struct entry {
    const void* node;       // the contraction's stage buffer stamp (shared by its copies)
    int side;               // 0: left operand, 1: right operand
    const void* type;       // the kept object's type, checked on lookup
    std::shared_ptr<const void> value;
  };
  std::vector<entry> kept;

  template <class A>
  void keep(const void* node, int side, const A& a) {
    kept.push_back({node, side, &type_key<A>, std::make_shared<const A>(a)});
  }

  // The object kept for (node, side) if it has type A, else nullptr.
  template <class A>
  const A* find(const void* node, int side) const {
    for (const entry& e : kept)
      if (e.node == node && e.side == side && e.type == &type_key<A>) return static_cast<const A*>(e.value.get());
    return nullptr;
  }
};

// The sink of the forward pass running on this thread (pmap's devices run theirs on threads of
// their own), or nullptr outside kax::grad's forward pass.
inline residual_sink*& active_residual_sink() {
  thread_local residual_sink* sink = nullptr;
  return sink;
}

// Installs `s` for the scope's lifetime (nested grad calls restore the outer sink).
class residual_scope {
 public:
  explicit residual_scope(residual_sink& s) : previous_(active_residual_sink()) { active_residual_sink() = &s; }
  ~residual_scope() { active_residual_sink() = previous_; }
  residual_scope(const residual_scope&) = delete;
  residual_scope& operator=(const residual_scope&) = delete;

 private:
  residual_sink* previous_;
};

}  // namespace kax::detail
