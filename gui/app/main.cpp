// SPDX-License-Identifier: Apache-2.0
// zbview [STORE] [--schedule ID] [--compare ID2] [--frontier ID]
// zbview --screenshot OUT.png STORE [--schedule ID] [--compare ID2] [--frontier ID] [--size WxH]
// zbview [--screenshot OUT.png] --splits PARTITION.json [--layout L] [--size WxH]
// zbview [--screenshot OUT.png] --diagnosis RUN_DIR [--size WxH]
//
// The window, or (with --screenshot) no window at all: the store is read, the item drawn into a
// composed picture meant for a person (title, legend, timeline with bubbles and wait links,
// memory track with the cap, summary figures; or a frontier's plot and summary) and written to
// OUT. The store may also be given as --store STORE. --splits shows, instead of a store, the layer
// splits `zb partition --json` compared (SplitView); --diagnosis a stalled job's run directory as
// zb doctor reads it (DiagnosisView). Exit codes as every zbkit command: 0
// success, 2 usage error, 1 anything else, with one line "zbview: <reason>" on stderr.
#include <QApplication>
#include <QCommandLineParser>
#include <QRegularExpression>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "export.h"
#include "loader.h"
#include "main_window.h"
#include "report_view.h"
#include "zbkit/gui/diagnosis_view.h"
#include "zbkit/gui/split_view.h"

#ifndef ZBKIT_VERSION
#define ZBKIT_VERSION "unknown"
#endif

namespace {

constexpr const char* kUsage =
    "usage: zbview [STORE] [--schedule ID] [--compare ID2] [--frontier ID]\n"
    "       zbview --screenshot OUT.png STORE [--schedule ID] [--compare ID2] [--frontier ID]\n"
    "              [--size WxH]\n"
    "       zbview [--screenshot OUT.png] --splits PARTITION.json [--layout L] [--size WxH]\n"
    "       zbview [--screenshot OUT.png] --diagnosis RUN_DIR [--size WxH]\n"
    "\n"
    "Shows the schedules, timelines (predicted and measured) and memory-vs-bubble frontiers of a\n"
    "zbkit store.\n"
    "\n"
    "  --store STORE     the store, instead of the STORE argument\n"
    "  --schedule ID     what to show: a schedule id (3, s3), a timeline (t7) or a frontier (f4);\n"
    "                    default: the most recent schedule, run or frontier in the store\n"
    "  --frontier ID     show frontier ID: bubble rate against the memory cap\n"
    "  --compare ID2     compare it with schedule (or timeline) ID2, one pane above the other\n"
    "  --splits FILE     the layer splits zb partition --json compared (no store): per split\n"
    "                    its stages' F/B/W and its ranks' memory, side by side\n"
    "  --layout L        with --splits: which layout's splits (default: the chosen split's)\n"
    "  --diagnosis DIR   a job's run directory (zb replay --run-dir): where each rank is in its\n"
    "                    program, the culprit of a stall and the chain of waits (zb doctor)\n"
    "  --screenshot OUT  draw into OUT (.png; .svg and .pdf also work) without a window, exit\n"
    "  --size WxH        size of the screenshot in pixels (default 1600x900)\n"
    "  -h, --help        this text\n"
    "  --version         the zbkit version\n"
    "\n"
    "Exit status: 0 success, 2 usage error, 1 any other failure (unreadable or empty store,\n"
    "unknown id, unwritable output).\n"
    "\n"
    "example:\n"
    "  zbview --screenshot tuned-vs-1f1b.png zb.db --schedule 1 --compare 2\n"
    "      schedule 1 above schedule 2 (e.g. a tuned order and 1F1B), drawn without a window\n"
    "  zb partition --layers layers.json -p 4 -m 8 --json > splits.json\n"
    "  zbview --screenshot splits.png --splits splits.json --layout v\n";

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "zbview: %s\n", message.c_str());
  return code;
}

