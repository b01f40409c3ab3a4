// Tests of the loss plot (png_plot.hpp), each PNG read back by a decoder independent of
// libpng (test/decode_png.py: Python's zlib and the PNG filters): the size, the words
// (title, legend, axis labels) where they belong and never over a curve, the curves'
// colours, the defaults of the old two-argument call, odd inputs, atomic writes and their
// errors, the font, and the plot `tfc-run train --plot` writes.
#include <gtest/gtest.h>
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../plot_font.hpp"
#include "../png_plot.hpp"
#include "cli_test_util.hpp"
#include "tfc/runtime/file.hpp"

namespace {

using namespace tfc_run_test;
using tfc::run::PlotSeries;
using tfc::run::PlotText;
using tfc::run::RGB;

constexpr RGB kRaw{170, 200, 235}, kSmooth{20, 80, 200}, kEval{220, 50, 40};

// A decoded image: pixels, and the tEXt chunks.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  std::map<std::string, std::string> text;

  bool is(int x, int y, RGB c) const {
    const uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
    return p[0] == c.r && p[1] == c.g && p[2] == c.b;
  }
  bool ink(int x, int y) const { return is(x, y, {0, 0, 0}); }
  bool paper(int x, int y) const { return is(x, y, {255, 255, 255}); }
  bool same(const Image& other, int x, int y) const {
    size_t i = (static_cast<size_t>(y) * width + x) * 3;
    return std::equal(&rgb[i], &rgb[i] + 3, &other.rgb[i]);
  }
};

// Where the axes are: the black column and row that run furthest.
struct Frame {
  int axisCol = 0, axisRow = 0, top = 0, right = 0;
};

Frame findFrame(const Image& image) {
  Frame frame;
  int best = -1;
  for (int x = 0; x < image.width; ++x) {
    int count = 0;
    for (int y = 0; y < image.height; ++y) count += image.ink(x, y);
    if (count > best) best = count, frame.axisCol = x;
  }
  best = -1;
  for (int y = 0; y < image.height; ++y) {
    int count = 0;
    for (int x = 0; x < image.width; ++x) count += image.ink(x, y);
    if (count > best) best = count, frame.axisRow = y;
  }
  frame.top = frame.axisRow;
  while (frame.top > 0 && image.ink(frame.axisCol, frame.top - 1)) --frame.top;
  frame.right = frame.axisCol;
  while (frame.right + 1 < image.width && image.ink(frame.right + 1, frame.axisRow)) ++frame.right;
  return frame;
}

struct Pixel {
  int x, y;
};

// A loss-like curve, its smoothed copy and an eval curve with markers.
std::vector<PlotSeries> lossSeries(bool named) {
  PlotSeries raw{{}, {}, kRaw, 1, false, named ? "raw loss" : ""};
  PlotSeries smooth{{}, {}, kSmooth, 2, false, named ? "smoothed loss" : ""};
  PlotSeries eval{{}, {}, kEval, 2, true, named ? "eval loss" : ""};
  double ema = 0;
  for (int step = 1; step <= 300; ++step) {
    double loss = 1.2 + 1.6 * std::exp(-step / 40.0) + 0.15 * std::sin(step * 1.7);
    ema = step == 1 ? loss : 0.9 * ema + 0.1 * loss;
    raw.x.push_back(step), raw.y.push_back(loss);
    smooth.x.push_back(step), smooth.y.push_back(ema);
    if (step % 30 == 0) eval.x.push_back(step), eval.y.push_back(ema + 0.1);
  }
  return {raw, smooth, eval};
}

std::string spaces(const std::string& text) { return std::string(text.size(), ' '); }

class PngPlotTest : public ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    if (std::system("python3 -c 'import zlib' >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "python3 with zlib is needed to decode the PNGs independently";
    }
  }

  // Decodes |path| with decode_png.py; fails the test when it does not decode.
  Image decode(const std::string& path) {
    std::string ppm = path + ".ppm";
    std::string command = "python3 " + quote(TFC_RUN_TEST_SOURCE_DIR "/decode_png.py") + " " +
                          quote(path) + " " + quote(ppm) + " 2>&1";
    Image image;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
      ADD_FAILURE() << "cannot run " << command;
      return image;
    }
    std::string output;
    char buffer[4096];
    size_t got;
    while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
    int status = pclose(pipe);
    EXPECT_EQ(status, 0) << path << " does not decode:\n" << output;
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("text ", 0) == 0) {
        size_t equals = line.find('=');
        image.text[line.substr(5, equals - 5)] = line.substr(equals + 1);
      }
    }
    std::string pixels = readAll(ppm);
    std::istringstream header(pixels);
    std::string magic;
    int maxValue = 0;
    header >> magic >> image.width >> image.height >> maxValue;
    size_t start = static_cast<size_t>(header.tellg()) + 1;
    EXPECT_EQ(magic, "P6");
    EXPECT_EQ(pixels.size() - start, static_cast<size_t>(image.width) * image.height * 3);
    image.rgb.assign(pixels.begin() + static_cast<std::ptrdiff_t>(start), pixels.end());
    image.rgb.resize(static_cast<size_t>(image.width) * image.height * 3);
    return image;
  }

  Image plot(const std::string& name, const std::vector<PlotSeries>& series,
             const PlotText& text, int width = 800, int height = 500) {
    std::string path = file(name);
    EXPECT_OK(tfc::run::writePlotPng(path, series, text, width, height));
    return decode(path);
  }
};

