// SPDX-License-Identifier: Apache-2.0
#include "export.h"

#include <QBuffer>
#include <QCoreApplication>
#include <QFileInfo>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <algorithm>

#include "zbkit/gui/palette.h"

namespace zb::gui {
namespace {

Status WriteBytes(const QString& path, const QByteArray& bytes) {
  // QSaveFile writes beside the target and renames, so a failed export never leaves a truncated
  // file where a good one was.
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) {
    return IoError(path.toStdString() + ": cannot write: " + file.errorString().toStdString());
  }
  if (file.write(bytes) != bytes.size() || !file.commit()) {
    return IoError(path.toStdString() + ": cannot write: " + file.errorString().toStdString());
  }
  return Status::Ok();
}

}  // namespace

std::optional<ExportFormat> ExportFormatForPath(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("png")) return ExportFormat::kPng;
  if (suffix == QLatin1String("svg")) return ExportFormat::kSvg;
  if (suffix == QLatin1String("pdf")) return ExportFormat::kPdf;
  return std::nullopt;
}

Status SavePng(const QImage& image, const QString& path) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (image.isNull() || !image.save(&buffer, "PNG")) {
    return IoError(path.toStdString() + ": cannot encode the image as PNG");
  }
  return WriteBytes(path, bytes);
}

Status ExportWidget(QWidget* widget, const QString& path) {
  const std::optional<ExportFormat> format = ExportFormatForPath(path);
  if (!format) {
    return UsageError(path.toStdString() + ": unknown export format (use .png, .svg or .pdf)");
  }
  if (widget == nullptr) return UsageError(path.toStdString() + ": nothing to export");
  if (!widget->isVisible()) {
    // render() lays out a hidden window before painting, which can change the widget's size; a
    // one-pixel render first settles it, so the output has the size that is then painted.
    QImage settle(1, 1, QImage::Format_ARGB32_Premultiplied);
    widget->render(&settle, QPoint(), QRegion(0, 0, 1, 1));
  }
  if (widget->width() <= 0 || widget->height() <= 0) {
    return UsageError(path.toStdString() + ": nothing to export (the view is empty)");
  }
  const QSize size = widget->size();
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  switch (*format) {
    case ExportFormat::kPng: {
      QImage image(size, QImage::Format_ARGB32_Premultiplied);
      image.fill(PageColor());
      widget->render(&image);
      if (!image.save(&buffer, "PNG")) {
        return IoError(path.toStdString() + ": cannot encode the image as PNG");
      }
      break;
    }
    case ExportFormat::kSvg: {
      QSvgGenerator generator;
      generator.setOutputDevice(&buffer);
      generator.setSize(size);
      generator.setViewBox(QRect(QPoint(0, 0), size));
      generator.setTitle(QStringLiteral("zbview"));
      generator.setDescription(widget->windowTitle());
      QPainter painter;
      if (!painter.begin(&generator)) {
        return IoError(path.toStdString() + ": cannot start the SVG painter");
      }
      widget->render(&painter);
      painter.end();
      break;
    }
    case ExportFormat::kPdf: {
      QPdfWriter writer(&buffer);
      writer.setCreator(QStringLiteral("zbview"));
      writer.setTitle(widget->windowTitle());
      // One page the size of the view: 96 px per inch, so the page is as wide as the screen.
      writer.setResolution(96);
      writer.setPageSize(QPageSize(QSizeF(size.width() * 72.0 / 96.0, size.height() * 72.0 / 96.0),
                                   QPageSize::Point, QString(), QPageSize::ExactMatch));
      writer.setPageMargins(QMarginsF(0, 0, 0, 0));
      QPainter painter;
      if (!painter.begin(&writer)) {
        return IoError(path.toStdString() + ": cannot start the PDF painter");
      }
      const double scale = std::min(static_cast<double>(writer.width()) / size.width(),
                                    static_cast<double>(writer.height()) / size.height());
      painter.scale(scale, scale);
      widget->render(&painter);
      painter.end();
      break;
    }
  }
  buffer.close();
  if (bytes.isEmpty()) return IoError(path.toStdString() + ": the renderer produced nothing");
  return WriteBytes(path, bytes);
}

}  // namespace zb::gui
