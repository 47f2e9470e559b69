// ir/dtype.c: facts about dtypes (view/dtypes.def, the table the runtime reads too):
// names, sizes, classes, promotion, casting.
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
bool dtype_is_int(DType t) { return t < DT_COUNT && (dtypes[t].cls == 'i' || dtypes[t].cls == 'u'); }
bool dtype_is_unsigned(DType t) { return t < DT_COUNT && dtypes[t].cls == 'u'; }
bool dtype_is_small_int(DType t) { return dtype_is_int(t) && dtypes[t].size < 4; }
bool dtype_is_complex(DType t) { return t < DT_COUNT && dtypes[t].cls == 'c'; }
DType dtype_complex_part(DType t) { return t == DT_C128 ? DT_F64 : DT_F32; }
DType dtype_complex_of(DType t) { return t == DT_F64 || t == DT_C128 ? DT_C128 : DT_C64; }

bool dtype_from_name(const char *s, DType *out) {
  for (int i = 0; i < DT_COUNT; i++)
    if (strcmp(s, dtypes[i].name) == 0) {
      *out = (DType)i;
      return true;
    }
  return false;
}

bool dtype_is_half(DType t) { return t == DT_F16 || t == DT_BF16; }
DType dtype_compute(DType t) { return dtype_is_half(t) ? DT_F32 : dtype_is_small_int(t) ? DT_I32 : t; }

static int category(DType t) { return t == DT_BOOL ? 0 : dtype_is_complex(t) ? 3 : dtype_is_float(t) ? 2 : 1; }

DType dtype_promote(DType a, DType b) {
  if (a == b || b == DT_BOOL)
    return a;
  if (a == DT_BOOL)
    return b;
  int ca = category(a), cb = category(b);
  if (ca == 3 || cb == 3)  // complex: of the wider float precision of the two
    return (a == DT_F64 || a == DT_C128 || b == DT_F64 || b == DT_C128) ? DT_C128 : DT_C64;
  if (ca != cb)
    return ca > cb ? a : b;
  if (ca == 1) {  // the wider; u8 with i8 is i16, the narrowest holding both
    if (dtype_size(a) == dtype_size(b))
      return DT_I16;
    return dtype_size(a) > dtype_size(b) ? a : b;
  }
  if ((a == DT_F16 && b == DT_BF16) || (a == DT_BF16 && b == DT_F16))
    return DT_F32;
  return a == DT_F64 || b == DT_F64 ? DT_F64 : dtype_size(a) >= dtype_size(b) ? a : b;
}

// DT_COUNT stands for "no operand of this kind".
static DType promote_opt(DType a, DType b) { return a == DT_COUNT ? b : b == DT_COUNT ? a : dtype_promote(a, b); }

// The higher kind's dtype, unless the lower kind is of a higher category.
static DType combine(DType higher, DType lower) {
  if (higher == DT_COUNT || lower == DT_COUNT)
    return higher != DT_COUNT ? higher : lower;
  return category(lower) > category(higher) ? dtype_promote(higher, lower) : higher;
}

DType dtype_result_type(const DTypeOperand *ops, int n) {
  DType r[3] = {DT_COUNT, DT_COUNT, DT_COUNT};
  for (int i = 0; i < n; i++) {
    DType dt = ops[i].dtype;  // a Python float or complex counts as the default dtype (f32, c64)
    if (ops[i].kind == DTO_WRAPPED && (dt == DT_F64 || dt == DT_C128)) dt = dt == DT_F64 ? DT_F32 : DT_C64;
    r[ops[i].kind] = promote_opt(r[ops[i].kind], dt);
  }
  DType t = combine(r[DTO_DIMMED], combine(r[DTO_ZERO_DIM], r[DTO_WRAPPED]));
  return t == DT_COUNT ? DT_F32 : t;
}

bool dtype_can_cast(DType from, DType to) {
  if (dtype_is_complex(from) && !dtype_is_complex(to))
    return false;
  if (dtype_is_float(from) && !dtype_is_float(to) && !dtype_is_complex(to))
    return false;
  return from == DT_BOOL || to != DT_BOOL;
}
