// kax/optim.hpp — kax::optim, optax's optimizers over pytrees of kax::Arrays: sgd, adam, and
// apply_updates / tree helpers.
#pragma once

#include "kax/optim/adam.hpp"
#include "kax/optim/sgd.hpp"
#include "kax/optim/tree.hpp"
