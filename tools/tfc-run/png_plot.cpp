#include "png_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tfc/runtime/file.hpp"

namespace tfc::run {
namespace {

void put32(std::vector<uint8_t>* out, uint32_t value) {
  out->push_back(static_cast<uint8_t>(value >> 24));
  out->push_back(static_cast<uint8_t>(value >> 16));
  out->push_back(static_cast<uint8_t>(value >> 8));
  out->push_back(static_cast<uint8_t>(value));
}

void chunk(std::vector<uint8_t>* out, const char type[4], const std::vector<uint8_t>& data) {
  put32(out, static_cast<uint32_t>(data.size()));
  size_t start = out->size();
  out->insert(out->end(), type, type + 4);
  out->insert(out->end(), data.begin(), data.end());
  put32(out, crc32(out->data() + start, out->size() - start));
}

// Glyphs of the 3x5 font: five rows of three bits, most significant bit on the left.
struct Glyph {
  char c;
  uint8_t rows[5];
};
constexpr Glyph kFont[] = {
    {'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}}, {'2', {7, 1, 7, 4, 7}},
    {'3', {7, 1, 7, 1, 7}}, {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}},
    {'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 1, 1}}, {'8', {7, 5, 7, 5, 7}},
    {'9', {7, 5, 7, 1, 7}}, {'.', {0, 0, 0, 0, 2}}, {'-', {0, 0, 7, 0, 0}},
    {'+', {0, 2, 7, 2, 0}}, {'e', {0, 7, 7, 4, 7}}, {'k', {4, 5, 6, 5, 5}},
    {'M', {5, 7, 7, 5, 5}}, {' ', {0, 0, 0, 0, 0}},
};

// A tick step of 1, 2 or 5 times a power of ten giving about |target| ticks over |span|.
double niceStep(double span, int target) {
  double raw = span / std::max(1, target);
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  double fraction = raw / power;
  double nice = fraction <= 1.0 ? 1.0 : fraction <= 2.0 ? 2.0 : fraction <= 5.0 ? 5.0 : 10.0;
  return nice * power;
}

std::string tickLabel(double value, double step) {
  char buffer[32];
  if (std::fabs(value) < step * 1e-6) value = 0.0;
  if (value != 0.0 && (std::fabs(value) >= 1e5 || std::fabs(value) < 1e-3)) {
    std::snprintf(buffer, sizeof(buffer), "%.1e", value);
  } else {
    int decimals = step >= 1.0 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    std::snprintf(buffer, sizeof(buffer), "%.*f", std::min(decimals, 6), value);
  }
  return buffer;
}

}  // namespace

uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc) {
  static uint32_t table[256];
  static bool ready = [] {
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[n] = c;
    }
    return true;
  }();
  (void)ready;
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t adler32(const uint8_t* data, size_t size, uint32_t adler) {
  uint32_t a = adler & 0xFFFF, b = adler >> 16;
  for (size_t i = 0; i < size; ++i) {
    a = (a + data[i]) % 65521u;
    b = (b + a) % 65521u;
  }
  return (b << 16) | a;
}

std::vector<uint8_t> encodePng(int width, int height, const std::vector<uint8_t>& rgb) {
  // Raw scanlines: filter type 0 (None) then the row's bytes.
  size_t rowBytes = static_cast<size_t>(width) * 3;
  std::vector<uint8_t> raw;
  raw.reserve((rowBytes + 1) * static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    const uint8_t* row = rgb.data() + static_cast<size_t>(y) * rowBytes;
    raw.insert(raw.end(), row, row + rowBytes);
  }
  // zlib stream: CMF/FLG (deflate, 32K window, no dictionary, check bits), stored blocks of
  // at most 65535 bytes (BFINAL on the last), then the Adler-32 of the raw data.
  std::vector<uint8_t> zlib = {0x78, 0x01};
  size_t offset = 0;
  do {
    size_t length = std::min<size_t>(65535, raw.size() - offset);
    bool last = offset + length == raw.size();
    zlib.push_back(last ? 1 : 0);  // BFINAL, BTYPE = 00 (stored)
    zlib.push_back(static_cast<uint8_t>(length));
    zlib.push_back(static_cast<uint8_t>(length >> 8));
    zlib.push_back(static_cast<uint8_t>(~length));
    zlib.push_back(static_cast<uint8_t>(~length >> 8));
    zlib.insert(zlib.end(), raw.begin() + static_cast<std::ptrdiff_t>(offset),
                raw.begin() + static_cast<std::ptrdiff_t>(offset + length));
    offset += length;
  } while (offset < raw.size());
  put32(&zlib, adler32(raw.data(), raw.size()));

  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> header;
  put32(&header, static_cast<uint32_t>(width));
  put32(&header, static_cast<uint32_t>(height));
  header.insert(header.end(), {8, 2, 0, 0, 0});  // 8-bit, truecolor, deflate, adaptive, no interlace
  chunk(&png, "IHDR", header);
  chunk(&png, "IDAT", zlib);
  chunk(&png, "IEND", {});
  return png;
}


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
  return text.empty() ? 0 : static_cast<int>(text.size()) * 4 * scale - scale;
}