// The words, drawn over a plot whose words are spaces of the same lengths (so the layout is
// the same): every pixel that differs is text ink on paper, so text never covers a curve,
// the grid or a tick; the title is centred above the legend, the legend above the axes, the
// x label under the tick values and the y label left of them; each colour is in the plot
// and in the legend.
TEST_F(PngPlotTest, WordsSitAroundTheAxesAndNeverOverACurve) {
  const PlotText words{"loss of a test run", "step", "loss"};
  Image full = plot("full.png", lossSeries(true), words);
  std::vector<PlotSeries> blankSeries = lossSeries(true);
  for (PlotSeries& one : blankSeries) one.name = spaces(one.name);
  Image blank = plot("blank.png", blankSeries,
                     {spaces(words.title), spaces(words.xLabel), spaces(words.yLabel)});
  ASSERT_EQ(full.width, 800);
  ASSERT_EQ(full.height, 500);
  ASSERT_EQ(blank.width, 800);
  ASSERT_EQ(blank.height, 500);
  EXPECT_EQ(full.text["Title"], "loss of a test run");
  EXPECT_EQ(full.text["Software"], "tfc");

  Frame frame = findFrame(blank);
  Frame fullFrame = findFrame(full);
  EXPECT_EQ(frame.axisCol, fullFrame.axisCol);
  EXPECT_EQ(frame.axisRow, fullFrame.axisRow);
  EXPECT_GT(frame.top, 40) << "room above the axes for the title and the legend";
  EXPECT_GT(frame.right - frame.axisCol, 600);
  EXPECT_GT(frame.axisRow - frame.top, 300);

  std::vector<Pixel> above, below, leftOf;
  for (int y = 0; y < full.height; ++y) {
    for (int x = 0; x < full.width; ++x) {
      if (full.same(blank, x, y)) continue;
      ASSERT_TRUE(full.ink(x, y) && blank.paper(x, y))
          << "a word's pixel at (" << x << ", " << y << ") is not ink on paper";
      ASSERT_FALSE(x > frame.axisCol && x <= frame.right && y >= frame.top && y <= frame.axisRow)
          << "a word inside the plot at (" << x << ", " << y << ")";
      (y < frame.top ? above : y > frame.axisRow ? below : leftOf).push_back({x, y});
    }
  }

  // Above the axes: lines of text separated by blank rows; the first is the title, centred.
  ASSERT_FALSE(above.empty());
  std::set<int> rows;
  for (const Pixel& p : above) rows.insert(p.y);
  std::vector<std::pair<int, int>> lines;  // first and last row of each line of text
  for (int y : rows) {
    if (lines.empty() || y > lines.back().second + 4) lines.push_back({y, y});
    lines.back().second = y;
  }
  ASSERT_GE(lines.size(), 2u) << "a title and a legend";
  int titleLeft = full.width, titleRight = 0;
  for (const Pixel& p : above) {
    if (p.y > lines.front().second) continue;
    titleLeft = std::min(titleLeft, p.x), titleRight = std::max(titleRight, p.x);
  }
  EXPECT_NEAR((titleLeft + titleRight) / 2.0, full.width / 2.0, 12);
  EXPECT_GT(titleRight - titleLeft, 150) << "18 characters";
  // The legend: each series' colour above the axes, beside its name (on the last line).
  for (RGB colour : {kRaw, kSmooth, kEval}) {
    int inLegend = 0, inPlot = 0;
    for (int y = 0; y < full.height; ++y) {
      for (int x = 0; x < full.width; ++x) {
        if (!full.is(x, y, colour)) continue;
        if (y < frame.top) {
          ++inLegend;
          EXPECT_GE(y, lines.back().first - 2) << "a swatch outside the legend's line";
          EXPECT_LE(y, lines.back().second + 2) << "a swatch outside the legend's line";
        } else {
          ++inPlot;
        }
      }
    }
    EXPECT_GT(inLegend, 10) << "colour " << int(colour.r) << "," << int(colour.g);
    EXPECT_GT(inPlot, 100) << "colour " << int(colour.r) << "," << int(colour.g);
  }

  // The x label: under the tick values (ink of the blank plot under the axis), centred.
  ASSERT_FALSE(below.empty());
  int ticksBottom = 0;
  for (int y = frame.axisRow + 1; y < blank.height; ++y) {
    for (int x = 0; x < blank.width; ++x) {
      if (blank.ink(x, y)) ticksBottom = std::max(ticksBottom, y);
    }
  }
  int labelLeft = full.width, labelRight = 0;
  for (const Pixel& p : below) {
    EXPECT_GT(p.y, ticksBottom);
    labelLeft = std::min(labelLeft, p.x), labelRight = std::max(labelRight, p.x);
  }
  EXPECT_NEAR((labelLeft + labelRight) / 2.0, (frame.axisCol + frame.right) / 2.0, 12);

  // The y label: left of the tick values, turned upright, about the middle of the axis.
  ASSERT_FALSE(leftOf.empty());
  int ticksLeft = full.width;
  for (int y = frame.top; y <= frame.axisRow; ++y) {
    for (int x = 0; x < frame.axisCol - 4; ++x) {
      if (blank.ink(x, y)) ticksLeft = std::min(ticksLeft, x);
    }
  }
  int labelTop = full.height, labelBottom = 0;
  for (const Pixel& p : leftOf) {
    EXPECT_LT(p.x, ticksLeft);
    labelTop = std::min(labelTop, p.y), labelBottom = std::max(labelBottom, p.y);
  }
  EXPECT_GT(labelBottom - labelTop, 30) << "4 characters running upwards";
  EXPECT_NEAR((labelTop + labelBottom) / 2.0, (frame.top + frame.axisRow) / 2.0, 12);
}

