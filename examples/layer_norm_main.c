// examples/layer_norm_main.c: a program of one's own that calls a tdsl kernel, the one
// README.md builds ("To use the kernels in your own program"). It fills x, an
// f32[32, 10, 512], with the seeded generator `tdslc run` uses, calls layer_norm
// (examples/layer_norm.tdsl, compiled by tdslc into layer_norm.c or an object, declared
// in layer_norm.h), and prints the mean and variance of the first normalised row: 0 and
// (almost) 1.
#include "layer_norm.h"

#include <stdio.h>

int main(void) {
  int64_t shape[3] = {32, 10, 512};
  tdsl_tensor x, out;
  if (tdsl_tensor_empty(&x, TDSL_F32, 3, shape) != 0) {
    fprintf(stderr, "layer_norm_main: %s\n", tdsl_last_error());
    return 1;
  }
  uint64_t seed = 0;
  tdsl_fill_random(&x, &seed);
  if (layer_norm(&x, &out) != 0) {
    fprintf(stderr, "layer_norm_main: %s\n", tdsl_last_error());
    tdsl_tensor_release(&x);
    return 1;
  }
  const float *row = tdsl_tensor_data(&out);  // out is contiguous: its first row
  double sum = 0, sq = 0;
  for (int i = 0; i < 512; i++)
    sum += row[i], sq += (double)row[i] * row[i];
  double mean = sum / 512;
  printf("layer_norm: out0 %s[32, 10, 512]; its first row has mean %.3f and variance %.3f\n",
         tdsl_dtype_name(out.dtype), mean, sq / 512 - mean * mean);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
  return 0;
}
