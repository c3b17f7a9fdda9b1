// kax/nn.hpp — kax::nn, jax.nn's functions: activations (relu, sigmoid, silu, gelu) and
// softmax, log_softmax, logsumexp.
#pragma once

#include "kax/nn/activations.hpp"
#include "kax/nn/softmax.hpp"
