// driver/gpu.c: run and bench on --target cuda. The function's kernels become one
// image, PTX through LLVM's NVPTX target (--backend ptx, the default) or CUDA C for
// NVRTC (--backend cuda), and go with the entry's tables (as the CPU entry has them)
// to the runtime's tdsl_gpu_run, which loads libcuda.so.1 itself. The launch table
// has an entry per kernel: kernels with the same code (LKernel.same) name one function
// of the image, each with its own buffers and their starts (LArg.at).
#include "driver/driver.h"

#include <string.h>

_Static_assert(TD_MAX_DIMS == TDSL_MAX_DIMS, "compiler and runtime share the dims limit");

// The runtime tables of p, as codegen/c.c prints them and codegen/llvm_entry.c builds them.
static const tdsl_entry_info *entry_info(Ctx *cx, const LProgram *p) {
  Arena *ar = &cx->arena;
  int np = p->params.len, nb = loop_host_bufs(p), no = p->outputs.len;
  tdsl_entry_param *ps = arena_alloc(ar, sizeof *ps * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {
    const LParam *q = &p->params.data[i];
    ps[i] = (tdsl_entry_param){.name = q->name, .dtype = (tdsl_dtype)q->dtype, .ndim = q->ndim, .mut = q->mut,
                               .buf = q->buf};
    memcpy(ps[i].shape, q->shape, sizeof ps[i].shape);
  }
  tdsl_entry_buf *bs = arena_alloc(ar, sizeof *bs * (size_t)(nb + 1));
  for (int b = 0; b < nb; b++) {
    const LBuf *lb = &p->bufs.data[b];
    bs[b] = (tdsl_entry_buf){(tdsl_dtype)lb->dtype, lb->numel, lb->kind == LB_PARAM ? lb->param : -1};
  }
  tdsl_entry_output *os = arena_alloc(ar, sizeof *os * (size_t)(no + 1));
  for (int k = 0; k < no; k++) {
    const LOutput *lo = &p->outputs.data[k];
    os[k] = (tdsl_entry_output){.buf = lo->buf, .ndim = lo->view.ndim, .offset = lo->view.offset,
                                .complex = dtype_is_complex(lo->dtype)};
    memcpy(os[k].shape, lo->view.shape, sizeof os[k].shape);
    memcpy(os[k].strides, lo->view.strides, sizeof os[k].strides);
  }
  tdsl_entry_info *fi = arena_alloc(ar, sizeof *fi);
  *fi = (tdsl_entry_info){p->name, np, np ? ps : NULL, nb, nb ? bs : NULL, no, no ? os : NULL};
  return fi;
}

// The GPU a run's schedules are for: --gpu-arch, else the device's own ("sm_NN"), else
// NULL (no GPU: the run reports that itself). Tensor-core matmul wants sm_80 or newer,
// so a run on an older GPU must not be scheduled for the sm_80 that --emit assumes.
const char *gpu_sched_arch(Ctx *cx, const Options *o) {
  int major, minor;
  if (o->gpu_arch || tdsl_gpu_compute_capability(&major, &minor) != 0)
    return o->gpu_arch;
  return arena_printf(&cx->arena, "sm_%d", major * 10 + minor);
}

#ifdef TDSLC_WITH_LLVM
// The PTX target of a run: --gpu-arch, else the device's own, at most sm_86 (the newest
// LLVM 14 knows; its PTX runs on newer GPUs through the driver's JIT).
static const char *run_ptx_arch(Ctx *cx, const Options *o) {
  if (o->gpu_arch)
    return o->gpu_arch;
  int major, minor;
  if (tdsl_gpu_compute_capability(&major, &minor) != 0)
    return "sm_80";
  int cc = major * 10 + minor;
  return arena_printf(&cx->arena, "sm_%d", cc > PTX_NEWEST_SM ? PTX_NEWEST_SM : cc);
}
#endif

int gpu_run(const Options *o, Ctx *cx, LProgram *p, const tdsl_tensor *ins, Timer *tm) {
  GpuImage img = {0};
  tdsl_gpu_program gp = {.info = entry_info(cx, p)};
  if (strcmp(o->backend, "cuda") == 0) {
    cuda_device_image(cx, p, &img);
    gp.kind = TDSL_GPU_CUDA_C;
    gp.arch = o->gpu_arch;  // NULL: NVRTC compiles for the device's own
  } else {
#ifdef TDSLC_WITH_LLVM
    const char *err = ptx_image(cx, p, run_ptx_arch(cx, o), o->opt, &img);
    if (err)
      return internal_error("%s", err);
    gp.kind = TDSL_GPU_PTX;
#else
    return usage_error("--backend ptx: this tdslc was built without LLVM (TDSLC_WITH_LLVM=OFF)");
#endif
  }
  lap(tm, "emit");
  int nk = p->kernels.len;
  if (img.nkernels != nk || (nk && !img.text))
    return internal_error("the %s image of '%s' has %d kernels, not %d", o->backend, p->name, img.nkernels, nk);
  tdsl_gpu_kernel *ks = arena_alloc(&cx->arena, sizeof *ks * (size_t)(nk + 1));
  for (int k = 0; k < nk; k++) {
    const LKernel *lk = p->kernels.data[k];
    const GpuKernel *g = &img.kernels[k];
    int *args = arena_alloc(&cx->arena, sizeof *args * (size_t)(lk->args.len + 1));
    int64_t *at = arena_alloc(&cx->arena, sizeof *at * (size_t)(lk->args.len + 1));
    int nargs = 0, nb = loop_host_bufs(p);
    for (int i = 0; i < lk->args.len; i++) {
      if (lk->args.data[i].buf >= nb)  // an LB_SHARED array of the kernel's own: no parameter
        continue;
      args[nargs] = lk->args.data[i].buf;
      at[nargs++] = lk->args.data[i].at;  // share_kernels moved its start
    }
    // (a kernel with an earlier one's code: g names that one's function)
    ks[k] = (tdsl_gpu_kernel){.name = g->name, .grid = g->grid, .block = g->block, .shmem = g->shmem,
                              .nargs = nargs, .args = args, .nerrors = lk->errors.len,
                              .errors = (const char *const *)lk->errors.data, .at = at};
  }
  gp.image = img.text;
  gp.nkernels = nk;
  gp.kernels = ks;
  return run_call_and_report(o, p, ins, NULL, &gp, tm);
}
