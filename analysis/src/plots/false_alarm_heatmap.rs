//! The false-alarm heatmap: task (rows) × policy (columns), each cell coloured by the share
//! of working trials (no fault fired) in which the policy raised an alarm anyway.
//!
//! A thin wrapper over the shared [`heatmap`](super::heatmap) with
//! [`RateSense::LowerIsBetter`]: the colour's intensity is still the rate, but the hue is red
//! (white = no false alarms = good, dark red = bad). See `heatmap.rs` for the layout, the
//! "n/a" cells, the sizes and the errors.

use std::path::Path;

use super::{heatmap, HeatmapCell, PlotError, PlotFiles, PlotLabels, RateSense};

/// Draws the false-alarm heatmap to `<stem>.svg` and `<stem>.png`.
///
/// * `cells`: one per (task, policy) with `numerator` = false alarms and `denominator` =
///   working trials; a missing cell, or one with no working trials, is drawn as "n/a".
/// * `rows`: the tasks, top to bottom, in this order; `columns`: the policies, left to
///   right, in this order. Neither is sorted.
/// * `labels`: the title, `x` describing the columns and `y` the rows.
///
/// Size 900 × (120 + 60 × rows). No rows or no columns draws a "no data" page.
pub fn false_alarm_heatmap(
    cells: &[HeatmapCell],
    rows: &[String],
    columns: &[String],
    labels: &PlotLabels,
    stem: impl AsRef<Path>,
) -> Result<PlotFiles, PlotError> {
    heatmap(cells, rows, columns, labels, RateSense::LowerIsBetter, stem)
}
