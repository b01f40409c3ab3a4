#include "png_plot.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <new>

#include <fmt/format.h>

#include "plot_font.hpp"
#include "tfc/runtime/file.hpp"

namespace tfc::run {
namespace {

// ---- libpng ---------------------------------------------------------------------------

struct PngOutput {
  std::vector<uint8_t>* bytes;
  char error[256];
};

void onPngWrite(png_structp png, png_bytep data, png_size_t size) {
  auto* output = static_cast<PngOutput*>(png_get_io_ptr(png));
  try {
    output->bytes->insert(output->bytes->end(), data, data + size);
  } catch (const std::bad_alloc&) {  // no C++ exception may cross libpng's C frames
    png_error(png, "out of memory");
  }
}

void onPngFlush(png_structp) {}

void onPngError(png_structp png, png_const_charp message) {
  auto* output = static_cast<PngOutput*>(png_get_error_ptr(png));
  // snprintf, not fmt: this runs between libpng's C frames just before a longjmp, where no
  // C++ exception may be thrown; it is only a bounded copy of libpng's message.
  std::snprintf(output->error, sizeof(output->error), "%s", message);
  longjmp(png_jmpbuf(png), 1);
}

void onPngWarning(png_structp, png_const_charp) {}

// The libpng calls, under its setjmp: libpng reports errors by longjmp back here, so this
// frame holds no C++ object whose destructor a jump could skip.
bool writePngRows(png_structp png, png_infop info, int width, int height, png_bytepp rows,
                  const char* title) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  // No row filters, so that the few-line zlib decoders of train_test.cpp and
  // test/e2e/train/check_train.py read the file. Adaptive filters would halve it (an
  // 800x500 plot: 13 KB unfiltered, 7 KB filtered); both are small for a plot.
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
  png_text text[2] = {};
  text[0].compression = PNG_TEXT_COMPRESSION_NONE;
  text[0].key = const_cast<char*>("Software");
  text[0].text = const_cast<char*>("tfc");  // the project: tfc-run and the examples
  text[1].compression = PNG_TEXT_COMPRESSION_NONE;
  text[1].key = const_cast<char*>("Title");
  text[1].text = const_cast<char*>(title);
  png_set_text(png, info, text, title[0] != '\0' ? 2 : 1);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

// ---- Axes -----------------------------------------------------------------------------

// A tick step of 1, 2 or 5 times a power of ten giving about |target| ticks over |span|.
double niceStep(double span, int target) {
  double raw = span / std::max(1, target);
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  double fraction = raw / power;
  double nice = fraction <= 1.0 ? 1.0 : fraction <= 2.0 ? 2.0 : fraction <= 5.0 ? 5.0 : 10.0;
  return nice * power;
}

std::string tickLabel(double value, double step) {
  if (std::fabs(value) < step * 1e-6) value = 0.0;
  if (value != 0.0 && (std::fabs(value) >= 1e5 || std::fabs(value) < 1e-3)) {
    return fmt::format("{:.1e}", value);
  }
  int decimals = step >= 1.0 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  // fmt refuses a negative precision (printf took it as 6); no step < 1 gives one.
  return fmt::format("{:.{}f}", value, std::clamp(decimals, 0, 6));
}

struct Tick {
  double value;
  std::string label;
};

// Ticks at multiples of a nice step in [lo, hi], about |target| of them.
std::vector<Tick> ticks(double lo, double hi, int target) {
  double step = niceStep(hi - lo, target);
  std::vector<Tick> result;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    result.push_back({v, tickLabel(v, step)});
  }
  return result;
}

int widest(const std::vector<Tick>& ticks, int scale) {
  int width = 0;
  for (const Tick& tick : ticks) width = std::max(width, Canvas::textWidth(tick.label, scale));
  return width;
}

// |text| shortened in the middle ("abc...xyz") to at most |maxWidth| pixels.
std::string fitText(const std::string& text, int maxWidth, int scale) {
  if (Canvas::textWidth(text, scale) <= maxWidth) return text;
  size_t keep = static_cast<size_t>(std::max(0, maxWidth / (kGlyphAdvance * scale) - 3));
  return text.substr(0, keep - keep / 2) + "..." + text.substr(text.size() - keep / 2);
}

}  // namespace

// ---- Canvas ---------------------------------------------------------------------------

