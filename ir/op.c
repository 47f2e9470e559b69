// ir/op.c: the facts of each op, read from its row of ir/ops.def; every op_is_* question
// the compiler asks is answered here and nowhere else.
#include "ir/ir.h"

static const struct {
  const char *name;
  int arity;
  OpClass cls;
  unsigned flags;
  const char *libm;
  LibmLowering lowering;
  OpIdentity identity;
} ops[] = {
#define X(id, name, arity, cls, flags, libm, lowering, identity) [OP_##id] = {name, arity, cls, flags, libm, lowering, identity},
#include "ir/ops.def"
#undef X
};
_Static_assert(sizeof ops / sizeof ops[0] == OP_COUNT, "one row per op");

const char *op_name(Op op) { return op < OP_COUNT ? ops[op].name : "?"; }
int op_arity(Op op) { return ops[op].arity; }
const char *op_libm(Op op) { return ops[op].libm; }
LibmLowering op_libm_lowering(Op op) { return ops[op].lowering; }
OpIdentity op_identity_kind(Op op) { return ops[op].identity; }
OpClass op_class(Op op) { return ops[op].cls; }
unsigned op_flags(Op op) { return ops[op].flags; }

bool op_is_elementwise(Op op) { return ops[op].cls <= OC_CREATE; }
bool op_is_pointwise(Op op) { return ops[op].cls <= OC_SELECT; }
bool op_is_row(Op op) { return ops[op].cls == OC_REDUCE || ops[op].cls == OC_ROW || ops[op].cls == OC_SCAN; }
bool op_is_scan(Op op) { return ops[op].cls == OC_SCAN; }
bool op_is_gather(Op op) { return ops[op].cls == OC_GATHER; }
bool op_is_creation(Op op) { return ops[op].cls == OC_CREATE; }
bool op_is_store(Op op) { return ops[op].cls == OC_STORE; }
bool op_is_transcendental(Op op) { return ops[op].flags & OF_TRANS; }

bool op_may_raise(Op op, DType dt) {
  return (ops[op].flags & OF_RAISES) || ((ops[op].flags & OF_RAISES_INT) && dtype_is_int(dt));
}

bool op_computes_in(Op op, DType dt) {
  unsigned f = ops[op].flags;
  bool fl = dt == DT_F32 || dt == DT_F64, in = dt == DT_I32 || dt == DT_I64, bo = dt == DT_BOOL;
  if (f & OF_COMPARE)
    return dtype_compute(dt) == dt;
  if (f & OF_NUM_BOOL)
    return fl || in || bo;
  if (f & OF_NUM)
    return fl || in;
  if (f & OF_FLOAT)
    return fl;
  if (f & OF_INT_BOOL)
    return in || bo;
  if (f & OF_BOOL)
    return bo;
  return false;
}
