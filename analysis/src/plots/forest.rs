//! A forest plot of paired differences: one row per comparison, top to bottom in the given
//! order, each a point marker on a horizontal interval line with end caps, over a vertical
//! line at zero. A row whose interval excludes zero is dark blue, one that includes zero
//! grey. The right-hand column prints each row as `point [lower, upper]` with three
//! decimals.
//!
//! The x axis spans `min(lower)` to `max(upper)`, widened to include 0 (so that the zero line
//! is always visible) and padded by 5% of the span on each side (±0.05 if the span is 0).
//!
//! Size: 900 × (120 + 40 × rows) pixels; no rows draws a 900 × 160 "no data" page.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::RGBColor;

use super::{
    draw_no_data, draw_title, fit_text, render, text_style, text_width, DrawResult, Drawing,
    KeyedAxis, PlotError, PlotFiles, PlotLabels,
};

/// One comparison: a paired difference and its interval, in the data's units (e.g. a
/// difference of success rates).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForestRow {
    /// The row's label, e.g. "outcome − unverified, grid".
    pub label: String,
    /// The estimate.
    pub point: f64,
    /// The interval's lower bound.
    pub lower: f64,
    /// The interval's upper bound, not below `lower`.
    pub upper: f64,
}

const WIDTH: u32 = 900;
const ROW_H: u32 = 40;
const TEXT_COLUMN_W: u32 = 190;
const EXCLUDES_ZERO: RGBColor = RGBColor(0x08, 0x51, 0x9c);
const INCLUDES_ZERO: RGBColor = RGBColor(0x66, 0x66, 0x66);
const ZERO_LINE: RGBColor = RGBColor(0x80, 0x80, 0x80);

/// Draws a forest plot of `rows` to `<stem>.svg` and `<stem>.png`.
///
/// `labels.x` describes the difference (e.g. "difference in success rate"); `labels.y`,
/// if not empty, is drawn vertically beside the row labels.
///
/// Errors ([`PlotError::Input`], before anything is written): a non-finite value or
/// `lower > upper`. No rows draws a "no data" page.
pub fn forest(
    rows: &[ForestRow],
    labels: &PlotLabels,
    stem: impl AsRef<Path>,
) -> Result<PlotFiles, PlotError> {
    let model = ForestModel::new(rows, labels)?;
    render(stem.as_ref(), &model)
}

pub(crate) struct ForestModel {
    labels: PlotLabels,
    rows: Vec<ForestRow>,
}

impl ForestModel {
    pub(crate) fn new(rows: &[ForestRow], labels: &PlotLabels) -> Result<Self, PlotError> {
        for r in rows {
            for (name, v) in [("point", r.point), ("lower", r.lower), ("upper", r.upper)] {
                if !v.is_finite() {
                    return Err(PlotError::Input(format!(
                        "forest row {:?}: {name} is {v}",
                        r.label
                    )));
                }
            }
            if r.lower > r.upper {
                return Err(PlotError::Input(format!(
                    "forest row {:?}: lower {} is above upper {}",
                    r.label, r.lower, r.upper
                )));
            }
        }
        Ok(ForestModel {
            labels: labels.clone(),
            rows: rows.to_vec(),
        })
    }

    /// The x axis' range: min(lower)..max(upper), widened to include 0, padded.
    pub(crate) fn x_range(&self) -> (f64, f64) {
        let lo = self
            .rows
            .iter()
            .map(|r| r.lower.min(r.point))
            .fold(0.0, f64::min);
        let hi = self
            .rows
            .iter()
            .map(|r| r.upper.max(r.point))
            .fold(0.0, f64::max);
        let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.05 };
        (lo - pad, hi + pad)
    }
}

/// `v` with a sign and three decimals, never "-0.000".
fn signed(v: f64) -> String {
    let s = format!("{v:+.3}");
    if s == "-0.000" {
        "+0.000".to_string()
    } else {
        s
    }
}

