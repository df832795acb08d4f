// The public API in one include.
#pragma once

#include "mlx/array.h"
#include "mlx/device.h"
#include "mlx/event.h"
#include "mlx/fast.h"
#include "mlx/ops.h"
#include "mlx/stream.h"
