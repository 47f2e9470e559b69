// driver/roofline_svg.c: `tdslc bench --plot FILE.svg`: the roofline chart of a profile,
// drawn as Intel Advisor and Nsight Compute draw theirs. Log-log axes: arithmetic
// intensity (FLOP per byte) across, GFLOP/s up; the memory roof (bandwidth x intensity)
// rises to the ridge point and the f32 peak runs flat from there (the f64 peak dashed
// below it). Each kernel is a dot at (its intensity, its GFLOP/s), its area its share of
// the call, red for a large share (at least 20%), yellow for a medium one (5%), green
// for the rest; the largest shares labelled with name, ops and share, each with a tooltip (<title>)
// giving its lines, schedule and rates. Kernels without arithmetic or without traffic
// have no place on log axes: a note under the chart lists them with their GB/s.
// The file is plain SVG 1.1 written directly (no library), whole or not at all; every
// text is XML-escaped.
#include "driver/driver.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { W = 960, H = 680, LEFT = 90, RIGHT = 40, TOP = 60, BOTTOM = 150, LABELS = 12 };

typedef struct Axes {
  double x0, x1, y0, y1;  // log10 of the ranges shown
} Axes;

static double px(const Axes *a, double x) { return LEFT + (log10(x) - a->x0) / (a->x1 - a->x0) * (W - LEFT - RIGHT); }
static double py(const Axes *a, double y) { return H - BOTTOM - (log10(y) - a->y0) / (a->y1 - a->y0) * (H - TOP - BOTTOM); }

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

