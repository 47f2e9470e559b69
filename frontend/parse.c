// frontend/parse.c: source text -> AST_PROGRAM. Owns the scanner's lifetime (one
// per call, over the whole file including any NUL bytes: f->len is the truth),
// resolves the words that name a dtype between the scanner and the parser, parses
// the replacement fields of f-strings (each `{expr!c:spec}` a parse of its own over
// the same file, so every location is the file's), and prints the scanner's token
// stream for --emit=tokens. Every error goes through diag_error: the scanner's and
// the parser's, and Python's messages for a malformed f-string here.
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
static Ast *parse_fstring(Parse *p, const char *text, Loc loc);

int tdslc_yylex(YYSTYPE *val, YYLTYPE *loc, yyscan_t scanner) {
  Parse *p = tdslc_yyget_extra(scanner);
  if (p->start) {  // an expression parse begins with its marker
    int t = p->start;
    p->start = 0;
    loc->file = p->file;
    loc->begin = loc->end = p->pos;
    return t;
  }
  bool after_dot = p->last == '.';
  int tok = tdslc_yyscan(val, loc, scanner);
  DType dt;
  if (tok == IDENT && !after_dot && dtype_from_name(val->str, &dt)) {
    val->dtype = dt;
    return DTYPE;
  }
  if (tok == FSTRING) val->ast = parse_fstring(p, val->str, *loc);
  // 'fn' that starts its line declares a function of the file: in a block it is the
  // error of a missing '}' there, where a def inside a function is indented
  if (tok == FN && (loc->begin == 0 || p->file->text[loc->begin - 1] == '\n')) return FN_TOP;
  return tok;
}

Ast *parse_set_display(Ctx *cx, Ast *items, Loc loc) {
  Ast *call = ast_call(cx, NULL, "set", ast_list_of(cx, ast_list_expr(cx, items, loc), loc), loc, loc);
  call->op = 1;
  return call;
}

// x.attr = v (pasted code sets attributes in branches it never takes: `if training {
// t.requires_grad = True }`): the call setattr(x, 'attr', v) marked op 1, which sema refuses
// where it is reached; any other assignment is ast_assign's.
Ast *parse_assign(Ctx *cx, Ast *first, Ast *tail, Loc oploc, Loc loc) {
  if (first->kind != AST_ATTR || tail->list.len != 1) return ast_assign(cx, first, tail, oploc, loc);
  Ast *args = ast_list_of(cx, first->lhs, first->lhs->loc);
  ast_append(cx, args, ast_str(cx, first->name, first->oploc));
  ast_append(cx, args, tail->list.data[0]);
  Ast *call = ast_call(cx, NULL, "setattr", args, first->oploc, loc);
  call->op = 1;
  call->oploc = first->oploc;
  return ast_expr_stmt(cx, call, loc);
}

// `manager as target` of a with statement: the marker call "(with as)" of the manager and the statement
// `target = (with)(manager)` (op 2: the value its __enter__ returns, sema_python.c's py_with), which
// parse_with takes apart.
Ast *parse_with_as(Ctx *cx, Ast *manager, Ast *target, Loc asloc, Loc loc) {
  Ast *enter = ast_call(cx, NULL, "(with)", ast_list_of(cx, ast_clone(cx, manager), manager->loc), manager->loc,
                        manager->loc);
  enter->op = 2;
  Ast *args = ast_list_of(cx, manager, manager->loc);
  ast_append(cx, args, parse_assign(cx, target, ast_list_of(cx, enter, manager->loc), asloc, loc));
  return ast_call(cx, NULL, "(with as)", args, asloc, loc);
}

// with m1, m2 as t { body }: an `if` of the hidden call "(with)" of the managers (sema_python.c's
// py_with: true, or the error of a manager tdsl does not take), its block the body after each `as`
// target's assignment, in order, as Python binds them on entering.
Ast *parse_with(Ctx *cx, Ast *items, Ast *block, Loc withloc, Loc itemsloc, Loc loc) {
  Ast *body = ast_list(cx, block->loc);
  for (int i = 0; i < items->list.len; i++) {
    Ast *it = items->list.data[i];
    if (it->kind != AST_CALL || it->lhs || strcmp(it->name, "(with as)")) continue;
    ast_append(cx, body, it->list.data[1]);
    items->list.data[i] = it->list.data[0];
  }
  for (int i = 0; i < block->list.len; i++) ast_append(cx, body, block->list.data[i]);
  return ast_if(cx, ast_call(cx, NULL, "(with)", items, withloc, itemsloc), body, NULL, loc);
}