// Without words or names: no title or legend, and the plot takes their room.
TEST_F(PngPlotTest, NoWordsMeansNoTitleNoLegend) {
  Image bare = plot("bare.png", lossSeries(false), {"", "", ""});
  Image full = plot("full.png", lossSeries(true), {});
  ASSERT_EQ(bare.width, 800);
  ASSERT_EQ(bare.height, 500);
  EXPECT_EQ(bare.text.count("Title"), 0u);
  Frame frame = findFrame(bare);
  EXPECT_LT(frame.top, findFrame(full).top - 30);
  for (int y = 0; y < frame.top; ++y) {
    for (int x = frame.axisCol + 1; x < bare.width; ++x) {
      ASSERT_TRUE(bare.paper(x, y)) << "(" << x << ", " << y << ") above the axes";
    }
  }
  // The curves' colours are still there.
  for (RGB colour : {kRaw, kSmooth, kEval}) {
    bool seen = false;
    for (int y = 0; y < bare.height && !seen; ++y) {
      for (int x = 0; x < bare.width && !seen; ++x) seen = bare.is(x, y, colour);
    }
    EXPECT_TRUE(seen);
  }
}

// The two-argument call (cmd_train.cpp's before the words) gets the default words.
TEST_F(PngPlotTest, TheOldCallGetsTheDefaultWords) {
  std::string path = file("old.png");
  ASSERT_OK(tfc::run::writePlotPng(path, lossSeries(false)));
  Image image = decode(path);
  EXPECT_EQ(image.width, 800);
  EXPECT_EQ(image.height, 500);
  EXPECT_EQ(image.text["Title"], "training loss");
  Frame frame = findFrame(image);
  int titleInk = 0;
  for (int y = 0; y < frame.top; ++y) {
    for (int x = frame.axisCol + 1; x < image.width; ++x) titleInk += image.ink(x, y);
  }
  EXPECT_GT(titleInk, 100);
}

// Odd inputs still give a well-formed image of the asked size: no points, non-finite
// points, one point, a flat curve, huge and tiny values, a title far too long, tiny images.
TEST_F(PngPlotTest, OddInputsStillPlot) {
  const double nan = std::nan(""), inf = INFINITY;
  std::vector<std::vector<PlotSeries>> cases = {
      {},
      {{{1, 2, 3}, {nan, inf, -inf}, kSmooth, 1, false, "nothing finite"}},
      {{{5}, {2.5}, kEval, 2, true, "one point"}},
      {{{0, 10, 20}, {1, 1, 1}, kSmooth, 2, false, "flat"}},
      {{{0, 1e7}, {1e30, 3e30}, kSmooth, 2, false, "huge"}},
      {{{0, 1}, {1e-9, 3e-9}, kSmooth, 2, false, "tiny"}},
  };
  const std::string longTitle(500, 'x');
  int n = 0;
  for (const auto& series : cases) {
    for (auto [w, h] : {std::pair{200, 120}, std::pair{40, 30}}) {
      std::string name = "odd" + std::to_string(n++) + ".png";
      Image image = plot(name, series, {longTitle, "step", "loss"}, w, h);
      EXPECT_EQ(image.width, w) << name;
      EXPECT_EQ(image.height, h) << name;
    }
  }
}

