// ir/build_scan.c: the scans of several results (ir/build.h): cummax and cummin, two scan
// nodes over the same input and dim — the values (OP_CUMMAX, OP_CUMMIN) and the indices
// (OP_CUMMAX_INDICES, OP_CUMMIN_INDICES, i64) — which fusion computes in one loop.
// Invariant: operand 0 is the input; ScanArgs.dim is wrapped (a 0-d input: 0).
#include "ir/build.h"

int build_cummax(Builder *b, const void *args, Value **out) {
  const ScanArgs *a = args;
  Value *x = b_in(b, 0);
  bool max = a->op == OP_CUMMAX;
  out[0] = build_scan(b, max ? OP_CUMMAX : OP_CUMMIN, x, a->dim, x->dtype);
  out[1] = build_scan(b, max ? OP_CUMMAX_INDICES : OP_CUMMIN_INDICES, x, a->dim, DT_I64);
  return 2;
}
