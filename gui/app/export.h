// SPDX-License-Identifier: Apache-2.0
// Pictures out of zbview: a widget as laid out now to PNG, SVG or PDF (chosen by the file's
// extension), and an already rendered image to PNG. Writes go through QSaveFile, so a failed export
// never leaves a truncated file where a good one was. The composed picture of the headless
// screenshot is ReportView (report_view.h).
#ifndef ZBKIT_GUI_APP_EXPORT_H_
#define ZBKIT_GUI_APP_EXPORT_H_

#include <QImage>
#include <QString>
#include <QWidget>
#include <optional>

#include "zbkit/schemas/status.h"

namespace zb::gui {

enum class ExportFormat { kPng, kSvg, kPdf };

// By extension, case-insensitive: .png, .svg, .pdf. nullopt for anything else.
std::optional<ExportFormat> ExportFormatForPath(const QString& path);
// Renders `widget` as it is laid out now into `path`. Errors: kUsage for an unknown extension,
// kIo when the file cannot be written (the message names the path and why).
Status ExportWidget(QWidget* widget, const QString& path);
// Writes `image` as PNG (whatever the extension says, the caller chose the name).
Status SavePng(const QImage& image, const QString& path);

}  // namespace zb::gui

#endif  // ZBKIT_GUI_APP_EXPORT_H_
