// kax/kax.hpp — the umbrella header: everything except the opt-in interop header
// kax/interop/eigen.hpp (Eigen's Dense module and Eigen object leaves).  Contractions
// (kax/expr/contractions.hpp) include <Eigen/Core> for the host GEMM.
#pragma once

#include "kax/core/array.hpp"
#include "kax/core/config.hpp"
#include "kax/core/dtype.hpp"
#include "kax/core/errors.hpp"
#include "kax/core/extents.hpp"
#include "kax/core/factories.hpp"
#include "kax/core/scope_guard.hpp"
#include "kax/core/transfer.hpp"
#include "kax/exec/assign.hpp"
#include "kax/exec/eval.hpp"
#include "kax/expr/as_expr.hpp"
#include "kax/expr/layout/broadcast_to.hpp"
#include "kax/expr/layout/reshape.hpp"
#include "kax/expr/layout/slice.hpp"
#include "kax/expr/layout/transpose.hpp"
#include "kax/expr/layout/unit_axes.hpp"
#include "kax/expr/math.hpp"
#include "kax/expr/operators.hpp"
#include "kax/expr/contractions.hpp"
#include "kax/expr/reductions.hpp"
#include "kax/nn.hpp"
#include "kax/plan/elementwise_plan.hpp"
#include "kax/plan/plan_of.hpp"
