// driver/roofline_svg.c: `tdslc bench --plot FILE.svg`: the roofline chart of a profile,
// drawn as Intel Advisor and Nsight Compute draw theirs. Log-log axes: arithmetic
// intensity (FLOP per byte) across, GFLOP/s up, each fitted to the decades around the
// kernels and the roofs (the ridge point always inside); the memory roof (bandwidth x
// intensity) rises to the ridge point and the f32 peak runs flat from there (the f64 peak
// dashed below it). Each kernel is a dot at (its intensity, its GFLOP/s), its area its
// share of the call, red for a large share (at least 20%), yellow for a medium one (5%),
// green for the rest, each with a tooltip (<title>) giving its lines, schedule and rates.
// Labels: the roofs' first, each where no dot is if it can be; then the largest shares'
// (name, ops, share), each placed greedily on rings of offsets around its dot (a leader
// line when moved off it) over no dot and no earlier label; a kernel whose label fits
// nowhere gets a number there (over other dots if need be) and a line in the legend. Text widths are
// estimated from DejaVu Sans's advance widths (the usual sans-serif, wider than Arial's),
// so that no label overlaps another and none runs past the canvas, which grows to hold
// the notes under the chart. Labels are drawn last, over the dots, on a white halo.
// Kernels without arithmetic or without traffic have no place on log axes: a note under
// the chart lists them with their GB/s (above the DRAM roof: from cache).
// The file is plain SVG 1.1 written directly (no library), whole or not at all; every
// text is XML-escaped.
#include "driver/driver.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// the plot area is [LEFT, PW - RIGHT] x [TOP, PB]; the notes go under it
enum { PW = 960, LEFT = 90, RIGHT = 40, TOP = 60, PB = 530, LABELS = 12, NOTES = 3, FOOT = 64, ROW = 15 };

typedef struct Axes {
  double x0, x1, y0, y1;  // log10 of the ranges shown
} Axes;

static double px(const Axes *a, double x) { return LEFT + (log10(x) - a->x0) / (a->x1 - a->x0) * (PW - LEFT - RIGHT); }
static double py(const Axes *a, double y) { return PB - (log10(y) - a->y0) / (a->y1 - a->y0) * (PB - TOP); }

static void xml_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
        fputc(*s, f);
    }
  }
}

// DejaVu Sans's advance widths in thousandths of an em, ' ' to '~'
static const short ADVANCE[95] = {
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337,  // ' ' to '/'
    636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531,  // '0' to '?'
    1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787,  // '@' to 'O'
    603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500,  // 'P' to '_'
    500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612,  // '`' to 'o'
    635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,       // 'p' to '~'
};

// The width of s set at size px (bold: a tenth wider); a character outside ASCII counts an em.
static double text_width(const char *s, double size, bool bold) {
  double w = 0;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c < 0x7f)
      w += ADVANCE[c - 0x20];
    else if ((c & 0xc0) != 0x80)  // the first byte of a UTF-8 sequence
      w += 1000;
  }
  return w * size / 1000 * (bold ? 1.1 : 1);
}

static bool plotted(const ProfKernel *k) { return k->flops > 0 && k->bytes > 0 && k->gflops > 0; }

// "1e-05" style tick labels read badly on a chart: 0.01, 0.1, 1, 10, 100, 1k, 10k ...
static void tick_label(char *buf, size_t n, int e) {
  if (e >= 3 && e < 6)
    snprintf(buf, n, "%.0fk", pow(10, e - 3));
  else if (e >= 6)
    snprintf(buf, n, "1e%d", e);
  else if (e >= 0)
    snprintf(buf, n, "%.0f", pow(10, e));
  else if (e >= -4)
    snprintf(buf, n, "%.*f", -e, pow(10, e));
  else
    snprintf(buf, n, "1e%d", e);
}

