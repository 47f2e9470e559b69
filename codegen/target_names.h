// codegen/target_names.h: the CPU names --cpu accepts and the GPU architectures
// --gpu-arch accepts (codegen/target_names.c), so the driver checks a flag's value
// before anything uses it. No LLVM here: the C backend's schedules take --cpu too,
// in a tdslc built without LLVM.
#ifndef TDSLC_CODEGEN_TARGET_NAMES_H
#define TDSLC_CODEGEN_TARGET_NAMES_H

#include <stdbool.h>
#include <stdio.h>

// The architecture the CPU names are for ("x86-64"), or NULL where tdslc keeps no
// list (a host other than x86-64: any name then goes to LLVM as given).
const char *target_names_cpu_arch(void);
// Whether --cpu=name is known: "host" (the default), or one of LLVM 14's processors
// for x86-64 that run 64-bit code. On a host without a list, any non-empty name.
bool target_names_cpu_known(const char *name);
// Why name is refused, in a phrase ("a 32-bit CPU: it cannot run x86-64 code", or
// "not a CPU LLVM 14 knows for x86-64"), and the known name nearest to it (NULL: none near).
const char *target_names_cpu_why(const char *name);
const char *target_names_cpu_nearest(const char *name);
// The known names, space-separated in lines of at most width columns, each line
// beginning with indent (--cpu=help, and the note under a refused name).
void target_names_print_cpus(FILE *out, const char *indent, int width);

// Whether --gpu-arch=arch is one of NVIDIA's architectures tdslc can compile for:
// sm_NN from sm_30 (the oldest LLVM 14's PTX 7.2 takes) to sm_121 (the newest CUDA 13
// knows), with the 'a' or 'f' suffix where NVIDIA defines one (sm_90a, sm_100f).
bool target_names_gpu_known(const char *arch);
void target_names_print_gpus(FILE *out, const char *indent, int width);

#endif