// target: annotation = value and target: annotation, as Python's annotated assignment: the
// annotation is kept unevaluated (st->type: a @dataclass's field), a value assigned as `=`
// assigns it; alone it binds nothing (an AST_PASS whose step is the target). A target that
// is a tuple or list display is Python's SyntaxError, at the target.
Ast *parse_annotated(Ctx *cx, Ast *target, Ast *annotation, Ast *value, Loc oploc, Loc loc) {
  if (target->kind == AST_TUPLE || target->kind == AST_LIST) {
    diag_error(cx, target->loc, "only single target (not %s) can be annotated",
               target->kind == AST_TUPLE ? "tuple" : "list");
    return ast_jump(cx, AST_PASS, loc);
  }
  Ast *st = value ? parse_assign(cx, target, ast_list_of(cx, value, value->loc), oploc, loc)
                   : ast_jump(cx, AST_PASS, loc);
  st->type = annotation;
  if (!value) st->step = target;
  return st;
}

Ast *parse_top_annotated(Ctx *cx, Ast *program, Ast *target, Ast *value, Loc tloc, Loc loc) {
  if (target->kind == AST_TUPLE || target->kind == AST_LIST) {
    diag_error(cx, tloc, "only single target (not %s) can be annotated", target->kind == AST_TUPLE ? "tuple" : "list");
    return program;
  }
  if (target->kind != AST_NAME) {
    diag_error(cx, tloc, "a module-level name holds compile-time values: annotate a name here (x: int = 3)");
    return program;
  }
  return value ? ast_append(cx, program, ast_const(cx, target->name, value, loc)) : program;
}

Ast *parse_star_param(Ctx *cx, const char *name, Ast *type, Loc loc) {
  Loc at = {loc.file, loc.begin + 1, loc.begin + 1 + (uint32_t)strlen(name)};
  Ast *p = ast_param(cx, false, name, type ? type : ast_scalar_type(cx, "tuple", at), NULL, loc);
  p->ival = 1;  // PARAM_STAR (sema_internal.h)
  return p;
}

Ast *parse_kwargs_param(Ctx *cx, const char *name, Loc loc) {
  Loc at = {loc.file, loc.begin + 2, loc.begin + 2 + (uint32_t)strlen(name)};
  Ast *p = ast_param(cx, false, name, ast_scalar_type(cx, "dict", at), NULL, loc);
  p->ival = 2;  // PARAM_KWARGS (sema_internal.h)
  return p;
}

// Parses the bytes [begin, end) of f: the whole file (start 0), or one expression.
static Ast *parse_range(Ctx *cx, const SrcFile *f, uint32_t begin, uint32_t end, int start) {
  Parse p;
  parse_init(&p, cx, f);
  p.pos = begin;
  p.start = start;
  yyscan_t scanner;
  if (tdslc_yylex_init_extra(&p, &scanner) != 0) return NULL;
  YY_BUFFER_STATE buf = tdslc_yy_scan_bytes(f->text + begin, (int)(end - begin), scanner);
  tdslc_yyparse(scanner, &p);  // errors are reported and counted in cx
  tdslc_yy_delete_buffer(buf, scanner);
  tdslc_yylex_destroy(scanner);
  return p.root;
}

Ast *parse_program(Ctx *cx, const SrcFile *f) {
  Ast *root = parse_range(cx, f, 0, (uint32_t)f->len, 0);
  if (root) root->loc = (Loc){f, 0, (uint32_t)f->len};
  return root;
}

// ---- f-strings ----
// The end of the expression of a replacement field starting at text[i]: where '}', a
// '!' conversion, a ':' spec or a closing '=' comes outside brackets and strings.
static size_t field_end(const char *text, size_t i) {
  int depth = 0;
  char quote = 0;
  for (; text[i]; i++) {
    char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      depth++;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      depth--;
    } else if (depth == 0 && (c == '}' || c == ':' || (c == '!' && text[i + 1] != '='))) {
      return i;
    } else if (depth == 0 && c == '=' && !strchr("=!<>", i ? text[i - 1] : ' ') && text[i + 1] != '=') {
      size_t k = i + 1;
      while (text[k] == ' ') k++;
      if (text[k] == '}' || text[k] == '!' || text[k] == ':') return i;
    }
  }
  return i;
}

static Ast *piece(Parse *p, const char *text, size_t from, size_t to, uint32_t at) {
  Loc l = {p->file, at + (uint32_t)from, at + (uint32_t)to};
  return ast_str(p->cx, arena_strndup(&p->cx->arena, text + from, to - from), l);
}

