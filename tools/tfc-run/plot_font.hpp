// The bitmap font of the loss plot (png_plot.cpp): printable ASCII in a 5x7 cell with two
// rows below the baseline for descenders (g, j, p, q, y, comma). Drawn for tfc-run, not
// copied from another font.
#ifndef TFC_TOOLS_TFC_RUN_PLOT_FONT_HPP_
#define TFC_TOOLS_TFC_RUN_PLOT_FONT_HPP_

namespace tfc::run {

constexpr int kGlyphWidth = 5;    // columns of a glyph
constexpr int kGlyphAscent = 7;   // rows from the top of a capital to the baseline
constexpr int kGlyphHeight = 9;   // with the two descender rows
constexpr int kGlyphAdvance = 6;  // a glyph and one blank column

// Rows of |c|'s glyph, top first: kGlyphHeight strings of kGlyphWidth characters, '#' for
// ink and '.' for paper. Characters outside ' '..'~' are drawn as '?'.
const char* const* glyphRows(char c);

}  // namespace tfc::run

#endif  // TFC_TOOLS_TFC_RUN_PLOT_FONT_HPP_