// The decades around every plotted kernel (with a factor 1.5 to spare) and both roofs (the
// ridge point a factor 3 inside, the peak a factor 1.3 below the top), two decades at least
// on each axis.
static Axes axes_for(const Profile *pr) {
  const Roofline *r = &pr->roof;
  double ridge = r->peak_f32 / r->bandwidth;
  double xlo = ridge, xhi = ridge, ylo = fmin(r->peak_f32, r->peak_f64), yhi = fmax(r->peak_f32, r->peak_f64);
  for (int i = 0; i < pr->nk; i++) {
    const ProfKernel *k = &pr->ks[i];
    if (!plotted(k))
      continue;
    xlo = fmin(xlo, k->intensity), xhi = fmax(xhi, k->intensity);
    ylo = fmin(ylo, k->gflops), yhi = fmax(yhi, k->gflops);
  }
  Axes a = {floor(log10(fmin(xlo / 1.5, ridge / 3))), ceil(log10(fmax(xhi * 1.5, ridge * 3))), floor(log10(ylo / 1.5)),
            ceil(log10(yhi * 1.3))};
  if (a.x1 - a.x0 < 2)
    a.x0 = a.x1 - 2;
  if (a.y1 - a.y0 < 2)
    a.y0 = a.y1 - 2;
  if (a.y0 < a.y1 - 9)  // at most 9 decades of GFLOP/s: slower kernels sit on the bottom edge
    a.y0 = a.y1 - 9;
  if (a.x0 < a.x1 - 10)
    a.x0 = a.x1 - 10;
  return a;
}

typedef struct Box {
  double x0, y0, x1, y1;
} Box;

static bool overlaps(const Box *a, const Box *b) { return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1; }

static bool inside_plot(const Box *b) { return b->x0 >= LEFT && b->x1 <= PW - RIGHT && b->y0 >= TOP && b->y1 <= PB; }

// the box of a line of text whose baseline starts at (x, y), at font size 12 or less
static Box text_box(double x, double y, double w) { return (Box){x, y - 10, x + w, y + 3}; }

typedef struct Boxes {
  Box *b;
  int n, cap;
} Boxes;

static void add_box(Boxes *s, Box b) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 64;
    Box *nb = realloc(s->b, sizeof *nb * (size_t)s->cap);
    if (!nb) {
      fputs("tdslc: out of memory\n", stderr);
      exit(EXIT_INTERNAL);
    }
    s->b = nb;
  }
  s->b[s->n++] = b;
}

static bool hits(const Boxes *s, const Box *b) {
  for (int i = 0; i < s->n; i++)
    if (overlaps(b, &s->b[i]))
      return true;
  return false;
}

// A text rotated by deg about its baseline's start (x, y), as boxes a word's width long
// each (the bounding boxes of its pieces, so that a slanted label does not claim the whole
// rectangle it crosses); at most n. Returns how many.
static int slanted_boxes(double x, double y, double w, double deg, Box *out, int n) {
  double c = cos(deg / 57.29577951308232), s = sin(deg / 57.29577951308232);
  int k = 0;
  for (double t = 0; t < w && k < n; t += 12, k++) {
    double t1 = fmin(t + 12, w), lx[4] = {t, t1, t1, t}, ly[4] = {-10, -10, 3, 3};
    Box b = {1e9, 1e9, -1e9, -1e9};
    for (int j = 0; j < 4; j++) {
      double gx = x + lx[j] * c - ly[j] * s, gy = y + lx[j] * s + ly[j] * c;
      b = (Box){fmin(b.x0, gx), fmin(b.y0, gy), fmax(b.x1, gx), fmax(b.y1, gy)};
    }
    out[k] = b;
  }
  return k;
}

// A label of text: where it goes (baseline start, rotation) and its class in the SVG
typedef struct Label {
  double x, y, deg;
  char text[192];
  const char *cls, *fill;
  bool bold;
} Label;

// A text over a white halo of itself, so that it reads over grid, roofs and dots (two
// copies rather than paint-order, which SVG 1.1 viewers ignore)
static void put_label(FILE *f, const Label *l) {
  char rot[96] = "";
  if (l->deg != 0)
    snprintf(rot, sizeof rot, " transform=\"rotate(%.1f %.1f %.1f)\"", l->deg, l->x, l->y);
  for (int halo = 1; halo >= 0; halo--) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\"%s%s class=\"%s\" fill=\"%s\"%s>", l->x, l->y, rot,
            l->bold ? " font-weight=\"bold\"" : "", halo ? "halo" : l->cls, halo ? "white" : l->fill,
            halo ? " stroke=\"white\" stroke-width=\"3\" stroke-linejoin=\"round\"" : "");
    xml_text(f, l->text);
    fputs("</text>\n", f);
  }
}

