// kax/random.hpp — kax::random: JAX's threefry2x32 PRNG, keys, and lazy samplers (docs/random.md).
#pragma once

#include "kax/random/detail/batching.hpp"
#include "kax/random/distributions.hpp"
#include "kax/random/key.hpp"
#include "kax/random/permutation.hpp"
#include "kax/random/random_expr.hpp"
#include "kax/random/threefry.hpp"