int UsageFail(const QString& message) {
  return Fail(2, message.toStdString() + " (see zbview --help)");
}

struct Arguments {
  QString store;
  std::optional<zb::gui::ItemRef> schedule;
  std::optional<zb::gui::ItemRef> compare;
  QString screenshot;
  QSize size{1600, 900};
  QString splits;     // a zb-partition/1 file: show it instead of a store
  QString layout;     // with splits: the layout shown
  QString diagnosis;  // a run directory: show its diagnosis instead of a store
};

// Returns an exit code when the command line is not something to run (usage error, --help).
std::optional<int> Parse(const QStringList& argv, Arguments& out) {
  QCommandLineParser parser;
  parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QString());
  const QCommandLineOption version(QStringLiteral("version"), QString());
  const QCommandLineOption screenshot(QStringLiteral("screenshot"), QString(),
                                      QStringLiteral("OUT"));
  const QCommandLineOption schedule(QStringLiteral("schedule"), QString(), QStringLiteral("ID"));
  const QCommandLineOption compare(QStringLiteral("compare"), QString(), QStringLiteral("ID2"));
  const QCommandLineOption size(QStringLiteral("size"), QString(), QStringLiteral("WxH"));
  const QCommandLineOption frontier(QStringLiteral("frontier"), QString(), QStringLiteral("ID"));
  const QCommandLineOption store(QStringLiteral("store"), QString(), QStringLiteral("STORE"));
  const QCommandLineOption splits(QStringLiteral("splits"), QString(), QStringLiteral("FILE"));
  const QCommandLineOption layout(QStringLiteral("layout"), QString(), QStringLiteral("L"));
  const QCommandLineOption diagnosis(QStringLiteral("diagnosis"), QString(), QStringLiteral("DIR"));
  parser.addOptions({help, version, screenshot, schedule, compare, size, frontier, store, splits,
                     layout, diagnosis});
  parser.addPositionalArgument(QStringLiteral("STORE"), QString());
  if (!parser.parse(argv)) return UsageFail(parser.errorText());
  if (parser.isSet(help)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (parser.isSet(version)) {
    std::printf("zbview %s\n", ZBKIT_VERSION);
    return 0;
  }
  const QStringList positional = parser.positionalArguments();
  if (positional.size() > 1) {
    return UsageFail(QStringLiteral("expected one store, got %1 arguments: %2")
                         .arg(positional.size())
                         .arg(positional.join(u' ')));
  }
  if (!positional.isEmpty()) out.store = positional.front();
  for (const QString& name : parser.optionNames()) {
    if (parser.values(name).size() > 1) {
      return UsageFail(QStringLiteral("--%1 given more than once").arg(name));
    }
  }
  if (parser.isSet(store)) {
    if (!positional.isEmpty()) {
      return UsageFail(QStringLiteral("two stores: %1 and --store %2")
                           .arg(positional.front(), parser.value(store)));
    }
    out.store = parser.value(store);
    if (out.store.isEmpty()) return UsageFail(QStringLiteral("--store needs a file name"));
  }
  auto parse_ref = [&](const QCommandLineOption& option, std::optional<zb::gui::ItemRef>& ref) {
    if (!parser.isSet(option)) return true;
    ref = zb::gui::ParseItemSpec(parser.value(option));
    return ref.has_value();
  };
  if (!parse_ref(schedule, out.schedule)) {
    return UsageFail(QStringLiteral("--schedule: \"%1\" is not an id (a schedule id such as 3, "
                                    "t7 for timeline 7 or f4 for frontier 4)")
                         .arg(parser.value(schedule)));
  }
  if (!parse_ref(compare, out.compare)) {
    return UsageFail(QStringLiteral("--compare: \"%1\" is not an id (a schedule id such as 3, "
                                    "or t7 for timeline 7)")
                         .arg(parser.value(compare)));
  }
  if (parser.isSet(frontier)) {
    if (out.schedule) {
      return UsageFail(QStringLiteral("--frontier and --schedule both say what to show; give one"));
    }
    bool ok = false;
    const QString text = parser.value(frontier).trimmed();
    const qlonglong id = text.toLongLong(&ok);
    if (!ok || id < 1 || text.startsWith(u'+')) {
      return UsageFail(
          QStringLiteral("--frontier: \"%1\" is not a frontier id (such as 4)").arg(text));
    }
    out.schedule = zb::gui::ItemRef{zb::gui::ItemKind::kFrontier, id};
  }
  const auto is_frontier = [](const std::optional<zb::gui::ItemRef>& ref) {
    return ref && ref->kind == zb::gui::ItemKind::kFrontier;
  };
  if (out.compare && (is_frontier(out.schedule) || is_frontier(out.compare))) {
    return UsageFail(
        QStringLiteral("--compare: a frontier cannot be compared, only schedules and "
                       "timelines"));
  }
  if ((out.schedule || out.compare) && out.store.isEmpty()) {
    return UsageFail(QStringLiteral("--schedule, --frontier and --compare need a STORE"));
  }
  if (parser.isSet(splits)) {
    out.splits = parser.value(splits);
    if (out.splits.isEmpty()) return UsageFail(QStringLiteral("--splits needs a file name"));
    if (!out.store.isEmpty() || out.schedule || out.compare) {
      return UsageFail(
          QStringLiteral("--splits shows a zb partition file, not a store: give "
                         "one or the other"));
    }
    out.layout = parser.value(layout);
  } else if (parser.isSet(layout)) {
    return UsageFail(QStringLiteral("--layout goes with --splits"));
  }
  if (parser.isSet(diagnosis)) {
    out.diagnosis = parser.value(diagnosis);
    if (out.diagnosis.isEmpty()) return UsageFail(QStringLiteral("--diagnosis needs a directory"));
    if (!out.store.isEmpty() || out.schedule || out.compare || !out.splits.isEmpty()) {
      return UsageFail(
          QStringLiteral("--diagnosis shows a run directory alone: no store, no --splits"));
    }
  }
  if (parser.isSet(screenshot)) {
    out.screenshot = parser.value(screenshot);
    if (out.screenshot.isEmpty())
      return UsageFail(QStringLiteral("--screenshot needs a file name"));
    if (!zb::gui::ExportFormatForPath(out.screenshot)) {
      return UsageFail(QStringLiteral("--screenshot %1: unknown format (use .png, .svg or .pdf)")
                           .arg(out.screenshot));
    }
    if (out.store.isEmpty() && out.splits.isEmpty() && out.diagnosis.isEmpty()) {
      return UsageFail(
          QStringLiteral("--screenshot needs a STORE (or --splits FILE, --diagnosis DIR)"));
    }
  }
  if (parser.isSet(size)) {
    if (out.screenshot.isEmpty()) return UsageFail(QStringLiteral("--size needs --screenshot"));
    static const QRegularExpression kSize(QStringLiteral("^(\\d{1,5})x(\\d{1,5})$"));
    const QRegularExpressionMatch match = kSize.match(parser.value(size));
    const int width = match.hasMatch() ? match.captured(1).toInt() : 0;
    const int height = match.hasMatch() ? match.captured(2).toInt() : 0;
    if (width < 320 || height < 200 || width > 16384 || height > 16384) {
      return UsageFail(QStringLiteral("--size: \"%1\" must be WxH with 320 <= W <= 16384 and "
                                      "200 <= H <= 16384")
                           .arg(parser.value(size)));
    }
    out.size = QSize(width, height);
  }
  return std::nullopt;
}