Canvas::Canvas(int width, int height, RGB background)
    : width_(width), height_(height), pixels_(static_cast<size_t>(width) * height * 3) {
  for (size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = background.r;
    pixels_[i + 1] = background.g;
    pixels_[i + 2] = background.b;
  }
}

void Canvas::set(int x, int y, RGB color) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  uint8_t* p = &pixels_[(static_cast<size_t>(y) * width_ + x) * 3];
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
}

void Canvas::fillRect(int x0, int y0, int x1, int y1, RGB color) {
  for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y) {
    for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) set(x, y, color);
  }
}

void Canvas::line(double fx0, double fy0, double fx1, double fy1, RGB color, int thickness) {
  auto clampCoord = [](double v) { return static_cast<int>(std::lround(std::clamp(v, -1e6, 1e6))); };
  int x0 = clampCoord(fx0), y0 = clampCoord(fy0), x1 = clampCoord(fx1), y1 = clampCoord(fy1);
  int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
  int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
  int error = dx + dy;
  int before = (thickness - 1) / 2, after = thickness / 2;
  for (;;) {
    fillRect(x0 - before, y0 - before, x0 + after, y0 + after, color);
    if (x0 == x1 && y0 == y1) break;
    int twice = 2 * error;
    if (twice >= dy) {
      error += dy;
      x0 += sx;
    }
    if (twice <= dx) {
      error += dx;
      y0 += sy;
    }
  }
}

int Canvas::textWidth(const std::string& text, int scale) {
  return text.empty() ? 0 : (static_cast<int>(text.size()) * kGlyphAdvance - 1) * scale;
}

int Canvas::textHeight(int scale) { return kGlyphHeight * scale; }

int Canvas::text(int x, int y, const std::string& text, RGB color, int scale) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char* const* rows = glyphRows(text[i]);
    int left = x + static_cast<int>(i) * kGlyphAdvance * scale;
    for (int r = 0; r < kGlyphHeight; ++r) {
      for (int c = 0; c < kGlyphWidth; ++c) {
        if (rows[r][c] != '#') continue;
        fillRect(left + c * scale, y + r * scale, left + (c + 1) * scale - 1,
                 y + (r + 1) * scale - 1, color);
      }
    }
  }
  return textWidth(text, scale);
}

int Canvas::textUp(int x, int y, const std::string& text, RGB color, int scale) {
  // Glyph column c runs upwards from the baseline corner, glyph row r to the right.
  for (size_t i = 0; i < text.size(); ++i) {
    const char* const* rows = glyphRows(text[i]);
    int bottom = y - static_cast<int>(i) * kGlyphAdvance * scale;
    for (int r = 0; r < kGlyphHeight; ++r) {
      for (int c = 0; c < kGlyphWidth; ++c) {
        if (rows[r][c] != '#') continue;
        fillRect(x + r * scale, bottom - (c + 1) * scale + 1, x + (r + 1) * scale - 1,
                 bottom - c * scale, color);
      }
    }
  }
  return textWidth(text, scale);
}

// ---- PNG ------------------------------------------------------------------------------

StatusOr<std::vector<uint8_t>> encodePng(const Canvas& canvas, const std::string& title) {
  std::vector<uint8_t> bytes;
  PngOutput output{&bytes, "libpng failed"};
  std::vector<png_bytep> rows(static_cast<size_t>(canvas.height()));
  auto* pixels = const_cast<uint8_t*>(canvas.pixels().data());  // libpng only reads them
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = pixels + y * canvas.width() * 3;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &output, onPngError,
                                            onPngWarning);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return Status(TFC_OUT_OF_MEMORY, "cannot encode the PNG: libpng is out of memory");
  }
  png_set_write_fn(png, &output, onPngWrite, onPngFlush);
  bool written = writePngRows(png, info, canvas.width(), canvas.height(), rows.data(),
                              title.c_str());
  png_destroy_write_struct(&png, &info);
  if (!written) return Status(TFC_INTERNAL, std::string("cannot encode the PNG: ") + output.error);
  return bytes;
}

// ---- The plot -------------------------------------------------------------------------

