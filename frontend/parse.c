// frontend/parse.c: source text -> AST_PROGRAM. Owns the scanner's lifetime (one
// per call, over the whole file including any NUL bytes: f->len is the truth),
// resolves the words that name a dtype between the scanner and the parser, and
// prints the scanner's token stream for --emit=tokens. Every error goes through
// diag_error from the scanner or the parser; this file adds none of its own.
#include "frontend/frontend.h"

#include <inttypes.h>
#include <string.h>

#include "parser.h"
#include "lexer.h"

static void parse_init(Parse *p, Ctx *cx, const SrcFile *f) {
  memset(p, 0, sizeof *p);
  p->cx = cx;
  p->file = f;
}

// The tokens the parser reads: the scanner's, except that a word naming a dtype (f32,
// i64 ...; keywords of LANGUAGE.md §2) is DTYPE, the token a type (x: f32[3]) and a
// dtype value (x.to(f64), dtype=i32) are written with. After '.' it stays a name, as
// every word does there (x.bool()).
int tdslc_yylex(YYSTYPE *val, YYLTYPE *loc, yyscan_t scanner) {
  bool after_dot = tdslc_yyget_extra(scanner)->last == '.';
  int tok = tdslc_yyscan(val, loc, scanner);
  DType dt;
  if (tok == IDENT && !after_dot && dtype_from_name(val->str, &dt)) {
    val->dtype = dt;
    return DTYPE;
  }
  return tok;
}

Ast *parse_program(Ctx *cx, const SrcFile *f) {
  Parse p;
  parse_init(&p, cx, f);
  yyscan_t scanner;
  if (tdslc_yylex_init_extra(&p, &scanner) != 0) return NULL;
  YY_BUFFER_STATE buf = tdslc_yy_scan_bytes(f->text, (int)f->len, scanner);
  tdslc_yyparse(scanner, &p);  // errors are reported and counted in cx
  tdslc_yy_delete_buffer(buf, scanner);
  tdslc_yylex_destroy(scanner);
  if (p.root) p.root->loc = (Loc){f, 0, (uint32_t)f->len};
  return p.root;
}

// The name a token has in --emit=tokens: words for tokens of many spellings,
// the spelling in quotes for the others.
static const char *token_kind(int tok) {
  switch (tok) {
  case IDENT: return "IDENT";
  case INT: return "INT";
  case FLOAT: return "FLOAT";
  case STRING: return "STRING";
  case NEWLINE: return "NEWLINE";
  case TDSLC_YYUNDEF: return "INVALID";
  default: return NULL;
  }
}

// The scanner's tokens (a dtype name is an IDENT there), one per line: "line:col KIND
// text" for words and literals ("3:5 IDENT x", "3:9 INT 42"), "line:col 'text'" for
// fixed spellings ("3:7 '='", "1:1 'fn'"), "line:col NEWLINE", and "line:col EOF" last.
void parse_dump_tokens(Ctx *cx, const SrcFile *f, FILE *out) {
  Parse p;
  parse_init(&p, cx, f);
  yyscan_t scanner;
  if (tdslc_yylex_init_extra(&p, &scanner) != 0) return;
  YY_BUFFER_STATE buf = tdslc_yy_scan_bytes(f->text, (int)f->len, scanner);
  for (;;) {
    YYSTYPE val;
    YYLTYPE loc = {f, 0, 0};
    int tok = tdslc_yyscan(&val, &loc, scanner);
    int line, col;
    srcfile_linecol(f, tok ? loc.begin : (uint32_t)f->len, &line, &col);
    if (tok == 0) {
      fprintf(out, "%d:%d EOF\n", line, col);
      break;
    }
    const char *kind = token_kind(tok);
    int len = (int)(loc.end - loc.begin);
    if (tok == NEWLINE || tok == TDSLC_YYUNDEF)
      fprintf(out, "%d:%d %s\n", line, col, kind);
    else if (kind)
      fprintf(out, "%d:%d %s %.*s\n", line, col, kind, len, f->text + loc.begin);
    else
      fprintf(out, "%d:%d '%.*s'\n", line, col, len, f->text + loc.begin);
  }
  tdslc_yy_delete_buffer(buf, scanner);
  tdslc_yylex_destroy(scanner);
}
