// tests/shim/selftest.cu: the CUDA shim's own test (test_shim.py builds and runs it).
// Each case launches kernels written to be right, or wrong in one way the shim must
// report (a race, an access out of bounds, a barrier or warp operation some threads
// never reach, a read of unwritten shared memory), and checks the launch's result and
// the report's words; prints `ok NAME` or `FAIL NAME: why`, exits 1 on any failure.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

extern "C" void tdsl_shim_set_report(FILE *f);

// ---- right: shuffles, votes, a block reduction, warp-ordered shared memory ----
__global__ void k_reduce(const float *x, float *out, int n) {
  __shared__ float sh[32];
  float v = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    v += x[i];
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0)
    sh[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? sh[threadIdx.x] : 0;
    for (int o = 16; o > 0; o >>= 1)
      v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncwarp();
    if (threadIdx.x == 0)
      sh[0] = v;  // read by lanes 0..nw-1 above, ordered by the __syncwarp
  }
  __syncthreads();
  if (threadIdx.x == 0)
    out[blockIdx.x] = sh[0];
}

__global__ void k_vote(int *out) {
  int lane = threadIdx.x % 32;
  unsigned b = __ballot_sync(0xffffffffu, lane % 3 == 0);
  int all = __all_sync(0xffffffffu, lane < 32), any = __any_sync(0xffffffffu, lane == 7);
  int idx = __shfl_sync(0xffffffffu, lane * 10, 5), up = __shfl_up_sync(0xffffffffu, lane, 1);
  if (lane == 0)
    out[threadIdx.x / 32] = (int)(b == 0x49249249u) + 2 * all + 4 * any + 8 * (idx == 50) + 16 * (up == 0);
}

// ---- wrong ----
__global__ void k_race(float *x) { x[0] = (float)threadIdx.x; }
__global__ void k_read_write(float *x) { x[threadIdx.x] = x[(threadIdx.x + 1) % blockDim.x] + 1; }
__global__ void k_blocks(float *x) { x[threadIdx.x] = (float)blockIdx.x; }
__global__ void k_oob(float *x, int n) { x[threadIdx.x] = 1; (void)n; }
__global__ void k_before(float *x) { x[(int)threadIdx.x - 1] = 1; }
__global__ void k_exit(float *x) {
  if (threadIdx.x >= 16)
    return;
  __syncthreads();
  x[threadIdx.x] = 1;
}
__global__ void k_two_barriers(float *x) {
  if (threadIdx.x % 2)
    __syncthreads();
  else
    __syncthreads();
  x[threadIdx.x] = 1;
}
__global__ void k_uninit(float *x) {
  __shared__ float sh[64];
  if (threadIdx.x < 32)
    sh[threadIdx.x] = 1;
  __syncthreads();
  x[threadIdx.x] = sh[threadIdx.x];
}
__global__ void k_shuffle_lanes(float *x) {
  if (threadIdx.x < 16)
    x[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1);
}
__global__ void k_no_syncwarp(float *x) {
  __shared__ float sh[32];
  sh[threadIdx.x] = 0;
  __syncthreads();
  sh[threadIdx.x] = (float)threadIdx.x;
  x[threadIdx.x] = sh[(threadIdx.x + 1) % 32];
}

static int failures;
static char report[1 << 16];

// Runs launch(); expect NULL: no report and success, else a failed launch whose report
// holds expect.
template <class F> static void check(const char *name, const char *expect, F launch) {
  FILE *f = tmpfile();
  tdsl_shim_set_report(f);
  cudaGetLastError();
  launch();
  int err = cudaGetLastError();
  fflush(f);
  rewind(f);
  size_t n = fread(report, 1, sizeof report - 1, f);
  report[n] = 0;
  fclose(f);
  tdsl_shim_set_report(NULL);
  const char *why = NULL;
  if (!expect && (err || n))
    why = "a launch that should pass failed";
  else if (expect && (!err || !strstr(report, expect)))
    why = "a wrong launch was not reported as expected";
  if (why) {
    failures++;
    printf("FAIL %s: %s (error %d, expected '%s'); report:\n%s", name, why, err, expect ? expect : "", report);
  } else {
    printf("ok   %s%s%.*s\n", name, expect ? ": " : "", (int)strcspn(report, "\n"), report);
  }
}

int main(void) {
  float *x, *y;
  int *iv;
  cudaMalloc((void **)&x, 4096 * sizeof(float));
  cudaMalloc((void **)&y, 64 * sizeof(float));
  cudaMalloc((void **)&iv, 64 * sizeof(int));
  float h[4096];
  for (int i = 0; i < 4096; i++)
    h[i] = (float)(i % 7);
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  check("block reduction with shuffles and __syncwarp", NULL, [&] { k_reduce<<<3, 256>>>(x, y, 4096); });
  float got[3];
  cudaMemcpy(got, y, sizeof got, cudaMemcpyDeviceToHost);
  double want = 0;
  for (int i = 0; i < 4096; i++)
    want += h[i];
  if (got[0] != want || got[2] != want)
    printf("FAIL block reduction: %g %g, want %g\n", got[0], got[2], want), failures++;
  check("votes and shuffles", NULL, [&] { k_vote<<<1, 64>>>(iv); });
  int v[2];
  cudaMemcpy(v, iv, sizeof v, cudaMemcpyDeviceToHost);
  if (v[0] != 31 || v[1] != 31)
    printf("FAIL votes: %d %d, want 31\n", v[0], v[1]), failures++;
  check("write-write race", "which thread 0 wrote, with no barrier between", [&] { k_race<<<1, 64>>>(x); });
  check("read-write race", "which thread 0 read", [&] { k_read_write<<<1, 64>>>(x); });
  check("blocks writing one element", "which another block of the launch wrote", [&] { k_blocks<<<2, 32>>>(x); });
  check("write past the end", "out of bounds", [&] { k_oob<<<1, 128>>>(y, 64); });
  check("write before the start", "at byte -4 of allocation", [&] { k_before<<<1, 32>>>(y); });
  check("a barrier some threads never reach", "the others have returned", [&] { k_exit<<<1, 64>>>(y); });
  check("two barriers", "wait at different __syncthreads", [&] { k_two_barriers<<<1, 64>>>(x); });
  check("unwritten shared memory", "which no thread of the block wrote", [&] { k_uninit<<<1, 64>>>(x); });
  check("a shuffle some lanes never reach", "that lanes of its mask never reach", [&] { k_shuffle_lanes<<<1, 32>>>(x); });
  check("shared memory across lanes without __syncwarp", "with no barrier between", [&] { k_no_syncwarp<<<1, 32>>>(x); });
  check("a block of 48 threads shuffling a full mask", "does not have", [&] { k_vote<<<1, 48>>>(iv); });
  cudaFree(x);
  cudaFree(y);
  cudaFree(iv);
  printf("%s\n", failures ? "selftest failed" : "selftest passed");
  return failures ? 1 : 0;
}
