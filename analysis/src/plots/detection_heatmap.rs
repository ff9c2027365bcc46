//! The fault-detection heatmap: fault (rows) × policy (columns), each cell coloured by the
//! share of fired faults that the policy caught.
//!
//! A thin wrapper over the shared [`heatmap`](super::heatmap) with
//! [`RateSense::HigherIsBetter`] (white → dark blue). See `heatmap.rs` for the layout, the
//! "n/a" cells, the sizes and the errors.

use std::path::Path;

use super::{heatmap, HeatmapCell, PlotError, PlotFiles, PlotLabels, RateSense};

/// Draws the detection heatmap to `<stem>.svg` and `<stem>.png`.
///
/// * `cells`: one per (fault, policy) with `numerator` = faults caught and `denominator` =
///   faults fired; a missing cell, or one with nothing fired, is drawn as "n/a".
/// * `rows`: the faults, top to bottom, in this order; `columns`: the policies, left to
///   right, in this order. Neither is sorted.
/// * `labels`: the title, `x` describing the columns (e.g. "policy") and `y` the rows
///   (e.g. "fault").
///
/// Size 900 × (120 + 60 × rows). No rows or no columns draws a "no data" page.
pub fn detection_heatmap(
    cells: &[HeatmapCell],
    rows: &[String],
    columns: &[String],
    labels: &PlotLabels,
    stem: impl AsRef<Path>,
) -> Result<PlotFiles, PlotError> {
    heatmap(
        cells,
        rows,
        columns,
        labels,
        RateSense::HigherIsBetter,
        stem,
    )
}