static int by_share(const void *a, const void *b) {
  const ProfKernel *x = *(const ProfKernel *const *)a, *y = *(const ProfKernel *const *)b;
  return x->share < y->share ? 1 : x->share > y->share ? -1 : x->index - y->index;
}

static double radius(const ProfKernel *k) { return 3 + 22 * sqrt(fmax(k->share, 0)); }

// A flat roof's label: the first of (right end, at its start, between) x (above, below)
// that covers no dot and no earlier label, else the first; its boxes join `taken`.
static void place_flat(Label *l, double y, double start, const Boxes *dots, Boxes *taken) {
  double w = text_width(l->text, 12, false), xs[3] = {PW - RIGHT - 6 - w, start + 6, (start + PW - RIGHT - w) / 2};
  double ys[2] = {y - 6, y + 16};
  Box first = {0};
  bool found = false;
  for (int j = 0; j < 2 && !found; j++)
    for (int i = 0; i < 3 && !found; i++) {
      Box b = text_box(fmax(xs[i], LEFT + 4), ys[j], w);
      if (i == 0 && j == 0)
        first = b;
      if (inside_plot(&b) && !hits(dots, &b) && !hits(taken, &b))
        first = b, found = true;
    }
  l->x = first.x0, l->y = first.y1 - 3;
  add_box(taken, first);
}

// The memory roof's label: along its slope, baseline 6 px above it, at the first place
// from the ridge down whose pieces cover no dot and no earlier label, else the first.
static void place_slope(Label *l, const Axes *a, const Roofline *r, const Boxes *dots, Boxes *taken) {
  double ridge = r->peak_f32 / r->bandwidth, xl = pow(10, a->x0), yl = pow(10, a->y0);
  double sx = fmax(xl, yl / r->bandwidth);  // where the slope enters the plot
  double x0 = px(a, sx), y0 = py(a, r->bandwidth * sx), x1 = px(a, ridge), y1 = py(a, r->peak_f32);
  double len = hypot(x1 - x0, y1 - y0), ux = (x1 - x0) / len, uy = (y1 - y0) / len;
  double w = text_width(l->text, 12, false);
  l->deg = atan2(uy, ux) * 57.29577951308232;
  Box pieces[40];
  double smax = fmax(len - w - 16, 8);
  int steps = (int)((smax - 8) / 12) + 1, chosen = 0, np = 0;
  for (int pass = 0; pass < 2; pass++)  // find the place, then take its pieces
    for (int i = pass ? chosen : 0; i < (pass ? chosen + 1 : steps); i++) {
      double s = smax - 12 * i, bx = x0 + s * ux + 6 * uy, by = y0 + s * uy - 6 * ux;  // 6 px up the normal
      np = slanted_boxes(bx, by, w, l->deg, pieces, 40);
      l->x = bx, l->y = by;
      bool ok = true;
      for (int j = 0; j < np && ok; j++)
        ok = inside_plot(&pieces[j]) && !hits(dots, &pieces[j]) && !hits(taken, &pieces[j]);
      if (!pass && ok) {
        chosen = i;
        break;
      }
    }
  for (int i = 0; i < np; i++)
    add_box(taken, pieces[i]);
}

// Whether the segment (x0, y0)-(x1, y1) crosses the inside of b (Liang and Barsky's clip)
static bool crosses(double x0, double y0, double x1, double y1, const Box *b) {
  double t0 = 0, t1 = 1, dx = x1 - x0, dy = y1 - y0;
  double p[4] = {-dx, dx, -dy, dy}, q[4] = {x0 - b->x0 - 0.5, b->x1 - 0.5 - x0, y0 - b->y0 - 0.5, b->y1 - 0.5 - y0};
  for (int i = 0; i < 4; i++) {
    if (p[i] == 0) {
      if (q[i] < 0)
        return false;
    } else if (p[i] < 0) {
      t0 = fmax(t0, q[i] / p[i]);
    } else {
      t1 = fmin(t1, q[i] / p[i]);
    }
    if (t0 > t1)
      return false;
  }
  return true;
}

// The leader from a dot's edge to the nearest point of its label's box b: false when the
// label sits by the dot and needs none.
static bool leader(double cx, double cy, double rad, const Box *b, Box *seg) {
  double qx = fmin(fmax(cx, b->x0), b->x1), qy = fmin(fmax(cy, b->y0), b->y1), d = hypot(qx - cx, qy - cy);
  if (d <= rad + 6)
    return false;
  *seg = (Box){cx + (qx - cx) * rad / d, cy + (qy - cy) * rad / d, qx, qy};
  return true;
}