namespace {

const RGB kPaper{255, 255, 255}, kInk{0, 0, 0}, kGrid{225, 225, 225};

// The plot's data box: x over the finite points' range, y over theirs padded by 5%.
struct Box {
  double xMin, xMax, yMin, yMax;
};

Box dataBox(const std::vector<PlotSeries>& series) {
  Box box{INFINITY, -INFINITY, INFINITY, -INFINITY};
  for (const PlotSeries& one : series) {
    for (size_t i = 0; i < one.x.size() && i < one.y.size(); ++i) {
      if (!std::isfinite(one.x[i]) || !std::isfinite(one.y[i])) continue;
      box.xMin = std::min(box.xMin, one.x[i]);
      box.xMax = std::max(box.xMax, one.x[i]);
      box.yMin = std::min(box.yMin, one.y[i]);
      box.yMax = std::max(box.yMax, one.y[i]);
    }
  }
  if (!std::isfinite(box.xMin)) box = {0, 1, 0, 1};  // nothing to draw: empty axes
  if (box.xMax <= box.xMin) box.xMax = box.xMin + 1;
  if (box.yMax <= box.yMin) box.yMax += 0.5, box.yMin -= 0.5;
  double margin = (box.yMax - box.yMin) * 0.05;
  box.yMin -= margin;
  box.yMax += margin;
  return box;
}

// The legend: the named series' entries (swatch, name) in rows as wide as the image allows,
// each row centred.
struct LegendEntry {
  const PlotSeries* series;
  int x, y;
};

std::vector<LegendEntry> layOutLegend(const std::vector<PlotSeries>& series, int top, int width,
                                      int s, int* height) {
  const int rowH = Canvas::textHeight(s) + s, maxW = width - 8 * s;
  std::vector<LegendEntry> entries;
  std::vector<int> rowWidths;
  for (const PlotSeries& one : series) {
    if (one.name.empty()) continue;
    int w = 14 * s + Canvas::textWidth(one.name, s);  // swatch, gap, name
    if (rowWidths.empty() || rowWidths.back() + 12 * s + w > maxW) {
      rowWidths.push_back(w);
      entries.push_back({&one, 0, top + static_cast<int>(rowWidths.size() - 1) * rowH});
    } else {
      entries.push_back({&one, rowWidths.back() + 12 * s, entries.back().y});
      rowWidths.back() += 12 * s + w;
    }
  }
  for (LegendEntry& entry : entries) {
    entry.x += (width - rowWidths[static_cast<size_t>((entry.y - top) / rowH)]) / 2;
  }
  *height = static_cast<int>(rowWidths.size()) * rowH;
  return entries;
}

void drawLegend(Canvas* canvas, const std::vector<LegendEntry>& entries, int s) {
  for (const LegendEntry& entry : entries) {
    const PlotSeries& one = *entry.series;
    int mid = entry.y + kGlyphAscent * s / 2, swatchEnd = entry.x + 10 * s - 1;
    if (one.lines) canvas->line(entry.x, mid, swatchEnd, mid, one.color, std::max(one.thickness, s));
    if (one.markers) {
      int cx = entry.x + 5 * s;
      canvas->fillRect(cx - s, mid - s, cx + s, mid + s, one.color);
    }
    canvas->text(swatchEnd + 1 + 4 * s, entry.y, one.name, kInk, s);
  }
}

// The axes' place on the canvas: data (x, y) to pixels.
struct Axes {
  Box box;
  int left, top, width, height;
  double px(double x) const { return left + (x - box.xMin) / (box.xMax - box.xMin) * width; }
  double py(double y) const { return top + (box.yMax - y) / (box.yMax - box.yMin) * height; }
  int bottom() const { return top + height; }
};

void drawCurves(Canvas* canvas, const std::vector<PlotSeries>& series, const Axes& axes, int s) {
  for (const PlotSeries& one : series) {
    bool havePrevious = false;
    double lastX = 0, lastY = 0;
    for (size_t i = 0; i < one.x.size() && i < one.y.size(); ++i) {
      if (!std::isfinite(one.x[i]) || !std::isfinite(one.y[i])) {
        havePrevious = false;
        continue;
      }
      double x = axes.px(one.x[i]), y = axes.py(one.y[i]);
      if (havePrevious && one.lines) canvas->line(lastX, lastY, x, y, one.color, one.thickness);
      if (one.markers) {
        int cx = static_cast<int>(std::lround(x)), cy = static_cast<int>(std::lround(y));
        canvas->fillRect(cx - s, cy - s, cx + s, cy + s, one.color);
      }
      lastX = x, lastY = y, havePrevious = true;
    }
  }
}

}  // namespace

