// A tiny PNG writer (RGB, 8 bits per channel, zlib with stored deflate blocks, CRC-32 and
// Adler-32 computed here) and a loss-curve plot drawn on it, for `tfc-run train --plot`.
// No dependencies: the image is an RGB canvas with lines and a 3x5 digit font.
#ifndef TFC_TOOLS_TFC_RUN_PNG_PLOT_HPP_
#define TFC_TOOLS_TFC_RUN_PNG_PLOT_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tfc/runtime/status.hpp"

namespace tfc::run {

uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0);
uint32_t adler32(const uint8_t* data, size_t size, uint32_t adler = 1);

// Encodes |rgb| (width * height * 3 bytes, rows top to bottom) as a PNG file's bytes.
std::vector<uint8_t> encodePng(int width, int height, const std::vector<uint8_t>& rgb);

// Writes |bytes| to |path| atomically (a temporary file in the same folder, fsync, rename).
Status writeFileAtomic(const std::string& path, const std::vector<uint8_t>& bytes);

struct RGB {
  uint8_t r, g, b;
};

// An RGB canvas with clipped drawing primitives.
class Canvas {
 public:
  Canvas(int width, int height, RGB background);
  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<uint8_t>& pixels() const { return pixels_; }

  void set(int x, int y, RGB color);
  void fillRect(int x0, int y0, int x1, int y1, RGB color);  // inclusive corners
  // A line from (x0, y0) to (x1, y1) (Bresenham), |thickness| pixels wide.
  void line(double x0, double y0, double x1, double y1, RGB color, int thickness = 1);
  // Text in the built-in 3x5 font (digits, '.', '-', '+', 'e', 'k', 'M'), scaled by |scale|,
  // with its top-left corner at (x, y). Returns the width drawn.
  int text(int x, int y, const std::string& text, RGB color, int scale = 2);
  static int textWidth(const std::string& text, int scale = 2);

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

// One curve of a plot: points (x, y) drawn as a polyline.
struct PlotSeries {
  std::vector<double> x, y;
  RGB color;
  int thickness = 1;
  bool markers = false;  // draw a small square at every point
};

// Plots |series| on shared axes (x from the data's range, y from the finite values' range
// padded by 5%), with tick labels, into a width x height RGB image, and writes it to |path|
// as a PNG. Non-finite points are skipped.
Status writePlotPng(const std::string& path, const std::vector<PlotSeries>& series,
                    int width = 800, int height = 500);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_PNG_PLOT_HPP_
