// SPDX-License-Identifier: Apache-2.0
// zbview's split view on what the real `zb partition --json` prints for
// tests/data/layers/llm19.json: one column per compared split of the shown layout, stage bars
// proportional to each stage's F + B + W on one scale across the columns, rank bars proportional
// to the peak with the state inside, the cap at one x in every column and beyond every bar that
// fits it, the F/B/W colours where they belong; a file that is not zb-partition/1 is one line
// naming it; `zbview --screenshot --splits` draws it headless, and a layout the file lacks is a
// usage error.
#include <QImage>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "gui_test_support.h"
#include "zbkit/gui/palette.h"
#include "zbkit/gui/split_view.h"

using zb::gui::SplitColumn;
using zb::gui::SplitComparison;
using zb::gui::SplitView;

namespace {

using Run = zb::gui::testing::ProgramRun;

Run RunProgram(const QString& program, const QStringList& arguments) {
  return zb::gui::testing::RunProgram(program, arguments);
}

constexpr double kCap = 160;

}  // namespace

class SplitViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void readsEverySplitWithAnOrder();
  void barsShareOneScaleAcrossTheSplits();
  void coloursAreTheOpKindsAndTheCapIsDrawn();
  void badFilesAreOneLineNamingThem();
  void aMemoryPlanShowsWhichBlocksAreCheckpointed();
  void zbviewDrawsTheSplitsHeadless();

 private:
  QTemporaryDir dir_;
  QString partition_path_;
  QByteArray partition_;
};

void SplitViewTest::initTestCase() {
  QVERIFY(dir_.isValid());
  const Run run = RunProgram(
      QStringLiteral(ZBKIT_ZB_BINARY),
      {QStringLiteral("partition"), QStringLiteral("--layers"),
       QStringLiteral(ZBKIT_TEST_DATA_DIR "/layers/llm19.json"), QStringLiteral("-p"),
       QStringLiteral("4"), QStringLiteral("-m"), QStringLiteral("8"),
       QStringLiteral("--mem-limit"), QString::number(kCap), QStringLiteral("--evaluations"),
       QStringLiteral("200"), QStringLiteral("--json")});
  QCOMPARE(run.exit_code, 0);
  partition_ = run.out.toUtf8();
  partition_path_ = dir_.filePath(QStringLiteral("splits.json"));
  QFile file(partition_path_);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(partition_);
}

void SplitViewTest::readsEverySplitWithAnOrder() {
  auto comparison = zb::gui::ParseSplitComparison(partition_, "splits.json");
  QVERIFY2(comparison.ok(), comparison.status().message().c_str());
  QCOMPARE(comparison->ranks, 4);
  QCOMPARE(comparison->microbatches, 8);
  QVERIFY(comparison->cap.has_value());
  QCOMPARE(*comparison->cap, kCap);
  QCOMPARE(comparison->layouts, (std::vector<std::string>{"loop:1", "loop:2", "v"}));
  int best = 0;
  for (const SplitColumn& column : comparison->columns) {
    best += column.best ? 1 : 0;
    QCOMPARE(column.state.size(), size_t{4});
    QVERIFY(column.iteration_ms > 0);
    // Every stage of the layout, each on the rank its placement gives it.
    const size_t stages = column.layout == "loop:1" ? 4 : 8;
    QCOMPARE(column.stages.size(), stages);
    if (column.layout == "v") {
      QCOMPARE(column.stages[0].rank, 0);
      QCOMPARE(column.stages[7].rank, 0);
      QCOMPARE(column.stages[4].rank, 3);
    }
  }
  QCOMPARE(best, 1);
  SplitView view;
  view.setComparison(std::make_shared<const SplitComparison>(*comparison));
  QCOMPARE(view.layout(), comparison->best_layout);
  view.setLayout("v");
  const auto shown = view.shownColumns();
  QCOMPARE(shown.size(), size_t{4});
  QCOMPARE(shown.front()->split, std::string("even"));
  QCOMPARE(shown.back()->split, std::string("co-tuned"));
}

