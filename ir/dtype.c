// ir/dtype.c: facts about dtypes and op names, in one table each. The DType order
// is the runtime's tdsl_dtype order (checked where both are visible, in the driver).
#include "ir/ir.h"

#include <string.h>

static const struct {
  const char *name;
  int size;
} dtypes[] = {
    [DT_BOOL] = {"bool", 1}, [DT_I32] = {"i32", 4},  [DT_I64] = {"i64", 8}, [DT_F16] = {"f16", 2},
    [DT_BF16] = {"bf16", 2}, [DT_F32] = {"f32", 4}, [DT_F64] = {"f64", 8},
};
_Static_assert(sizeof dtypes / sizeof dtypes[0] == DT_COUNT, "one row per dtype");

const char *dtype_name(DType t) { return t < DT_COUNT ? dtypes[t].name : "?"; }
int dtype_size(DType t) { return dtypes[t].size; }
bool dtype_is_float(DType t) { return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64; }
bool dtype_is_int(DType t) { return t == DT_I32 || t == DT_I64; }

bool dtype_from_name(const char *s, DType *out) {
  for (int i = 0; i < DT_COUNT; i++)
    if (strcmp(s, dtypes[i].name) == 0) {
      *out = (DType)i;
      return true;
    }
  return false;
}

static const char *const op_names[] = {
#define X(id, name, arity) [OP_##id] = name,
#include "ir/ops.def"
#undef X
};

const char *op_name(Op op) { return op < OP_COUNT ? op_names[op] : "?"; }
