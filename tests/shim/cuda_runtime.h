// tests/shim/cuda_runtime.h: what `#include <cuda_runtime.h>` of an --emit=cuda file
// finds when it is compiled for the CUDA shim (-I tests/shim): the shim itself.
#include "tdsl_shim.h"