// f"text {expr!c:spec} {{ }}": AST_STR pieces (braces doubled written once) and AST_FIELDs.
static Ast *parse_fstring(Parse *p, const char *text, Loc loc) {
  Ast *f = ast_new(p->cx, AST_FSTRING, loc);
  const char *src = p->file->text;
  uint32_t at = loc.begin;  // text[0] is the byte after f" (or fr", rf", f""")
  while (src[at] != '"' && src[at] != '\'') at++;
  at += at + 2 < loc.end && src[at + 1] == src[at] && src[at + 2] == src[at] ? 3 : 1;
  size_t i = 0;
  char *buf = arena_alloc(&p->cx->arena, strlen(text) + 1);
  size_t nb = 0;
  Loc litloc = {p->file, at, at};
  while (text[i]) {
    char c = text[i];
    if ((c == '{' && text[i + 1] == '{') || (c == '}' && text[i + 1] == '}')) {
      buf[nb++] = c;
      i += 2;
      continue;
    }
    if (c == '}') {
      diag_error(p->cx, (Loc){p->file, at + (uint32_t)i, at + (uint32_t)i + 1}, "f-string: single '}' is not allowed");
      return ast_str(p->cx, "", loc);
    }
    if (c != '{') {
      buf[nb++] = c;
      i++;
      continue;
    }
    if (nb) {  // the text so far
      litloc.end = at + (uint32_t)i;
      vec_push(&p->cx->arena, &f->list, ast_str(p->cx, arena_strndup(&p->cx->arena, buf, nb), litloc));
      nb = 0;
    }
    size_t b = i + 1, e = field_end(text, b);
    Loc floc = {p->file, at + (uint32_t)i, at + (uint32_t)e};
    size_t eb = b, ee = e;
    while (eb < ee && text[eb] == ' ') eb++;
    while (ee > eb && text[ee - 1] == ' ') ee--;
    if (eb == ee) {
      diag_error(p->cx, floc, "f-string: empty expression not allowed");
      return ast_str(p->cx, "", loc);
    }
    Ast *fld = ast_new(p->cx, AST_FIELD, floc);
    fld->lhs = parse_range(p->cx, p->file, at + (uint32_t)b, at + (uint32_t)e, START_EXPR);
    if (!fld->lhs) return ast_str(p->cx, "", loc);
    if (text[e] == '=') {  // {x=}: the text written, then the value's repr
      fld->rhs = piece(p, text, b, e + 1, at);
      fld->op = 'r';
      for (e++; text[e] == ' '; e++) {}
    }
    if (text[e] == '!') {
      char conv = text[e + 1];
      if (conv != 'r' && conv != 's' && conv != 'a') {
        diag_error(p->cx, (Loc){p->file, at + (uint32_t)e, at + (uint32_t)e + 2},
                   "f-string: invalid conversion character: expected 's', 'r', or 'a'");
        return ast_str(p->cx, "", loc);
      }
      fld->op = conv;
      e += 2;
    }
    if (text[e] == ':') {
      size_t s0 = ++e;
      while (text[e] && text[e] != '}') {
        if (text[e] == '{') {
          diag_error(p->cx, (Loc){p->file, at + (uint32_t)e, at + (uint32_t)e + 1},
                     "f-string: a format spec with a replacement field of its own is not supported");
          return ast_str(p->cx, "", loc);
        }
        e++;
      }
      fld->name = arena_strndup(&p->cx->arena, text + s0, e - s0);
      if (fld->rhs && fld->op == 'r') fld->op = 0;  // {x=:spec} formats the value, not its repr
    }
    if (text[e] != '}') {
      diag_error(p->cx, (Loc){p->file, at + (uint32_t)e, at + (uint32_t)e + (text[e] != 0)}, "f-string: expecting '}'");
      return ast_str(p->cx, "", loc);
    }
    fld->loc.end = at + (uint32_t)e + 1;
    vec_push(&p->cx->arena, &f->list, fld);
    i = e + 1;
    litloc.begin = at + (uint32_t)i;
  }
  if (nb) {
    litloc.end = at + (uint32_t)i;
    vec_push(&p->cx->arena, &f->list, ast_str(p->cx, arena_strndup(&p->cx->arena, buf, nb), litloc));
  }
  return f;
}

// The name a token has in --emit=tokens: words for tokens of many spellings,
// the spelling in quotes for the others.
static const char *token_kind(int tok) {
  switch (tok) {
  case IDENT: return "IDENT";
  case INT: return "INT";
  case FLOAT: return "FLOAT";
  case IMAG: return "IMAG";
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