void SplitViewTest::barsShareOneScaleAcrossTheSplits() {
  auto comparison = zb::gui::ParseSplitComparison(partition_, "splits.json");
  QVERIFY(comparison.ok());
  SplitView view;
  view.setComparison(std::make_shared<const SplitComparison>(*comparison));
  view.setLayout("v");
  view.resize(1600, 900);
  const auto shown = view.shownColumns();
  // px per ms from the longest bar; every other bar follows it to a pixel, in every column.
  double time_max = 0;
  for (const SplitColumn* column : shown) {
    for (const auto& stage : column->stages)
      time_max = std::max(time_max, stage.f_ms + stage.b_ms + stage.w_ms);
  }
  int reference_width = 0;  // the longest stage bar: time_max
  for (int c = 0; c < static_cast<int>(shown.size()); ++c)
    for (int s = 0; s < 8; ++s)
      reference_width = std::max(reference_width, view.stageBar(c, s).width());
  QVERIFY(reference_width > 100);
  for (int c = 0; c < static_cast<int>(shown.size()); ++c) {
    for (int s = 0; s < 8; ++s) {
      const auto& stage = shown[c]->stages[s];
      const double expected = reference_width * (stage.f_ms + stage.b_ms + stage.w_ms) / time_max;
      QVERIFY2(std::abs(view.stageBar(c, s).width() - expected) <= 1.0,
               qPrintable(QStringLiteral("column %1 stage %2").arg(c).arg(s)));
    }
    const std::optional<int> cap_x = view.capX(c);
    QVERIFY(cap_x.has_value());
    QCOMPARE(*cap_x - view.memoryBar(c, 0).left(),
             view.capX(0).value() - view.memoryBar(0, 0).left());
    for (int r = 0; r < 4; ++r) {
      const QRect peak = view.memoryBar(c, r), state = view.stateBar(c, r);
      QCOMPARE(state.left(), peak.left());
      QVERIFY(state.width() <= peak.width());
      const double ratio = shown[c]->state[r] / shown[c]->peak[r];
      QVERIFY(std::abs(state.width() - ratio * peak.width()) <= 1.5);
      if (shown[c]->peak[r] <= kCap) QVERIFY(peak.left() + peak.width() <= *cap_x + 1);
    }
  }
  QVERIFY(view.stageBar(9, 0).isNull());
  QVERIFY(view.memoryBar(0, 9).isNull());
}

void SplitViewTest::coloursAreTheOpKindsAndTheCapIsDrawn() {
  auto comparison = zb::gui::ParseSplitComparison(partition_, "splits.json");
  QVERIFY(comparison.ok());
  SplitView view;
  view.setComparison(std::make_shared<const SplitComparison>(*comparison));
  view.setLayout("loop:1");
  view.resize(1400, 800);
  QImage image(view.size(), QImage::Format_ARGB32);
  view.render(&image);
  const auto shown = view.shownColumns();
  const auto& stage = shown[0]->stages[1];
  const QRect bar = view.stageBar(0, 1);
  const double total = stage.f_ms + stage.b_ms + stage.w_ms;
  const int y = bar.center().y();
  const int f_x = bar.left() + static_cast<int>(bar.width() * stage.f_ms / total / 2);
  const int w_x = bar.right() - static_cast<int>(bar.width() * stage.w_ms / total / 2);
  QCOMPARE(QColor(image.pixel(f_x, y)), zb::gui::ColorOf(zb::OpKind::kF));
  QCOMPARE(QColor(image.pixel(w_x, y)), zb::gui::ColorOf(zb::OpKind::kW));
  const QRect state = view.stateBar(0, 0);
  QCOMPARE(QColor(image.pixel(state.left() + 1, state.center().y())), zb::gui::MemoryColor());
  const int cap_x = view.capX(0).value();
  bool cap_drawn = false;
  for (int dy = -4; dy <= 40 && !cap_drawn; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      cap_drawn = cap_drawn || QColor(image.pixel(cap_x + dx, view.memoryBar(0, 0).top() + dy)) ==
                                   zb::gui::CapColor();
    }
  }
  QVERIFY(cap_drawn);
}

void SplitViewTest::badFilesAreOneLineNamingThem() {
  const struct {
    QByteArray text;
    const char* says;
  } cases[] = {
      {"{\"format\": \"zb-partition/1\", \"rows\": [", "bad.json: not JSON"},
      {"{\"format\": \"zb-costs/1\", \"stages\": []}", "bad.json: format: not zb-partition/1"},
      {"{\"format\": \"zb-partition/1\", \"rows\": [{\"ok\": false}]}",
       "bad.json: no split has an order"},
      {"{\"format\": \"zb-partition/1\", \"rows\": [{\"ok\": true, \"layout\": \"v\", \"split\": "
       "\"even\", \"iteration_ms\": 3, \"stage_costs\": [{\"rank\": 0, \"F\": -1, \"B\": 1, \"W\": "
       "1}], \"state\": [1], \"peak_memory\": [2]}]}",
       "bad.json: rows[0]: stage_costs"},
  };
  for (const auto& c : cases) {
    auto parsed = zb::gui::ParseSplitComparison(c.text, "bad.json");
    QVERIFY(!parsed.ok());
    const std::string message = parsed.status().message();
    QVERIFY2(message.find(c.says) == 0, message.c_str());
    QVERIFY(message.find('\n') == std::string::npos);
  }
  auto missing = zb::gui::ReadSplitComparison(dir_.filePath(QStringLiteral("none.json")));
  QVERIFY(!missing.ok());
}