Status writePlotPng(const std::string& path, const std::vector<PlotSeries>& series,
                    const PlotText& words, int width, int height) {
  Canvas canvas(width, height, kPaper);
  // Text and strokes scale with the image: 2 for the default 800x500.
  const int s = std::clamp(std::min(width / 400, height / 250), 1, 4);
  const int pad = 4 * s, lineH = Canvas::textHeight(s), tickLen = 2 * s;

  // Bands from the top: the title (one size up where it fits), the legend, the axes.
  int top = pad;
  const int titleScale = Canvas::textWidth(words.title, s + 1) <= width - 2 * pad ? s + 1 : s;
  const std::string title = fitText(words.title, width - 2 * pad, titleScale);
  const int titleY = top;
  if (!title.empty()) top += Canvas::textHeight(titleScale) + pad;
  int legendH = 0;
  std::vector<LegendEntry> legend = layOutLegend(series, top, width, s, &legendH);
  if (legendH > 0) top += legendH + pad;

  // The y ticks fix the left margin, the plot's width the x ticks.
  Axes axes{dataBox(series), 0, top + lineH / 2, 1, 1};  // room for the top tick's label
  const int bottomBand = tickLen + s + lineH + (words.xLabel.empty() ? 0 : lineH) + pad;
  axes.height = std::max(1, height - axes.top - bottomBand);
  std::vector<Tick> yTicks =
      ticks(axes.box.yMin, axes.box.yMax, std::clamp(axes.height / (3 * lineH), 2, 6));
  axes.left = pad + (words.yLabel.empty() ? 0 : lineH + pad) + widest(yTicks, s) + s + tickLen;
  std::vector<Tick> xTicks;
  for (int target = 8; target >= 2; --target) {
    xTicks = ticks(axes.box.xMin, axes.box.xMax, target);
    int labelW = widest(xTicks, s);
    axes.width = std::max(1, width - axes.left - labelW / 2 - pad);
    if (static_cast<int>(xTicks.size()) * (labelW + 4 * kGlyphAdvance * s) <= axes.width) break;
  }

  // Grid, then the curves over it, then the axes and the words.
  for (const Tick& tick : yTicks) {
    int row = static_cast<int>(std::lround(axes.py(tick.value)));
    canvas.line(axes.left, row, axes.left + axes.width, row, kGrid);
  }
  for (const Tick& tick : xTicks) {
    int col = static_cast<int>(std::lround(axes.px(tick.value)));
    canvas.line(col, axes.top, col, axes.bottom(), kGrid);
  }
  drawCurves(&canvas, series, axes, s);
  const int left = axes.left, bottom = axes.bottom();
  canvas.fillRect(left - s + 1, axes.top, left, bottom, kInk);
  canvas.fillRect(left - s + 1, bottom, left + axes.width, bottom + s - 1, kInk);
  for (const Tick& tick : yTicks) {
    int row = static_cast<int>(std::lround(axes.py(tick.value)));
    canvas.fillRect(left - s - tickLen + 1, row, left - s, row + s - 1, kInk);
    canvas.text(left - 2 * s - tickLen - Canvas::textWidth(tick.label, s),
                row - kGlyphAscent * s / 2, tick.label, kInk, s);
  }
  const int labelsY = bottom + 2 * s + tickLen;  // the x tick values' line
  for (const Tick& tick : xTicks) {
    int col = static_cast<int>(std::lround(axes.px(tick.value)));
    canvas.fillRect(col, bottom + s, col + s - 1, bottom + s + tickLen - 1, kInk);
    canvas.text(col - Canvas::textWidth(tick.label, s) / 2, labelsY, tick.label, kInk, s);
  }
  canvas.text(left + (axes.width - Canvas::textWidth(words.xLabel, s)) / 2, labelsY + lineH,
              words.xLabel, kInk, s);
  canvas.textUp(pad, axes.top + (axes.height + Canvas::textWidth(words.yLabel, s)) / 2,
                words.yLabel, kInk, s);
  canvas.text((width - Canvas::textWidth(title, titleScale)) / 2, titleY, title, kInk, titleScale);
  drawLegend(&canvas, legend, s);

  auto png = encodePng(canvas, words.title);
  if (!png.ok()) return std::move(png).takeStatus();
  return writeFileAtomically(path, png->data(), png->size());
}

}  // namespace tfc::run