impl Drawing for ForestModel {
    fn size(&self) -> (u32, u32) {
        (WIDTH, 120 + ROW_H * self.rows.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        if self.rows.is_empty() {
            return draw_no_data(root, &self.labels.title);
        }
        draw_title(root, &self.labels.title)?;
        let n = self.rows.len();
        let (chart_area, _) = root.split_horizontally(WIDTH - TEXT_COLUMN_W);
        let chart_area = chart_area.margin(45, 15, 10, 10);

        let label_style = text_style(14.0, BLACK, HPos::Right, VPos::Center);
        let widest = self
            .rows
            .iter()
            .map(|r| text_width(&r.label, &label_style))
            .max()
            .unwrap_or(0);
        let y_desc_room = if self.labels.y.is_empty() { 0 } else { 30 };
        let y_label_area = (widest + 20 + y_desc_room).clamp(80, 420);
        let fitted: Vec<String> = self
            .rows
            .iter()
            .map(|r| fit_text(&r.label, &label_style, y_label_area - 20 - y_desc_room))
            .collect();
        let x_label_area = if self.labels.x.is_empty() { 30 } else { 55 };

        let (lo, hi) = self.x_range();
        let step = (hi - lo) / 8.0;
        let decimals = (-step.log10()).ceil().clamp(0.0, 6.0) as usize;
        let x_formatter = move |v: &f64| {
            let s = format!("{v:.decimals$}");
            // Avoid "-0.00" at the zero tick.
            if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
                s[1..].to_string()
            } else {
                s
            }
        };
        // Row i is drawn at y = n - 1 - i, so that the first row is at the top.
        let y_of = |i: usize| (n - 1 - i) as f64;
        let y_formatter = |v: &f64| {
            let y = v.round();
            if y < 0.0 || y >= n as f64 {
                return String::new();
            }
            fitted[n - 1 - y as usize].clone()
        };
        let key_points: Vec<f64> = (0..n).map(|i| i as f64).collect();

        let mut chart = ChartBuilder::on(&chart_area)
            .x_label_area_size(x_label_area)
            .y_label_area_size(y_label_area)
            .build_cartesian_2d(lo..hi, KeyedAxis::new(-0.5..n as f64 - 0.5, key_points))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_labels(9)
            .x_label_formatter(&x_formatter)
            .y_label_formatter(&y_formatter)
            .label_style(text_style(13.0, BLACK, HPos::Center, VPos::Center))
            .y_label_style(text_style(14.0, BLACK, HPos::Right, VPos::Center))
            .axis_desc_style(text_style(15.0, BLACK, HPos::Center, VPos::Center))
            .x_desc(self.labels.x.as_str())
            .y_desc(self.labels.y.as_str())
            .bold_line_style(RGBColor(0xe0, 0xe0, 0xe0))
            .light_line_style(TRANSPARENT)
            .draw()?;

        let area = chart.plotting_area();
        area.draw(&PathElement::new(
            vec![(0.0, -0.5), (0.0, n as f64 - 0.5)],
            ZERO_LINE.stroke_width(1),
        ))?;

        let text_x = (WIDTH - TEXT_COLUMN_W) as i32 + 8;
        let value_style = text_style(13.0, BLACK, HPos::Left, VPos::Center);
        let header_style = text_style(13.0, RGBColor(0x44, 0x44, 0x44), HPos::Left, VPos::Bottom);
        let top_px = chart.backend_coord(&(lo, n as f64 - 0.5)).1;
        root.draw_text("estimate [interval]", &header_style, (text_x, top_px - 2))?;
        for (i, r) in self.rows.iter().enumerate() {
            let y = y_of(i);
            let excludes_zero = r.lower > 0.0 || r.upper < 0.0;
            let colour = if excludes_zero {
                EXCLUDES_ZERO
            } else {
                INCLUDES_ZERO
            };
            let line = colour.stroke_width(2);
            area.draw(&PathElement::new(vec![(r.lower, y), (r.upper, y)], line))?;
            for x in [r.lower, r.upper] {
                area.draw(&PathElement::new(vec![(x, y - 0.15), (x, y + 0.15)], line))?;
            }
            area.draw(&Circle::new((r.point, y), 5, colour.filled()))?;
            let (_, py) = chart.backend_coord(&(r.point, y));
            let text = format!(
                "{} [{}, {}]",
                signed(r.point),
                signed(r.lower),
                signed(r.upper)
            );
            root.draw_text(&text, &value_style, (text_x, py))?;
        }
        Ok(())
    }
}
