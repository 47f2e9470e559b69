// tests/unit/test_diag.c: diagnostics print path:line:col, the source line and a
// caret under the range, one column per character; a repeated message prints once.
// Bounded output: the error limit, escaped control bytes and invalid UTF-8, long lines
// cut to a window around the caret, long messages cut; files that are not UTF-8 text
// refused.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

// Four errors, each with a note, under a limit of 2: two printed with their notes,
// then one "too many errors" line and nothing more; all four counted.
static void errors_stop_after_the_limit_with_one_line(void **state) {
  (void)state;
  Out o;
  open_out(&o, "a b c d\n");
  o.cx.error_limit = 2;
  for (uint32_t i = 0; i < 4; i++) {
    diag_error(&o.cx, at(&o, 2 * i, 2 * i + 1), "e%u", i);
    diag_note(&o.cx, at(&o, 2 * i, 2 * i + 1), "n%u", i);
  }
  diag_warning(&o.cx, at(&o, 0, 1), "w");
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:1:1: error: e0\n    a b c d\n    ^\n"
                              "t.tdsl:1:1: note: n0\n    a b c d\n    ^\n"
                              "t.tdsl:1:3: error: e1\n    a b c d\n      ^\n"
                              "t.tdsl:1:3: note: n1\n    a b c d\n      ^\n"
                              "tdslc: error: too many errors emitted, stopping now [-ferror-limit=2]\n");
  assert_int_equal(o.cx.nerrors, 4);
  close_out(&o);
}

static void the_default_limit_is_twenty_and_zero_means_none(void **state) {
  (void)state;
  Out o;
  open_out(&o, "x\n");
  assert_int_equal(o.cx.error_limit, DIAG_ERROR_LIMIT);
  assert_int_equal(DIAG_ERROR_LIMIT, 20);
  o.cx.error_limit = 0;
  for (int i = 0; i < 50; i++)
    diag_error(&o.cx, at(&o, 0, 1), "e%d", i);
  fflush(o.cx.diag_out);
  assert_non_null(strstr(o.text, "error: e49\n"));
  assert_null(strstr(o.text, "too many errors"));
  assert_int_equal(o.cx.nerrors, 50);
  close_out(&o);
}

static void control_bytes_are_escaped_and_the_caret_follows(void **state) {
  (void)state;
  Out o;
  open_out(&o, "a\x01" "b = \x7f + c\n");
  diag_error(&o.cx, at(&o, 8, 11), "e");  // under "+ c"
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:1:9: error: e\n    a<U+0001>b = <U+007F> + c\n"
                              "                          ^~~\n");
  close_out(&o);
}

static void a_control_byte_under_the_caret_gets_a_tilde_per_column(void **state) {
  (void)state;
  Out o;
  open_out(&o, "a \x02 b\n");
  diag_error(&o.cx, at(&o, 2, 3), "invalid character");
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:1:3: error: invalid character\n    a <U+0002> b\n      ^~~~~~~~\n");
  close_out(&o);
}

static void invalid_utf8_is_shown_as_hex(void **state) {
  (void)state;
  Out o;
  open_out(&o, "a \xff\xc3 b\n");  // a stray byte, a truncated sequence
  diag_error(&o.cx, at(&o, 5, 6), "e");
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:1:6: error: e\n    a <FF><C3> b\n               ^\n");
  close_out(&o);
}

static void a_crlf_line_is_shown_without_its_cr(void **state) {
  (void)state;
  Out o;
  open_out(&o, "x = y\r\nz\r\n");
  diag_error(&o.cx, at(&o, 4, 5), "e");
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:1:5: error: e\n    x = y\n        ^\n");
  close_out(&o);
}

static void the_caret_can_stand_past_the_last_character(void **state) {
  (void)state;
  Out o;
  open_out(&o, "x = (\n");
  diag_error(&o.cx, at(&o, 5, 5), "e");  // at the newline
  fflush(o.cx.diag_out);
  assert_string_equal(o.text, "t.tdsl:1:6: error: e\n    x = (\n         ^\n");
  close_out(&o);
}

// The lines printed after the message: the echoed line and the caret line.
static void echo_lines(const char *text, char *line, char *caret, size_t n) {
  const char *a = strchr(text, '\n') + 1, *b = strchr(a, '\n') + 1, *c = strchr(b, '\n');
  snprintf(line, n, "%.*s", (int)(b - a - 1), a);
  snprintf(caret, n, "%.*s", (int)(c - b), b);
}

