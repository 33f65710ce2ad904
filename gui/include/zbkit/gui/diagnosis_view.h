// SPDX-License-Identifier: Apache-2.0
// DiagnosisView: a stalled or failed job as `zb doctor` reads it (docs/stalls.md, docs/zbview.md
// §12). One lane per rank: its step's program, one cell per op in program order, coloured by kind;
// the ops it finished in the step solid, the op it is in outlined (red for the culprit, dark for
// a rank that waits), the ops it has not reached pale. An arrow runs from each waiting op to the
// op of the peer that would send what it waits for, so the chain of waits reads across the lanes.
// Above the lanes the state and the culprit, below them the chain and what to do.
#ifndef ZBKIT_GUI_DIAGNOSIS_VIEW_H_
#define ZBKIT_GUI_DIAGNOSIS_VIEW_H_

#include <QLine>
#include <QRect>
#include <QString>
#include <QWidget>
#include <memory>
#include <optional>

#include "zbkit/doctor/diagnosis.h"
#include "zbkit/doctor/progress.h"

class QPainter;

namespace zb::gui {

// What the view shows: the records and their diagnosis.
struct StallReport {
  doctor::RunProgress run;
  doctor::Diagnosis diagnosis;
  bool kept = false;  // the diagnosis zb replay kept at the stall, not one made now
};

// Reads RUN_DIR's records and the diagnosis zb replay kept there (diagnosis.json), else
// diagnoses them now; one line (NotFound, InvalidInput) when there are no records or the kept
// diagnosis is not zb-diagnosis/1.
Expected<StallReport> ReadStallReport(const std::string& directory);

class DiagnosisView : public QWidget {
  Q_OBJECT

 public:
  explicit DiagnosisView(QWidget* parent = nullptr);

  void setReport(std::shared_ptr<const StallReport> report);
  const std::shared_ptr<const StallReport>& report() const { return report_; }

  // Geometry, for tests: the cell of op `index` of rank `rank`'s program (empty when there is
  // none), the arrow of the rank's wait (from its op to the peer's producing op; nullopt when it
  // waits for no one), and the title line.
  QRect opCell(int rank, int index) const;
  std::optional<QLine> waitArrow(int rank) const;
  QString titleText() const;
  // "rank 1 before it stopped: F stage 1 mb 0 12.0 ms, ...; the last ended 40.9 s ago": the
  // culprit's last ended ops from its record's history; empty without a culprit or a history.
  QString culpritHistoryText() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  struct Layout;
  Layout Place() const;
  // opCell with the layout of this size, computed once by the caller.
  QRect CellOf(const Layout& layout, const doctor::RankProgress& record, int index) const;
  void PaintLane(QPainter& painter, const Layout& layout, size_t lane) const;
  void PaintArrows(QPainter& painter) const;

  std::shared_ptr<const StallReport> report_;
};

}  // namespace zb::gui

#endif  // ZBKIT_GUI_DIAGNOSIS_VIEW_H_