// The screenshot never uses the runtime directory; Qt's note that XDG_RUNTIME_DIR is unset (common
// in containers and CI) would only be noise around the one line a caller reads.
void QuietHandler(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (type == QtWarningMsg &&
      message.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR"))) {
    return;
  }
  std::fprintf(stderr, "%s\n", qFormatLogMessage(type, context, message).toLocal8Bit().constData());
}

bool HaveDisplay() {
  return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
}

// A view that needs no store, and the line that says what it shows.
struct MadeView {
  std::unique_ptr<QWidget> widget;
  QString title;
};

// A view that needs no store (--splits, --diagnosis): a window titled with `source`, or with
// --screenshot its picture, written without a window. `make` builds it once Qt runs.
int ShowOrDraw(int argc, char** argv, const Arguments& args, const QString& source,
               const std::function<MadeView()>& make) {
  const bool picture = !args.screenshot.isEmpty();
  if (picture && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  if (!picture && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && !HaveDisplay()) {
    return Fail(1, "no display (DISPLAY and WAYLAND_DISPLAY are unset); use --screenshot");
  }
  qInstallMessageHandler(QuietHandler);
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("zbkit"));
  QApplication::setApplicationName(QStringLiteral("zbview"));
  MadeView made = make();
  QWidget* view = made.widget.get();
  if (!picture) {
    view->setWindowTitle(QStringLiteral("zbview: %1").arg(source));
    view->show();
    return QApplication::exec();
  }
  view->resize(args.size);
  zb::Status written;
  if (zb::gui::ExportFormatForPath(args.screenshot) == zb::gui::ExportFormat::kPng) {
    QImage image(args.size, QImage::Format_ARGB32);
    image.fill(Qt::white);
    view->render(&image);
    written = zb::gui::SavePng(image, args.screenshot);
  } else {
    written = zb::gui::ExportWidget(view, args.screenshot);
  }
  if (!written.ok()) return Fail(1, written.message());
  std::printf("wrote %s (%dx%d): %s\n", args.screenshot.toLocal8Bit().constData(),
              args.size.width(), args.size.height(), made.title.toStdString().c_str());
  return 0;
}