// Errors are writeFileAtomically's: the path, the step that failed, the system's reason;
// the old file stays when the new one cannot be written, and no temporary is left.
TEST_F(PngPlotTest, WritesAtomicallyAndReportsUnwritablePaths) {
  std::string missing = file("no/such/folder/loss.png");
  tfc::Status status = tfc::run::writePlotPng(missing, lossSeries(true));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), TFC_NOT_FOUND) << status.message();
  EXPECT_EQ(std::string(status.message()).rfind(missing + ": cannot create temporary file", 0), 0u)
      << status.message();
  EXPECT_TRUE(contains(status.message(), std::strerror(ENOENT))) << status.message();

  std::string folder = file("a_folder");
  ASSERT_EQ(::mkdir(folder.c_str(), 0755), 0);
  status = tfc::run::writePlotPng(folder, lossSeries(true));
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(contains(status.message(), folder + " is a directory")) << status.message();

  std::string path = file("loss.png");
  ASSERT_OK(tfc::run::writePlotPng(path, lossSeries(true), {"first", "step", "loss"}));
  ASSERT_OK(tfc::run::writePlotPng(path, lossSeries(true), {"second", "step", "loss"}));
  EXPECT_EQ(decode(path).text["Title"], "second");
  std::vector<std::string> names;
  DIR* dir = ::opendir(dir_.c_str());
  ASSERT_NE(dir, nullptr);
  while (dirent* entry = ::readdir(dir)) names.push_back(entry->d_name);
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".", "..", "a_folder", "loss.png", "loss.png.ppm"}));
}

// Every printable character has its own well-formed glyph; others draw as '?'.
TEST(PlotFontTest, CoversPrintableAscii) {
  std::set<std::string> shapes;
  for (int c = ' '; c <= '~'; ++c) {
    const char* const* rows = tfc::run::glyphRows(static_cast<char>(c));
    std::string shape;
    for (int r = 0; r < tfc::run::kGlyphHeight; ++r) {
      ASSERT_NE(rows[r], nullptr) << "'" << char(c) << "' row " << r;
      ASSERT_EQ(std::strlen(rows[r]), static_cast<size_t>(tfc::run::kGlyphWidth)) << char(c);
      ASSERT_EQ(std::strspn(rows[r], "#."), static_cast<size_t>(tfc::run::kGlyphWidth)) << char(c);
      shape += rows[r];
    }
    EXPECT_TRUE(shapes.insert(shape).second) << "'" << char(c) << "' looks like another glyph";
    bool descends = shape.find('#', tfc::run::kGlyphAscent * tfc::run::kGlyphWidth) != std::string::npos;
    EXPECT_EQ(descends, std::string("gjpqy,;").find(char(c)) != std::string::npos) << char(c);
  }
  EXPECT_EQ(tfc::run::glyphRows('\x01'), tfc::run::glyphRows('?'));
  EXPECT_EQ(tfc::run::glyphRows('\xe9'), tfc::run::glyphRows('?'));
}

// `tfc-run train --plot` names the model and the run in the title and every curve in the
// legend.
TEST_F(PngPlotTest, TrainPlotHasTitleAndLegend) {
  std::vector<uint16_t> tokens(3000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>(i % 16);
  std::string data = file("train.bin"), plotPath = file("loss.png");
  {
    std::ofstream out(data, std::ios::binary);
    out.write(reinterpret_cast<const char*>(tokens.data()),
              static_cast<std::streamsize>(tokens.size() * 2));
  }
  Result result = run({std::string(TFC_FAKE_ARTIFACT_DIR) + "/fake_train.so", "train",
                       "--data", data, "--init-seed", "0", "--steps", "40", "--save", file("run.safetensors"),
                       "--plot", plotPath, "--eval-data", data, "--eval-every", "10"});
  ASSERT_EQ(result.code, 0) << result.output;
  Image image = decode(plotPath);
  EXPECT_EQ(image.width, 800);
  EXPECT_EQ(image.height, 500);
  EXPECT_EQ(image.text["Title"], "training loss: fake_train.so -> run.safetensors");
  Frame frame = findFrame(image);
  for (RGB colour : {kRaw, kSmooth, kEval}) {  // cmd_train.cpp's colours
    int inLegend = 0;
    for (int y = 0; y < frame.top; ++y) {
      for (int x = 0; x < image.width; ++x) inLegend += image.is(x, y, colour);
    }
    EXPECT_GT(inLegend, 10) << "colour " << int(colour.r) << "," << int(colour.g);
  }
}

}  // namespace