// The first box of width w, height 13, on rings of offsets around a dot (beside it, above,
// below, the diagonals, the eight directions between them, then each a ring further out,
// four at most) inside the plot that covers no taken box and no leader line, nor a dot
// unless over_dots, and whose own leader crosses no taken box.
static bool place_near(double cx, double cy, double rad, double w, const Boxes *dots, bool over_dots,
                       const Boxes *taken, const Box *leads, int nlead, Box *out) {
  static const double deg[16] = {0, 180, -90, 90, -45, -135, 45, 135, -22.5, -157.5, 22.5, 157.5,
                                 -67.5, -112.5, 67.5, 112.5};
  for (int ring = 0; ring < 5; ring++)
    for (int d = 0; d < 16; d++) {
      double o = rad + 4 + ring * 14, dx = cos(deg[d] / 57.29577951308232), dy = sin(deg[d] / 57.29577951308232);
      double x = dx > 0.01 ? cx + o * dx : dx < -0.01 ? cx + o * dx - w : cx - w / 2;
      double yb = dy < -0.01 ? cy + o * dy - 3 : dy > 0.01 ? cy + o * dy + 10 : cy + 4;  // the baseline
      Box b = text_box(x, yb, w), seg, pad = {b.x0 - 3, b.y0 - 1, b.x1 + 3, b.y1 + 1};  // a gap to the next text
      bool ok = inside_plot(&b) && (over_dots || !hits(dots, &b)) && !hits(taken, &pad);
      for (int i = 0; i < nlead && ok; i++)
        ok = !crosses(leads[i].x0, leads[i].y0, leads[i].x1, leads[i].y1, &b);
      if (ok && leader(cx, cy, rad, &b, &seg))
        for (int i = 0; i < taken->n && ok; i++)
          ok = !crosses(seg.x0, seg.y0, seg.x1, seg.y1, &taken->b[i]);
      if (ok) {
        *out = b;
        return true;
      }
    }
  return false;
}

// A kernel's label text: its name, its first ops (whole names, while the text stays short)
// and its share.
static void kernel_text(const ProfKernel *k, char *text, size_t n) {
  const LKernel *lk = k->k;
  size_t len = (size_t)snprintf(text, n, "%s", lk->name);
  int j = 0;
  for (; j < lk->ops.len && j < 3 && len + strlen(lk->ops.data[j]) < 48; j++)
    len += (size_t)snprintf(text + len, n - len, " %s", lk->ops.data[j]);
  snprintf(text + len, n - len, "%s %.0f%%", j < lk->ops.len ? " …" : "", 100 * k->share);
}

// An off-chart kernel's note: its time, and its bandwidth against the DRAM roof (above
// it, its data came from cache: the roof is DRAM's).
static void offchart_text(const ProfKernel *k, const Roofline *r, char *text, size_t n) {
  const LKernel *lk = k->k;
  size_t len = (size_t)snprintf(text, n, "%s", lk->name);
  for (int j = 0; j < lk->ops.len && j < 4; j++)
    len += (size_t)snprintf(text + len, n - len, " %s", lk->ops.data[j]);
  len += (size_t)snprintf(text + len, n - len, "%s: %.4g ms (%.1f%%)", lk->ops.len > 4 ? " …" : "", k->ms,
                          100 * k->share);
  double frac = k->gbps / r->bandwidth;
  if (k->bytes == 0)
    snprintf(text + len, n - len, ", no memory traffic");
  else if (k->gbps <= 0)
    snprintf(text + len, n - len, ", too fast to time");
  else if (frac > 1)
    snprintf(text + len, n - len, ", %.3g GB/s: above the DRAM roof (%.1fx), its data came from cache", k->gbps,
             frac);
  else
    snprintf(text + len, n - len, ", %.3g GB/s, %.0f%% of the DRAM bandwidth", k->gbps, 100 * frac);
}