static void a_long_line_is_cut_to_a_window_around_the_caret(void **state) {
  (void)state;
  char src[5000];
  memset(src, 'a', 4000);
  memcpy(src + 2000, "BAD", 3);
  strcpy(src + 4000, "\n");
  Out o;
  open_out(&o, src);
  diag_error(&o.cx, at(&o, 2000, 2003), "e");
  fflush(o.cx.diag_out);
  char line[512], caret[512];
  echo_lines(o.text, line, caret, sizeof line);
  assert_int_equal(strlen(line), 4 + 3 + DIAG_LINE_WIDTH + 3);  // indent, "...", window, "..."
  assert_memory_equal(line, "    ...", 7);
  assert_string_equal(line + strlen(line) - 3, "...");
  const char *bad = strstr(line, "BAD");
  assert_non_null(bad);
  assert_int_equal(strchr(caret, '^') - caret, bad - line);  // the caret under BAD
  assert_string_equal(strchr(caret, '^'), "^~~");
  assert_true(strlen(o.text) < 400);
  close_out(&o);
}

static void a_long_line_cut_at_its_start_keeps_the_caret_at_the_end(void **state) {
  (void)state;
  char src[400];
  memset(src, 'b', 300);
  strcpy(src + 300, "\n");
  Out o;
  open_out(&o, src);
  diag_error(&o.cx, at(&o, 300, 300), "e");  // just past the last character
  fflush(o.cx.diag_out);
  char line[512], caret[512];
  echo_lines(o.text, line, caret, sizeof line);
  assert_int_equal(strlen(line), 4 + 3 + DIAG_LINE_WIDTH);
  assert_memory_equal(line, "    ...b", 8);
  assert_int_equal(strlen(caret), strlen(line) + 1);  // one past the last b
  assert_int_equal(caret[strlen(caret) - 1], '^');
  close_out(&o);
}

static void a_message_is_escaped_and_cut(void **state) {
  (void)state;
  Out o;
  open_out(&o, "x\n");
  char name[5000];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = 0;
  name[0] = '\x1b';
  diag_error(&o.cx, at(&o, 0, 1), "unknown name '%s'", name);
  fflush(o.cx.diag_out);
  assert_non_null(strstr(o.text, "error: unknown name '<U+001B>nnn"));
  assert_non_null(strstr(o.text, "n [...]\n"));
  assert_true(strlen(o.text) < DIAG_MAX_MESSAGE + 100);
  close_out(&o);
}

static void text_is_valid_utf8_without_nul(void **state) {
  (void)state;
  static const struct {
    const char *s;
    size_t len, want;  // want: 0, or 1 + the offset of the first bad byte
  } cases[] = {
      {"fn f() \xc3\xbc \xe2\x82\xac \xf0\x9f\x98\x80\n\t\x01", 20, 0},  // ASCII, 2-, 3-, 4-byte, controls
      {"ab\0c", 4, 3},                                                    // NUL
      {"a\x80", 2, 2},                                                    // stray continuation
      {"a\xc3", 2, 2},                                                    // truncated
      {"\xc0\xaf", 2, 1},                                                // overlong '/'
      {"\xe0\x80\xaf", 3, 1},                                            // overlong, 3 bytes
      {"\xed\xa0\x80", 3, 1},                                            // a surrogate
      {"\xf4\x90\x80\x80", 4, 1},                                        // above U+10FFFF
      {"\xff", 1, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    assert_int_equal(srcfile_not_text(cases[i].s, cases[i].len), cases[i].want);
}

static void a_binary_file_is_refused_when_read(void **state) {
  (void)state;
  char path[] = "/tmp/tdsl-diag-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  static const char bytes[] = "fn f()\n  \x7f" "ELF\x02\x01\x00\x00\xff";
  assert_int_equal(write(fd, bytes, sizeof bytes - 1), (ssize_t)(sizeof bytes - 1));
  close(fd);
  Ctx cx;
  ctx_init(&cx);
  assert_null(srcfile_read(&cx, path));  // (its one line goes to stderr)
  assert_int_equal(cx.nerrors, 0);
  ctx_free(&cx);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(error_shows_line_column_source_and_caret),
      cmocka_unit_test(caret_keeps_tabs_so_it_lines_up),
      cmocka_unit_test(caret_counts_a_utf8_character_as_one_column),
      cmocka_unit_test(the_same_error_at_the_same_place_prints_once),
      cmocka_unit_test(line_and_column_come_from_the_line_map),
      cmocka_unit_test(errors_stop_after_the_limit_with_one_line),
      cmocka_unit_test(the_default_limit_is_twenty_and_zero_means_none),
      cmocka_unit_test(control_bytes_are_escaped_and_the_caret_follows),
      cmocka_unit_test(a_control_byte_under_the_caret_gets_a_tilde_per_column),
      cmocka_unit_test(invalid_utf8_is_shown_as_hex),
      cmocka_unit_test(a_crlf_line_is_shown_without_its_cr),
      cmocka_unit_test(the_caret_can_stand_past_the_last_character),
      cmocka_unit_test(a_long_line_is_cut_to_a_window_around_the_caret),
      cmocka_unit_test(a_long_line_cut_at_its_start_keeps_the_caret_at_the_end),
      cmocka_unit_test(a_message_is_escaped_and_cut),
      cmocka_unit_test(text_is_valid_utf8_without_nul),
      cmocka_unit_test(a_binary_file_is_refused_when_read),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