int Canvas::text(int x, int y, const std::string& text, RGB color, int scale) {
  int cursor = x;
  for (char c : text) {
    for (const Glyph& glyph : kFont) {
      if (glyph.c != c) continue;
      for (int row = 0; row < 5; ++row) {
        for (int col = 0; col < 3; ++col) {
          if (glyph.rows[row] & (4 >> col)) {
            fillRect(cursor + col * scale, y + row * scale, cursor + col * scale + scale - 1,
                     y + row * scale + scale - 1, color);
          }
        }
      }
    }
    cursor += 4 * scale;
  }
  return cursor - x;
}

Status writePlotPng(const std::string& path, const std::vector<PlotSeries>& series, int width,
                    int height) {
  const RGB kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225};
  Canvas canvas(width, height, kWhite);
  double xMin = INFINITY, xMax = -INFINITY, yMin = INFINITY, yMax = -INFINITY;
  for (const PlotSeries& s : series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      xMin = std::min(xMin, s.x[i]);
      xMax = std::max(xMax, s.x[i]);
      yMin = std::min(yMin, s.y[i]);
      yMax = std::max(yMax, s.y[i]);
    }
  }
  if (!std::isfinite(xMin)) {  // nothing to draw: empty axes
    xMin = 0, xMax = 1, yMin = 0, yMax = 1;
  }
  if (xMax <= xMin) xMax = xMin + 1;
  if (yMax <= yMin) {
    yMax += 0.5;
    yMin -= 0.5;
  }
  double pad = (yMax - yMin) * 0.05;
  yMin -= pad;
  yMax += pad;

  const int left = 70, right = 20, top = 20, bottom = 40;
  int plotW = width - left - right, plotH = height - top - bottom;
  auto px = [&](double x) { return left + (x - xMin) / (xMax - xMin) * plotW; };
  auto py = [&](double y) { return top + (yMax - y) / (yMax - yMin) * plotH; };

  // Grid and tick labels.
  double yStep = niceStep(yMax - yMin, 6);
  for (double y = std::ceil(yMin / yStep) * yStep; y <= yMax + yStep * 1e-9; y += yStep) {
    int row = static_cast<int>(std::lround(py(y)));
    canvas.line(left, row, left + plotW, row, kGrid);
    std::string label = tickLabel(y, yStep);
    canvas.text(left - 8 - Canvas::textWidth(label), row - 5, label, kBlack);
  }
  double xStep = niceStep(xMax - xMin, 8);
  for (double x = std::ceil(xMin / xStep) * xStep; x <= xMax + xStep * 1e-9; x += xStep) {
    int col = static_cast<int>(std::lround(px(x)));
    canvas.line(col, top, col, top + plotH, kGrid);
    std::string label = tickLabel(x, xStep);
    canvas.text(col - Canvas::textWidth(label) / 2, top + plotH + 10, label, kBlack);
  }
  // Axes.
  canvas.line(left, top, left, top + plotH, kBlack, 2);
  canvas.line(left, top + plotH, left + plotW, top + plotH, kBlack, 2);

  for (const PlotSeries& s : series) {
    bool havePrevious = false;
    double lastX = 0, lastY = 0;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        havePrevious = false;
        continue;
      }
      double x = px(s.x[i]), y = py(s.y[i]);
      if (havePrevious) canvas.line(lastX, lastY, x, y, s.color, s.thickness);
      if (s.markers) {
        int cx = static_cast<int>(std::lround(x)), cy = static_cast<int>(std::lround(y));
        canvas.fillRect(cx - 2, cy - 2, cx + 2, cy + 2, s.color);
      }
      lastX = x, lastY = y, havePrevious = true;
    }
  }
  std::vector<uint8_t> png = encodePng(width, height, canvas.pixels());
  return writeFileAtomically(path, png.data(), png.size());
}

}  // namespace tfc::run