// --splits: the file is read before Qt's platform starts (one line on failure); then either the
// picture (--screenshot) or a window.
int RunSplits(int argc, char** argv, const Arguments& args) {
  auto comparison = zb::gui::ReadSplitComparison(args.splits);
  if (!comparison.ok()) return Fail(1, comparison.status().message());
  const std::string layout =
      args.layout.isEmpty() ? comparison->best_layout : args.layout.toStdString();
  if (std::find(comparison->layouts.begin(), comparison->layouts.end(), layout) ==
      comparison->layouts.end()) {
    std::string known;
    for (const std::string& name : comparison->layouts)
      known += (known.empty() ? "" : ", ") + name;
    return Fail(2, "--layout " + layout + ": " + args.splits.toStdString() + " has splits of " +
                       known + " only");
  }
  auto shared = std::make_shared<const zb::gui::SplitComparison>(std::move(*comparison));
  return ShowOrDraw(argc, argv, args, args.splits, [&] {
    auto view = std::make_unique<zb::gui::SplitView>();
    view->setComparison(shared);
    view->setLayout(layout);
    const QString title = view->titleText();
    return MadeView{std::move(view), title};
  });
}

// --diagnosis: the records are read and diagnosed before Qt's platform starts.
int RunDiagnosis(int argc, char** argv, const Arguments& args) {
  auto report = zb::gui::ReadStallReport(args.diagnosis.toStdString());
  if (!report.ok()) return Fail(1, report.status().message());
  auto shared = std::make_shared<const zb::gui::StallReport>(std::move(*report));
  return ShowOrDraw(argc, argv, args, args.diagnosis, [&] {
    auto view = std::make_unique<zb::gui::DiagnosisView>();
    view->setReport(shared);
    const QString title = view->titleText();
    return MadeView{std::move(view), title};
  });
}

