// The loss plot of `tfc-run train --plot` and `tfc-seed-experiment --plot`: curves, a title,
// labelled axes with tick values and a legend, drawn on an RGB canvas with a built-in
// bitmap font (plot_font.hpp) and encoded by libpng.
#ifndef TFC_TOOLS_TFC_RUN_PNG_PLOT_HPP_
#define TFC_TOOLS_TFC_RUN_PNG_PLOT_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "tfc/runtime/status.hpp"

namespace tfc::run {

struct RGB {
  uint8_t r, g, b;
};

// An RGB canvas (rows top to bottom) with clipped drawing primitives.
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
  // Text in the plot font, each font pixel a |scale| x |scale| square, with the top-left
  // corner of its first glyph cell at (x, y). Returns the width drawn.
  int text(int x, int y, const std::string& text, RGB color, int scale = 1);
  // The same turned a quarter left (read bottom to top): the text starts at the bottom-left
  // (x, y) corner of its run and grows upwards. Returns the height drawn.
  int textUp(int x, int y, const std::string& text, RGB color, int scale = 1);
  static int textWidth(const std::string& text, int scale = 1);
  static int textHeight(int scale = 1);  // a line's cell, descenders included

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

// Encodes |canvas| as PNG bytes (8-bit RGB) with libpng; |title|, when not empty, goes into
// a tEXt "Title" chunk. Errors are libpng's message.
StatusOr<std::vector<uint8_t>> encodePng(const Canvas& canvas, const std::string& title = "");

// One curve of a plot: points (x, y) drawn as a polyline (or as points alone).
struct PlotSeries {
  std::vector<double> x, y;
  RGB color;
  int thickness = 1;
  bool markers = false;  // draw a small square at every point (5 pixels wide at 800x500)
  std::string name;      // its legend entry; unnamed series stay out of the legend
  bool lines = true;     // join the points; false with markers is a scatter plot
};

// The words around the curves; an empty string leaves its part out (and its space).
struct PlotText {
  std::string title = "training loss";
  std::string xLabel = "step";
  std::string yLabel = "loss";
};

// Plots |series| on shared axes (x from the data's range, y from the finite values' range
// padded by 5%) into a width x height image: the title above, the legend (each named
// series' colour and name) under it and outside the axes so it never hides a curve, tick
// values and axis labels. Writes it to |path| as a PNG, atomically (writeFileAtomically).
// Non-finite points are skipped.
Status writePlotPng(const std::string& path, const std::vector<PlotSeries>& series,
                    const PlotText& text = {}, int width = 800, int height = 500);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_PNG_PLOT_HPP_