// The decades shown: every plotted kernel, the ridge point, and the peak with room above.
static Axes axes_for(const Profile *pr) {
  const Roofline *r = &pr->roof;
  double ridge = r->peak_f32 / r->bandwidth;
  double xlo = fmin(0.01, ridge / 100), xhi = fmax(100, ridge * 10), ylo = r->peak_f32 / 1e4, yhi = r->peak_f32 * 3;
  for (int i = 0; i < pr->nk; i++) {
    const ProfKernel *k = &pr->ks[i];
    if (!plotted(k))
      continue;
    xlo = fmin(xlo, k->intensity / 2), xhi = fmax(xhi, k->intensity * 2);
    ylo = fmin(ylo, k->gflops / 2), yhi = fmax(yhi, k->gflops * 2);
  }
  Axes a = {floor(log10(xlo)), ceil(log10(xhi)), floor(log10(ylo)), ceil(log10(yhi))};
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

static int by_share(const void *a, const void *b) {
  const ProfKernel *x = *(const ProfKernel *const *)a, *y = *(const ProfKernel *const *)b;
  return x->share < y->share ? 1 : x->share > y->share ? -1 : x->index - y->index;
}

static void write_chart(const Profile *pr, FILE *f) {
  const Roofline *r = &pr->roof;
  Axes a = axes_for(pr);
  double xl = pow(10, a.x0), xh = pow(10, a.x1), yl = pow(10, a.y0);
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
  fputs("<title>", f);
  xml_text(f, pr->p->name);
  fputs(": roofline</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", f);
  fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"16\" font-weight=\"bold\">Roofline: ", LEFT);
  xml_text(f, pr->p->name);
  fprintf(f, " (%s backend, %d thread%s), mean call %.4g ms</text>\n", pr->backend, pr->threads,
          pr->threads == 1 ? "" : "s", pr->mean_ms);
  fprintf(f, "<text x=\"%d\" y=\"46\" fill=\"#555\">peak %.1f GFLOP/s f32, %.1f f64; bandwidth %.1f GB/s (", LEFT,
          r->peak_f32, r->peak_f64, r->bandwidth);
  xml_text(f, r->when[0] ? "measured " : "from TDSL_ROOFLINE");
  xml_text(f, r->when);
  fputs(")</text>\n", f);
  // grid and ticks
  fputs("<g stroke=\"#ddd\" stroke-width=\"1\">\n", f);
  for (int e = (int)a.x0; e <= (int)a.x1; e++)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", px(&a, pow(10, e)), TOP, px(&a, pow(10, e)),
            H - BOTTOM);
  for (int e = (int)a.y0; e <= (int)a.y1; e++)
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LEFT, py(&a, pow(10, e)), W - RIGHT,
            py(&a, pow(10, e)));
  fputs("</g>\n", f);
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", LEFT, TOP,
          W - LEFT - RIGHT, H - TOP - BOTTOM);
  char lab[32];
  for (int e = (int)a.x0; e <= (int)a.x1; e++) {
    tick_label(lab, sizeof lab, e);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px(&a, pow(10, e)), H - BOTTOM + 18,
            lab);
  }
  for (int e = (int)a.y0; e <= (int)a.y1; e++) {
    tick_label(lab, sizeof lab, e);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", LEFT - 6, py(&a, pow(10, e)) + 4, lab);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arithmetic intensity (FLOP / byte)</text>\n",
          (LEFT + W - RIGHT) / 2, H - BOTTOM + 40);
  fprintf(f, "<text x=\"24\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 24 %d)\">performance "
          "(GFLOP/s)</text>\n", (TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2);
  // the roofs, clipped to the plot
  fprintf(f, "<clipPath id=\"plot\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/></clipPath>\n", LEFT, TOP,
          W - LEFT - RIGHT, H - TOP - BOTTOM);
  fputs("<g clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2.5\">\n", f);
  double ridge = r->peak_f32 / r->bandwidth, ridge64 = r->peak_f64 / r->bandwidth;
  fprintf(f, "<polyline stroke=\"#1f4e99\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n", px(&a, xl),
          py(&a, r->bandwidth * xl), px(&a, ridge), py(&a, r->peak_f32), px(&a, xh), py(&a, r->peak_f32));
  fprintf(f, "<polyline stroke=\"#1f4e99\" stroke-dasharray=\"6 4\" stroke-width=\"1.5\" points=\"%.1f,%.1f "
          "%.1f,%.1f\"/>\n", px(&a, ridge64), py(&a, r->peak_f64), px(&a, xh), py(&a, r->peak_f64));
  fputs("</g>\n", f);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#1f4e99\">f32 peak %.1f GFLOP/s</text>\n",
          (double)(W - RIGHT - 6), py(&a, r->peak_f32) - 6, r->peak_f32);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#1f4e99\">f64 peak %.1f</text>\n",
          (double)(W - RIGHT - 6), py(&a, r->peak_f64) + 16, r->peak_f64);
  // the bandwidth label along the slope, a decade left of the ridge (or at the left edge)
  double lx = fmax(xl * 2, ridge / 30), angle = atan2(py(&a, r->bandwidth * lx * 10) - py(&a, r->bandwidth * lx),
                                                         px(&a, lx * 10) - px(&a, lx)) * 57.29577951308232;  // degrees
  if (py(&a, r->bandwidth * lx) < H - BOTTOM)
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#1f4e99\" transform=\"rotate(%.1f %.1f %.1f)\">memory %.1f "
            "GB/s</text>\n", px(&a, lx), py(&a, r->bandwidth * lx) - 6, angle, px(&a, lx), py(&a, r->bandwidth * lx) - 6,
            r->bandwidth);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%d\" stroke=\"#1f4e99\" stroke-dasharray=\"2 3\"/>\n",
          px(&a, ridge), py(&a, r->peak_f32), px(&a, ridge), H - BOTTOM);
  fprintf(f, "<text x=\"%.1f\" y=\"%d\" fill=\"#1f4e99\" text-anchor=\"middle\">ridge %.3g</text>\n", px(&a, ridge),
          H - BOTTOM - 6, ridge);
  // the kernels: the largest share first, so small dots are drawn over large ones
  const ProfKernel **ks = malloc(sizeof *ks * (size_t)(pr->nk ? pr->nk : 1));
  int n = 0;
  for (int i = 0; i < pr->nk; i++)
    ks[n++] = &pr->ks[i];
  qsort(ks, (size_t)n, sizeof *ks, by_share);
  Box *boxes = malloc(sizeof *boxes * (size_t)(2 * n + 3));
  int nbox = 0;  // the roofs' labels first, so that no kernel's label covers them
  boxes[nbox++] = (Box){W - RIGHT - 6 - 6.5 * 24, py(&a, r->peak_f32) - 18, W - RIGHT, py(&a, r->peak_f32) - 2};
  boxes[nbox++] = (Box){W - RIGHT - 6 - 6.5 * 16, py(&a, r->peak_f64) + 4, W - RIGHT, py(&a, r->peak_f64) + 20};
  boxes[nbox++] = (Box){px(&a, ridge) - 40, H - BOTTOM - 18, px(&a, ridge) + 40, H - BOTTOM};
  fputs("<g stroke=\"#333\" stroke-width=\"1\">\n", f);
  for (int i = 0; i < n; i++) {
    const ProfKernel *k = ks[i];
    if (!plotted(k))
      continue;
    double x = px(&a, k->intensity), y = py(&a, fmax(k->gflops, yl)), rad = 3 + 22 * sqrt(fmax(k->share, 0));
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
    boxes[nbox++] = (Box){x - rad, y - rad, x + rad, y + rad};
  }
  // labels for the largest shares (at most LABELS, at least 1% each): beside the dot, or a
  // few lines above or below it with a leader line, inside the plot and over no earlier
  // label or dot; a kernel with no such place keeps its tooltip only
  fputs("</g>\n<g fill=\"#111\">\n", f);
  int labelled = 0;
  for (int i = 0; i < n && labelled < LABELS; i++) {
    const ProfKernel *k = ks[i];
    if (!plotted(k) || k->share < 0.01)
      continue;
    const LKernel *lk = k->k;
    char text[128];
    int len = snprintf(text, sizeof text, "%s", lk->name);
    for (int j = 0; j < lk->ops.len && j < 3; j++)
      len += snprintf(text + len, sizeof text - (size_t)len, " %.20s", lk->ops.data[j]);
    snprintf(text + len, sizeof text - (size_t)len, "%s %.0f%%", lk->ops.len > 3 ? " …" : "", 100 * k->share);
    double cx = px(&a, k->intensity), cy = py(&a, fmax(k->gflops, yl)), rad = 3 + 22 * sqrt(fmax(k->share, 0));
    double w = 6.5 * (double)strlen(text);
    bool placed = false;
    Box b = {0};
    for (int tries = 0; tries < 14 && !placed; tries++) {
      double dy = (tries / 2) * 14.0 * (tries % 2 ? -1 : 1), x = tries % 4 < 2 ? cx + rad + 4 : cx - rad - 4 - w;
      b = (Box){x, cy + 4 + dy - 11, x + w, cy + 4 + dy + 2};
      placed = b.x0 >= LEFT && b.x1 <= W - RIGHT && b.y0 >= TOP && b.y1 <= H - BOTTOM;
      for (int j = 0; j < nbox && placed; j++)
        placed = !overlaps(&b, &boxes[j]);
    }
    if (!placed)
      continue;
    if (fabs((b.y0 + b.y1) / 2 - cy) > rad)
      fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-width=\"0.8\"/>\n", cx,
              cy, b.x0 < cx ? b.x1 : b.x0, (b.y0 + b.y1) / 2);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", b.x0, b.y1 - 2);
    xml_text(f, text);
    fputs("</text>\n", f);
    boxes[nbox++] = b;
    labelled++;
  }
  fputs("</g>\n", f);
  fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">A dot per kernel, its area its share of the call (red: "
          "20%% or more, yellow: 5%% or more); the largest labelled; hover for lines, schedule, rates.</text>\n", LEFT,
          H - BOTTOM + 64);
  // kernels that have no place on log axes
  int y = H - BOTTOM + 84, listed = 0;
  for (int i = 0; i < n; i++) {
    const ProfKernel *k = ks[i];
    if (plotted(k))
      continue;
    if (!listed++) {
      fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">Not on the chart (no arithmetic or no traffic, or too "
              "fast to time):</text>\n", LEFT, y);
      y += 15;
    }
    if (listed > 3)
      continue;
    const LKernel *lk = k->k;
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">", LEFT + 12, y);
    xml_text(f, lk->name);
    fputs(" ", f);
    for (int j = 0; j < lk->ops.len && j < 4; j++) {
      fputs(j ? " " : "", f);
      xml_text(f, lk->ops.data[j]);
    }
    fprintf(f, ": %.4g ms (%.1f%%), %.3g GB/s, %.1f%% of the bandwidth</text>\n", k->ms, 100 * k->share, k->gbps,
            100 * k->gbps / r->bandwidth);
    y += 15;
  }
  if (listed > 3)
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">and %d more (tdslc bench --profile lists them all)</text>\n",
            LEFT + 12, y, listed - 3);
  fputs("</svg>\n", f);
  free(ks);
  free(boxes);
}

int roofline_svg(const Profile *pr, const char *path) {
  OutFile of;
  if (!out_open(&of, path))
    return EXIT_USAGE;
  write_chart(pr, of.fp);
  return out_close(&of, true) ? 0 : EXIT_USAGE;
}