static void write_chart(const Profile *pr, FILE *f) {
  const Roofline *r = &pr->roof;
  Axes a = axes_for(pr);
  double xl = pow(10, a.x0), xh = pow(10, a.x1), yl = pow(10, a.y0);
  double ridge = r->peak_f32 / r->bandwidth, ridge64 = r->peak_f64 / r->bandwidth;
  int nk = pr->nk;
  const ProfKernel **ks = malloc(sizeof *ks * (size_t)(nk ? nk : 1));
  Label *labels = malloc(sizeof *labels * (size_t)(2 * nk + 4));
  Box *leaders = malloc(sizeof *leaders * (size_t)(nk ? nk : 1));  // dot centre to label
  if (!ks || !labels || !leaders) {
    fputs("tdslc: out of memory\n", stderr);
    exit(EXIT_INTERNAL);
  }
  for (int i = 0; i < nk; i++)
    ks[i] = &pr->ks[i];
  qsort(ks, (size_t)nk, sizeof *ks, by_share);
  Boxes dots = {0}, taken = {0};
  for (int i = 0; i < nk; i++)
    if (plotted(ks[i])) {
      double x = px(&a, ks[i]->intensity), y = py(&a, fmax(ks[i]->gflops, yl)), rad = radius(ks[i]);
      add_box(&dots, (Box){x - rad, y - rad, x + rad, y + rad});
    }
  // the roofs' labels first, where no dot is
  int nl = 0, nlead = 0;
  Label *l = &labels[nl++];
  *l = (Label){.cls = "roof", .fill = "#1f4e99"};
  snprintf(l->text, sizeof l->text, "f32 peak %.1f GFLOP/s", r->peak_f32);
  place_flat(l, py(&a, r->peak_f32), px(&a, ridge), &dots, &taken);
  if (r->peak_f64 < r->peak_f32 && r->peak_f64 >= yl) {
    l = &labels[nl++];
    *l = (Label){.cls = "roof", .fill = "#1f4e99"};
    snprintf(l->text, sizeof l->text, "f64 peak %.1f", r->peak_f64);
    place_flat(l, py(&a, r->peak_f64), px(&a, ridge64), &dots, &taken);
  }
  l = &labels[nl++];
  *l = (Label){.cls = "roof", .fill = "#1f4e99"};
  snprintf(l->text, sizeof l->text, "memory %.1f GB/s", r->bandwidth);
  place_slope(l, &a, r, &dots, &taken);
  l = &labels[nl++];
  *l = (Label){.cls = "roof", .fill = "#1f4e99"};
  snprintf(l->text, sizeof l->text, "ridge %.3g", ridge);
  {
    double w = text_width(l->text, 12, false), rx = px(&a, ridge);
    double xs[4] = {rx - w / 2, rx + 4, rx - 4 - w, rx + 4}, ys[4] = {PB - 6, PB - 6, PB - 6, PB - 22};
    Box b = text_box(xs[0], ys[0], w);
    for (int i = 0; i < 4; i++) {
      Box c = text_box(xs[i], ys[i], w);
      if (inside_plot(&c) && !hits(&dots, &c) && !hits(&taken, &c)) {
        b = c;
        break;
      }
    }
    l->x = b.x0, l->y = b.y1 - 3;
    add_box(&taken, b);
  }
  // the kernels' labels, the largest shares first (at most LABELS, at least 1% each); one
  // that fits nowhere is numbered, its text in the legend
  char legend[LABELS][192];
  int nlegend = 0, labelled = 0;
  for (int i = 0; i < nk && labelled < LABELS; i++) {
    const ProfKernel *k = ks[i];
    if (!plotted(k) || k->share < 0.01)
      continue;
    labelled++;
    double cx = px(&a, k->intensity), cy = py(&a, fmax(k->gflops, yl)), rad = radius(k);
    l = &labels[nl];
    *l = (Label){.cls = "label", .fill = "#111"};
    kernel_text(k, l->text, sizeof l->text);
    Box b;
    if (!place_near(cx, cy, rad, text_width(l->text, 12, false), &dots, false, &taken, leaders, nlead, &b)) {
      char num[16];
      snprintf(num, sizeof num, "%d", nlegend + 1);
      double w = text_width(num, 12, true);
      if (!place_near(cx, cy, rad, w, &dots, false, &taken, leaders, nlead, &b) &&
          !place_near(cx, cy, rad, w, &dots, true, &taken, leaders, nlead, &b))
        continue;  // not even a number fits: its tooltip only
      snprintf(legend[nlegend++], sizeof legend[0], "%s", l->text);
      snprintf(l->text, sizeof l->text, "%s", num);
      l->bold = true;
    }
    l->x = b.x0, l->y = b.y1 - 3;
    nl++;
    add_box(&taken, b);
    if (leader(cx, cy, rad, &b, &leaders[nlead]))  // moved off its dot
      nlead++;
  }
  // the notes under the chart, then the canvas that holds them
  Label *notes = malloc(sizeof *notes * (size_t)(nk + nlegend + 4));
  if (!notes) {
    fputs("tdslc: out of memory\n", stderr);
    exit(EXIT_INTERNAL);
  }
  int nn = 0, y = PB + FOOT;
  notes[nn++] = (Label){.x = LEFT, .y = y, .cls = "note", .fill = "#555",
                        .text = "A dot per kernel, its area its share of the call (red: 20% or more, yellow: 5% or "
                                "more); the largest labelled; hover for lines, schedule, rates."};
  y += ROW + 5;
  double lx = LEFT;
  for (int i = 0; i < nlegend; i++) {  // packed in rows
    Label n = {.x = lx, .y = y, .cls = "note", .fill = "#111"};
    snprintf(n.text, sizeof n.text, "%d: %.170s", i + 1, legend[i]);
    double w = text_width(n.text, 12, false);
    if (lx > LEFT && lx + w > PW - RIGHT)
      lx = LEFT, y += ROW, n.x = lx, n.y = y;
    notes[nn++] = n;
    lx += w + 24;
  }
  if (nlegend)
    y += ROW + 5;
  int listed = 0;
  for (int i = 0; i < nk; i++) {
    const ProfKernel *k = ks[i];
    if (plotted(k))
      continue;
    if (!listed++) {
      notes[nn++] = (Label){.x = LEFT, .y = y, .cls = "note", .fill = "#555",
                            .text = "Not on the chart (no arithmetic or no traffic, or too fast to time):"};
      y += ROW;
    }
    if (listed > NOTES)
      continue;
    Label n = {.x = LEFT + 12, .y = y, .cls = "note", .fill = "#555"};
    offchart_text(k, r, n.text, sizeof n.text);
    notes[nn++] = n;
    y += ROW;
  }
  if (listed > NOTES) {
    Label n = {.x = LEFT + 12, .y = y, .cls = "note", .fill = "#555"};
    snprintf(n.text, sizeof n.text, "and %d more (tdslc bench --profile lists them all)", listed - NOTES);
    notes[nn++] = n;
    y += ROW;
  }
  char title[512];
  snprintf(title, sizeof title, "Roofline: %s (%s backend, %d thread%s), mean call %.4g ms", pr->p->name, pr->backend,
           pr->threads, pr->threads == 1 ? "" : "s", pr->mean_ms);
  char sub[512];
  snprintf(sub, sizeof sub, "peak %.1f GFLOP/s f32, %.1f f64; bandwidth %.1f GB/s (%s%s)", r->peak_f32, r->peak_f64,
           r->bandwidth, r->when[0] ? "measured " : "from TDSL_ROOFLINE", r->when);
  double wmax = fmax(LEFT + text_width(title, 16, true), LEFT + text_width(sub, 12, false));
  for (int i = 0; i < nn; i++)
    wmax = fmax(wmax, notes[i].x + text_width(notes[i].text, 12, false));
  int W = (int)fmax(PW, ceil(wmax + 12)), H = y + 6;

  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"12\">\n", W, H, W, H);
  fputs("<title>", f);
  xml_text(f, pr->p->name);
  fputs(": roofline</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", f);
  fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"16\" font-weight=\"bold\">", LEFT);
  xml_text(f, title);
  fprintf(f, "</text>\n<text x=\"%d\" y=\"46\" fill=\"#555\">", LEFT);
  xml_text(f, sub);
  fputs("</text>\n", f);
  // grid and ticks
  fputs("<g stroke=\"#ddd\" stroke-width=\"1\">\n", f);
  for (int e = (int)a.x0; e <= (int)a.x1; e++)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", px(&a, pow(10, e)), TOP, px(&a, pow(10, e)),
            PB);
  for (int e = (int)a.y0; e <= (int)a.y1; e++)
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LEFT, py(&a, pow(10, e)), PW - RIGHT,
            py(&a, pow(10, e)));
  fputs("</g>\n", f);
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", LEFT, TOP,
          PW - LEFT - RIGHT, PB - TOP);
  char lab[32];
  for (int e = (int)a.x0; e <= (int)a.x1; e++) {
    tick_label(lab, sizeof lab, e);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" class=\"tick\">%s</text>\n", px(&a, pow(10, e)),
            PB + 18, lab);
  }
  for (int e = (int)a.y0; e <= (int)a.y1; e++) {
    tick_label(lab, sizeof lab, e);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"ytick\">%s</text>\n", LEFT - 6,
            py(&a, pow(10, e)) + 4, lab);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arithmetic intensity (FLOP / byte)</text>\n",
          (LEFT + PW - RIGHT) / 2, PB + 40);
  fprintf(f, "<text x=\"24\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 24 %d)\">performance "
          "(GFLOP/s)</text>\n", (TOP + PB) / 2, (TOP + PB) / 2);
  // the roofs, clipped to the plot
  fprintf(f, "<clipPath id=\"plot\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/></clipPath>\n", LEFT, TOP,
          PW - LEFT - RIGHT, PB - TOP);
  fputs("<g clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2.5\">\n", f);
  fprintf(f, "<polyline stroke=\"#1f4e99\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n", px(&a, xl),
          py(&a, r->bandwidth * xl), px(&a, ridge), py(&a, r->peak_f32), px(&a, xh), py(&a, r->peak_f32));
  fprintf(f, "<polyline stroke=\"#1f4e99\" stroke-dasharray=\"6 4\" stroke-width=\"1.5\" points=\"%.1f,%.1f "
          "%.1f,%.1f\"/>\n", px(&a, ridge64), py(&a, r->peak_f64), px(&a, xh), py(&a, r->peak_f64));
  fputs("</g>\n", f);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%d\" stroke=\"#1f4e99\" stroke-dasharray=\"2 3\"/>\n",
          px(&a, ridge), py(&a, r->peak_f32), px(&a, ridge), PB);
  // the kernels: the largest share first, so small dots are drawn over large ones
  fputs("<g stroke=\"#333\" stroke-width=\"1\">\n", f);
  for (int i = 0; i < nk; i++) {
    const ProfKernel *k = ks[i];
    if (!plotted(k))
      continue;
    double x = px(&a, k->intensity), y = py(&a, fmax(k->gflops, yl)), rad = radius(k);
    const char *fill = k->share >= 0.2 ? "#d62728" : k->share >= 0.05 ? "#f2c12e" : "#2ca02c";
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.75\"><title>", x, y, rad, fill);
    const LKernel *lk = k->k;
    xml_text(f, lk->name);
    fputs(" (lines", f);
    for (int j = 0; j < lk->lines.len; j++)
      fprintf(f, "%s%d", j ? "," : " ", lk->lines.data[j]);
    fputs("): ", f);
    for (int j = 0; j < lk->ops.len; j++) {
      fputs(j ? " " : "", f);
      xml_text(f, lk->ops.data[j]);
    }
    fputs("; ", f);
    xml_text(f, k->schedule);
    fprintf(f, "\n%.4g ms (%.1f%%), %.3g GFLOP/s, %.3g GB/s, %.3g FLOP/B, %.1f%% of the roofline</title></circle>\n",
            k->ms, 100 * k->share, k->gflops, k->gbps, k->intensity, 100 * k->roofline);
  }
  fputs("</g>\n<g stroke=\"#888\" stroke-width=\"0.8\">\n", f);
  for (int i = 0; i < nlead; i++)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", leaders[i].x0, leaders[i].y0, leaders[i].x1,
            leaders[i].y1);
  fputs("</g>\n", f);
  // the labels over everything
  for (int i = 0; i < nl; i++)
    put_label(f, &labels[i]);
  for (int i = 0; i < nn; i++) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"note\" fill=\"%s\">", notes[i].x, notes[i].y, notes[i].fill);
    xml_text(f, notes[i].text);
    fputs("</text>\n", f);
  }
  fputs("</svg>\n", f);
  free(ks);
  free(labels);
  free(leaders);
  free(notes);
  free(dots.b);
  free(taken.b);
}

int roofline_svg(const Profile *pr, const char *path) {
  OutFile of;
  if (!out_open(&of, path))
    return EXIT_USAGE;
  write_chart(pr, of.fp);
  return out_close(&of, true) ? 0 : EXIT_USAGE;
}
