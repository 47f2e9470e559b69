// ir/attn_gpu.c: scaled_dot_product_attention on the GPU (gpu_attn, ir/gpu.h). Not yet:
// attention runs as rows (ir/gpu_row.c).
#include "ir/gpu.h"

bool gpu_attn(GpuBuild *g) {
  (void)g;
  return false;
}