int RunScreenshot(int argc, char** argv, const Arguments& args) {
  // Everything that can fail on the store's side runs before Qt's platform starts, so a failure
  // prints exactly one line and nothing of Qt's.
  const std::string store = args.store.toStdString();
  auto listing = zb::gui::ReadListing(store);
  if (!listing.ok()) return Fail(1, listing.status().message());
  if (listing->empty()) return Fail(1, zb::gui::EmptyStoreMessage(store));
  // A comparison starts from the most recent schedule or run, never from a frontier.
  const std::optional<zb::gui::ItemRef> first =
      args.schedule ? args.schedule : listing->MostRecent(/*with_frontiers=*/!args.compare);
  if (!first) return Fail(1, store + ": no schedule or timeline in the store to compare");
  for (const std::optional<zb::gui::ItemRef>& ref : {first, args.compare}) {
    if (ref && !listing->Contains(*ref)) {
      return Fail(1, store + ": no " + zb::gui::DescribeRef(*ref).toStdString() + " in the store");
    }
  }
  auto a = zb::gui::LoadItem(*listing, *first);
  if (!a.ok()) return Fail(1, a.status().message());
  std::optional<zb::Expected<zb::gui::LoadedItem>> b;
  if (args.compare) {
    b = zb::gui::LoadItem(*listing, *args.compare);
    if (!b->ok()) return Fail(1, b->status().message());
  }
  for (const zb::gui::LoadedItem* item : {&a.value(), b ? &b->value() : nullptr}) {
    if (item != nullptr && !item->index && !item->frontier) {
      return Fail(1, store + ": " + zb::gui::DescribeRef(item->ref).toStdString() +
                         " has no timeline to draw");
    }
  }

  // No window is ever shown, so the offscreen platform always fits; it also keeps the picture at
  // exactly --size on a high-DPI desktop.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  qInstallMessageHandler(QuietHandler);
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("zbkit"));
  QApplication::setApplicationName(QStringLiteral("zbview"));
  zb::gui::ReportView report;
  auto first_item = std::make_shared<const zb::gui::LoadedItem>(std::move(a).value());
  if (b) {
    report.setComparison(first_item,
                         std::make_shared<const zb::gui::LoadedItem>(std::move(*b).value()));
  } else {
    report.setItem(first_item);
  }
  const QImage image = report.renderImage(args.size);
  zb::Status written;
  if (zb::gui::ExportFormatForPath(args.screenshot) == zb::gui::ExportFormat::kPng) {
    written = zb::gui::SavePng(image, args.screenshot);
  } else {
    report.resize(args.size);
    written = zb::gui::ExportWidget(&report, args.screenshot);
  }
  if (!written.ok()) return Fail(1, written.message());
  std::printf("wrote %s (%dx%d): %s\n", args.screenshot.toLocal8Bit().constData(),
              args.size.width(), args.size.height(), report.titleText().toStdString().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Parsed before QApplication exists: the platform plugin is chosen when it is constructed.
  QStringList argv_list;
  for (int i = 0; i < argc; ++i)
    argv_list << QString::fromLocal8Bit(argv[i]);
  Arguments args;
  if (const std::optional<int> exit_code = Parse(argv_list, args)) return *exit_code;

  if (!args.splits.isEmpty()) return RunSplits(argc, argv, args);
  if (!args.diagnosis.isEmpty()) return RunDiagnosis(argc, argv, args);
  if (!args.screenshot.isEmpty()) return RunScreenshot(argc, argv, args);

  // Without a display the xcb plugin aborts; say so instead.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && !HaveDisplay()) {
    return Fail(1,
                "no display (DISPLAY and WAYLAND_DISPLAY are unset); use --screenshot, or set "
                "QT_QPA_PLATFORM=offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("zbkit"));
  QApplication::setApplicationName(QStringLiteral("zbview"));
  QApplication::setApplicationVersion(QStringLiteral(ZBKIT_VERSION));
  zb::gui::MainWindow window;
  window.show();
  if (!args.store.isEmpty()) window.openStore(args.store, args.schedule, args.compare);
  return QApplication::exec();
}
