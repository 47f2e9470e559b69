// tests/unit/test_lexer.c: the scanner of grammar/lexer.l, seen through
// parse_dump_tokens (--emit=tokens): each literal form, keywords, dtype names,
// method names after '.', newlines and brackets, comments and UTF-8, located lexical
// errors, and the exact dump format.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

typedef struct {
  Ctx cx;
  char *tokens, *diags;  // malloc'd
} Lexed;

// Lexes len bytes of src (NUL bytes allowed) as file "t.tdsl".
static Lexed *lex_n(const char *src, size_t len) {
  Lexed *l = calloc(1, sizeof *l);
  ctx_init(&l->cx);
  size_t dlen = 0, tlen = 0;
  FILE *diag = open_memstream(&l->diags, &dlen);
  FILE *out = open_memstream(&l->tokens, &tlen);
  l->cx.diag_out = diag;
  SrcFile *f = srcfile_from_string(&l->cx, "t.tdsl", src, len);
  parse_dump_tokens(&l->cx, f, out);
  fclose(diag);
  fclose(out);
  l->cx.diag_out = NULL;
  return l;
}

static Lexed *lex(const char *src) {
  return lex_n(src, strlen(src));
}

static void lexed_free(Lexed *l) {
  free(l->tokens);
  free(l->diags);
  ctx_free(&l->cx);
  free(l);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static void assert_tokens(const char *src, const char *expected) {
  Lexed *l = lex(src);
  assert_string_equal(l->tokens, expected);
  assert_string_equal(l->diags, "");
  lexed_free(l);
}

static void assert_lex_error_n(const char *src, size_t len, const char *diag) {
  Lexed *l = lex_n(src, len);
  assert_non_null(strstr(l->diags, diag));
  assert_int_equal(l->cx.nerrors, 1);
  lexed_free(l);
}

static void assert_lex_error(const char *src, const char *diag) {
  assert_lex_error_n(src, strlen(src), diag);
}

// --- literals ---------------------------------------------------------------------

static void integer_literals_are_int_tokens(void **state) {
  (void)state;
  assert_tokens("0 42 9223372036854775807", "1:1 INT 0\n1:3 INT 42\n1:6 INT 9223372036854775807\n1:25 NEWLINE\n1:25 EOF\n");
}

static void every_float_literal_form_is_a_float_token(void **state) {
  (void)state;
  assert_tokens("1.0 .5 3. 1e-5 2.5E+3 1.e3 7e2",
                "1:1 FLOAT 1.0\n1:5 FLOAT .5\n1:8 FLOAT 3.\n1:11 FLOAT 1e-5\n1:16 FLOAT 2.5E+3\n"
                "1:23 FLOAT 1.e3\n1:28 FLOAT 7e2\n1:31 NEWLINE\n1:31 EOF\n");
}

static void true_false_and_none_are_keywords(void **state) {
  (void)state;
  assert_tokens("true false None none", "1:1 'true'\n1:6 'false'\n1:12 'None'\n1:17 IDENT none\n1:21 NEWLINE\n1:21 EOF\n");
}

static void an_int_literal_beyond_int64_is_a_located_error(void **state) {
  (void)state;
  assert_lex_error("x = 9223372036854775808", "t.tdsl:1:5: error: integer literal is too large");
}

static void a_float_literal_too_large_reads_as_infinity_without_error(void **state) {
  (void)state;
  assert_tokens("1e999", "1:1 FLOAT 1e999\n1:6 NEWLINE\n1:6 EOF\n");
}

// --- words ------------------------------------------------------------------------

static void keywords_have_their_own_tokens(void **state) {
  (void)state;
  assert_tokens("fn const mut return fnx",
                "1:1 'fn'\n1:4 'const'\n1:10 'mut'\n1:14 'return'\n1:21 IDENT fnx\n1:24 NEWLINE\n1:24 EOF\n");
}

// The scanner returns names; the parser's token reader resolves dtypes (test_parser.c).
static void dtype_names_are_identifiers(void **state) {
  (void)state;
  assert_tokens("bool i32 i64 f16 bf16 f32 f64 f8",
                "1:1 IDENT bool\n1:6 IDENT i32\n1:10 IDENT i64\n1:14 IDENT f16\n1:18 IDENT bf16\n"
                "1:23 IDENT f32\n1:27 IDENT f64\n1:31 IDENT f8\n1:33 NEWLINE\n1:33 EOF\n");
}

static void any_word_after_a_dot_is_an_identifier(void **state) {
  (void)state;
  assert_tokens("x.bool() x. int x.f32 x.return x.None",
                "1:1 IDENT x\n1:2 '.'\n1:3 IDENT bool\n1:7 '('\n1:8 ')'\n"
                "1:10 IDENT x\n1:11 '.'\n1:13 IDENT int\n"
                "1:17 IDENT x\n1:18 '.'\n1:19 IDENT f32\n"
                "1:23 IDENT x\n1:24 '.'\n1:25 IDENT return\n"
                "1:32 IDENT x\n1:33 '.'\n1:34 IDENT None\n1:38 NEWLINE\n1:38 EOF\n");
}

// --- operators and punctuation ------------------------------------------------------

static void multi_character_operators_are_single_tokens(void **state) {
  (void)state;
  assert_tokens("-> ** // == != <= >= ... += -= *= /=",
                "1:1 '->'\n1:4 '**'\n1:7 '//'\n1:10 '=='\n1:13 '!='\n1:16 '<='\n1:19 '>='\n"
                "1:22 '...'\n1:26 '+='\n1:29 '-='\n1:32 '*='\n1:35 '/='\n1:37 NEWLINE\n1:37 EOF\n");
}

static void single_character_tokens_are_quoted(void **state) {
  (void)state;
  assert_tokens("+-*/%@<>~.,:;=", "1:1 '+'\n1:2 '-'\n1:3 '*'\n1:4 '/'\n1:5 '%'\n1:6 '@'\n1:7 '<'\n1:8 '>'\n"
                                  "1:9 '~'\n1:10 '.'\n1:11 ','\n1:12 ':'\n1:13 ';'\n1:14 '='\n1:15 NEWLINE\n1:15 EOF\n");
}

// --- lines ------------------------------------------------------------------------

static void the_dump_shows_line_col_kind_and_text(void **state) {
  (void)state;
  assert_tokens("\n\n    x = 42\n", "1:1 NEWLINE\n2:1 NEWLINE\n3:5 IDENT x\n3:7 '='\n3:9 INT 42\n3:11 NEWLINE\n4:1 EOF\n");
}

static void newlines_inside_parentheses_and_brackets_are_not_tokens(void **state) {
  (void)state;
  assert_tokens("f(a,\n  [b,\n  c])\ny", "1:1 IDENT f\n1:2 '('\n1:3 IDENT a\n1:4 ','\n2:3 '['\n2:4 IDENT b\n2:5 ','\n"
                                          "3:3 IDENT c\n3:4 ']'\n3:5 ')'\n3:6 NEWLINE\n4:1 IDENT y\n4:2 NEWLINE\n4:2 EOF\n");
}

static void newlines_inside_braces_are_tokens(void **state) {
  (void)state;
  assert_tokens("{\n}", "1:1 '{'\n1:2 NEWLINE\n2:1 '}'\n2:2 EOF\n");
}

static void a_final_newline_is_added_only_when_missing(void **state) {
  (void)state;
  assert_tokens("x\n", "1:1 IDENT x\n1:2 NEWLINE\n2:1 EOF\n");
  assert_tokens("x", "1:1 IDENT x\n1:2 NEWLINE\n1:2 EOF\n");
}

static void an_empty_file_has_only_end_of_input(void **state) {
  (void)state;
  assert_tokens("", "1:1 EOF\n");
}

// --- comments and UTF-8 -----------------------------------------------------------

static void a_comment_runs_to_the_end_of_the_line_and_may_hold_utf8(void **state) {
  (void)state;
  assert_tokens("x # naïve — ∑ 𝔼 (\ny", "1:1 IDENT x\n1:26 NEWLINE\n2:1 IDENT y\n2:2 NEWLINE\n2:2 EOF\n");
}

static void a_comment_at_the_end_of_input_ends_the_line(void **state) {
  (void)state;
  assert_tokens("x # c", "1:1 IDENT x\n1:6 NEWLINE\n1:6 EOF\n");
}

static void invalid_utf8_in_a_comment_is_one_located_error_per_run(void **state) {
  (void)state;
  assert_lex_error("x # a \xff\xfe b\n", "t.tdsl:1:7: error: invalid UTF-8");
  assert_lex_error("# \xe2\x82\n", "t.tdsl:1:3: error: invalid UTF-8");        // truncated sequence
  assert_lex_error("# \xc0\xaf\n", "t.tdsl:1:3: error: invalid UTF-8");        // overlong
  assert_lex_error("# \xed\xa0\x80\n", "t.tdsl:1:3: error: invalid UTF-8");    // surrogate
}

static void utf8_outside_a_comment_is_an_invalid_character(void **state) {
  (void)state;
  assert_lex_error("x = \xc3\xa9", "t.tdsl:1:5: error: invalid character U+00E9");
  Lexed *l = lex("x = \xc3\xa9");
  assert_non_null(strstr(l->tokens, "1:5 INVALID\n"));
  lexed_free(l);
}

static void invalid_utf8_outside_a_comment_is_an_error(void **state) {
  (void)state;
  assert_lex_error("x = \xff", "t.tdsl:1:5: error: invalid UTF-8");
}

static void a_stray_character_is_a_located_error(void **state) {
  (void)state;
  assert_lex_error("x = 1 $ 2", "t.tdsl:1:7: error: invalid character '$'");
  assert_lex_error("x = \"s", "t.tdsl:1:5: error: unterminated string literal (detected at line 1)");
  assert_lex_error("x = 'a\\n'", "t.tdsl:1:5: error: string literals hold plain ASCII text, without escapes");
  assert_lex_error("a ? b", "t.tdsl:1:3: error: invalid character '?'");
  assert_lex_error("x = 1 \x01", "t.tdsl:1:7: error: invalid character U+0001");
}

static void a_run_of_stray_characters_is_one_error(void **state) {
  (void)state;
  assert_lex_error("x = $$$$", "t.tdsl:1:5: error: invalid character '$'");
}

static void a_nul_byte_is_a_located_error_and_lexing_goes_on(void **state) {
  (void)state;
  Lexed *l = lex_n("x\0 y", 4);
  assert_string_equal(l->tokens, "1:1 IDENT x\n1:2 INVALID\n1:4 IDENT y\n1:5 NEWLINE\n1:5 EOF\n");
  assert_non_null(strstr(l->diags, "t.tdsl:1:2: error: unexpected NUL byte"));
  assert_int_equal(l->cx.nerrors, 1);
  lexed_free(l);
  assert_lex_error_n("# a\0b\n", 6, "t.tdsl:1:4: error: unexpected NUL byte");
  assert_lex_error_n("\0\0\0\0", 4, "t.tdsl:1:1: error: unexpected NUL byte");
}

static void more_than_the_nesting_limit_of_brackets_is_one_error(void **state) {
  (void)state;
  enum { N = 50000 };
  char *src = malloc(N + 1);
  memset(src, '(', N);
  src[N] = 0;
  Lexed *l = lex(src);
  assert_int_equal(l->cx.nerrors, 1);
  assert_int_equal(count(l->diags, "error:"), 1);
  char want[64];
  snprintf(want, sizeof want, "t.tdsl:1:%d: error: expression nested too deeply", TD_MAX_NESTING + 1);
  assert_non_null(strstr(l->diags, want));
  lexed_free(l);
  free(src);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(integer_literals_are_int_tokens),
    cmocka_unit_test(every_float_literal_form_is_a_float_token),
    cmocka_unit_test(true_false_and_none_are_keywords),
    cmocka_unit_test(an_int_literal_beyond_int64_is_a_located_error),
    cmocka_unit_test(a_float_literal_too_large_reads_as_infinity_without_error),
    cmocka_unit_test(keywords_have_their_own_tokens),
    cmocka_unit_test(dtype_names_are_identifiers),
    cmocka_unit_test(any_word_after_a_dot_is_an_identifier),
    cmocka_unit_test(multi_character_operators_are_single_tokens),
    cmocka_unit_test(single_character_tokens_are_quoted),
    cmocka_unit_test(the_dump_shows_line_col_kind_and_text),
    cmocka_unit_test(newlines_inside_parentheses_and_brackets_are_not_tokens),
    cmocka_unit_test(newlines_inside_braces_are_tokens),
    cmocka_unit_test(a_final_newline_is_added_only_when_missing),
    cmocka_unit_test(an_empty_file_has_only_end_of_input),
    cmocka_unit_test(a_comment_runs_to_the_end_of_the_line_and_may_hold_utf8),
    cmocka_unit_test(a_comment_at_the_end_of_input_ends_the_line),
    cmocka_unit_test(invalid_utf8_in_a_comment_is_one_located_error_per_run),
    cmocka_unit_test(utf8_outside_a_comment_is_an_invalid_character),
    cmocka_unit_test(invalid_utf8_outside_a_comment_is_an_error),
    cmocka_unit_test(a_stray_character_is_a_located_error),
    cmocka_unit_test(a_run_of_stray_characters_is_one_error),
    cmocka_unit_test(a_nul_byte_is_a_located_error_and_lexing_goes_on),
    cmocka_unit_test(more_than_the_nesting_limit_of_brackets_is_one_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
