// tests/unit/test_diag.c: diagnostics print path:line:col, the source line and a
// caret under the range, one column per character; a repeated message prints once.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

typedef struct Out {
  Ctx cx;
  char *text;
  size_t len;
  SrcFile *f;
} Out;

static void open_out(Out *o, const char *src) {
  ctx_init(&o->cx);
  o->cx.diag_out = open_memstream(&o->text, &o->len);
  o->f = srcfile_from_string(&o->cx, "t.tdsl", src, strlen(src));
}

static void close_out(Out *o) {
  fclose(o->cx.diag_out);
  ctx_free(&o->cx);
  free(o->text);
}

static Loc at(const Out *o, uint32_t begin, uint32_t end) { return (Loc){o->f, begin, end}; }

static void error_shows_line_column_source_and_caret(void **state) {
  (void)state;
  Out o;
  open_out(&o, "fn f()\n  x = y + z\n");
  diag_error(&o.cx, at(&o, 13, 18), "bad '%s'", "y + z");
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:2:7: error: bad 'y + z'\n      x = y + z\n          ^~~~~\n");
  assert_int_equal(o.cx.nerrors, 1);
  close_out(&o);
}

static void caret_keeps_tabs_so_it_lines_up(void **state) {
  (void)state;
  Out o;
  open_out(&o, "\tx = y\n");
  diag_error(&o.cx, at(&o, 5, 6), "e");
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:1:6: error: e\n    \tx = y\n    \t    ^\n");
  close_out(&o);
}

static void caret_counts_a_utf8_character_as_one_column(void **state) {
  (void)state;
  Out o;
  open_out(&o, "a = \xc3\xbc\xc3\xbc + b\n");  // "a = üü + b"
  diag_error(&o.cx, at(&o, 9, 12), "e");      // under "+ b"
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:1:10: error: e\n    a = \xc3\xbc\xc3\xbc + b\n           ^~~\n");
  close_out(&o);
}

static void the_same_error_at_the_same_place_prints_once(void **state) {
  (void)state;
  Out o;
  open_out(&o, "x\n");
  diag_error(&o.cx, at(&o, 0, 1), "twice");
  diag_error(&o.cx, at(&o, 0, 1), "twice");
  diag_error(&o.cx, at(&o, 0, 1), "other");
  fflush(o.cx.diag_out);
  assert_int_equal(o.cx.nerrors, 2);
  assert_non_null(strstr(o.text, "other"));
  assert_ptr_equal(strstr(o.text, "twice"), strstr(o.text, "twice\n"));
  assert_null(strstr(strstr(o.text, "twice") + 1, "twice"));
  close_out(&o);
}

static void line_and_column_come_from_the_line_map(void **state) {
  (void)state;
  Out o;
  open_out(&o, "ab\r\ncd\n\nef");
  int line, col;
  srcfile_linecol(o.f, 4, &line, &col);
  assert_int_equal(line, 2);
  assert_int_equal(col, 1);
  srcfile_linecol(o.f, 9, &line, &col);
  assert_int_equal(line, 4);
  assert_int_equal(col, 2);
  close_out(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(error_shows_line_column_source_and_caret),
      cmocka_unit_test(caret_keeps_tabs_so_it_lines_up),
      cmocka_unit_test(caret_counts_a_utf8_character_as_one_column),
      cmocka_unit_test(the_same_error_at_the_same_place_prints_once),
      cmocka_unit_test(line_and_column_come_from_the_line_map),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