// docs/memory-plan.md: each stage's share of checkpointed blocks as a dark stripe over its bar,
// the modes counted in the header.
void SplitViewTest::aMemoryPlanShowsWhichBlocksAreCheckpointed() {
  const Run run = RunProgram(
      QStringLiteral(ZBKIT_ZB_BINARY),
      {QStringLiteral("partition"), QStringLiteral("--layers"),
       QStringLiteral(ZBKIT_TEST_DATA_DIR "/layers/llm19.json"), QStringLiteral("-p"),
       QStringLiteral("4"), QStringLiteral("-m"), QStringLiteral("8"), QStringLiteral("--layout"),
       QStringLiteral("loop:1"), QStringLiteral("--mem-limit"), QStringLiteral("60"),
       QStringLiteral("--checkpointing"), QStringLiteral("none,full"),
       QStringLiteral("--derive-full"), QStringLiteral("--evaluations"), QStringLiteral("0"),
       QStringLiteral("--json")});
  QCOMPARE(run.exit_code, 0);
  auto comparison = zb::gui::ParseSplitComparison(run.out.toUtf8(), "plan.json");
  QVERIFY2(comparison.ok(), comparison.status().message().c_str());
  const SplitColumn* full = nullptr;
  for (const SplitColumn& column : comparison->columns) {
    int blocks = 0, checkpointed = 0;
    for (const SplitColumn::Stage& stage : column.stages) {
      blocks += stage.blocks;
      checkpointed += stage.checkpointed;
    }
    QCOMPARE(blocks, 19);
    QCOMPARE(checkpointed, column.modes.count("full") > 0 ? column.modes.at("full") : 0);
    if (column.split == "uniform-full") full = &column;
  }
  QVERIFY(full != nullptr);
  QCOMPARE(full->modes.at("full"), 18);  // every block but the embedding
  SplitView view;
  view.setComparison(std::make_shared<const SplitComparison>(*comparison));
  view.resize(1600, 800);
  QImage image(view.size(), QImage::Format_ARGB32);
  view.render(&image);
  const auto shown = view.shownColumns();
  const auto at = std::find_if(shown.begin(), shown.end(),
                               [](const SplitColumn* c) { return c->split == "uniform-full"; }) -
                  shown.begin();
  QVERIFY(at < static_cast<long>(shown.size()));
  const QRect bar = view.stageBar(static_cast<int>(at), 1);  // stage 1: all its blocks full
  QCOMPARE(QColor(image.pixel(bar.center().x(), bar.top())), zb::gui::CheckpointedColor());
  QVERIFY(QColor(image.pixel(bar.center().x(), bar.bottom())) != zb::gui::CheckpointedColor());
}

void SplitViewTest::zbviewDrawsTheSplitsHeadless() {
  const QString png = dir_.filePath(QStringLiteral("splits.png"));
  const Run drawn = RunProgram(QStringLiteral(ZBKIT_ZBVIEW_BINARY),
                               {QStringLiteral("--screenshot"), png, QStringLiteral("--splits"),
                                partition_path_, QStringLiteral("--layout"), QStringLiteral("v"),
                                QStringLiteral("--size"), QStringLiteral("1200x700")});
  QCOMPARE(drawn.exit_code, 0);
  QVERIFY2(drawn.out.contains(QStringLiteral("layout v, p=4 m=8")), qPrintable(drawn.out));
  const QImage image(png);
  QCOMPARE(image.size(), QSize(1200, 700));
  const Run wrong =
      RunProgram(QStringLiteral(ZBKIT_ZBVIEW_BINARY),
                 {QStringLiteral("--screenshot"), png, QStringLiteral("--splits"), partition_path_,
                  QStringLiteral("--layout"), QStringLiteral("loop:3")});
  QCOMPARE(wrong.exit_code, 2);
  QVERIFY2(wrong.err.startsWith(QStringLiteral("zbview: --layout loop:3:")), qPrintable(wrong.err));
  QCOMPARE(wrong.err.count(u'\n'), 1);
  const Run both =
      RunProgram(QStringLiteral(ZBKIT_ZBVIEW_BINARY),
                 {QStringLiteral("some.db"), QStringLiteral("--splits"), partition_path_});
  QCOMPARE(both.exit_code, 2);
}

QTEST_MAIN(SplitViewTest)
#include "tst_split_view.moc"
