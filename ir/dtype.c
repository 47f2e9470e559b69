// ir/dtype.c: facts about dtypes (view/dtypes.def, the table the runtime reads too) and
// op names (ir/ops.def).
#include "ir/ir.h"

#include <string.h>

static const struct {
  const char *name;
  int size;
  char cls;
} dtypes[] = {
#define X(id, name, size, cls) [DT_##id] = {name, size, cls},
#include "view/dtypes.def"
#undef X
};
_Static_assert(sizeof dtypes / sizeof dtypes[0] == DT_COUNT, "one row per dtype");

const char *dtype_name(DType t) { return t < DT_COUNT ? dtypes[t].name : "?"; }
int dtype_size(DType t) { return dtypes[t].size; }
bool dtype_is_float(DType t) { return t < DT_COUNT && dtypes[t].cls == 'f'; }
bool dtype_is_int(DType t) { return t < DT_COUNT && dtypes[t].cls == 'i'; }

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
