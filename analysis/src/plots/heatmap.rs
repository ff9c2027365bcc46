//! The rate heatmap: the report's detection (fault × policy, [`RateSense::HigherIsBetter`]),
//! layer (layer × policy, the same) and false-alarm (task × policy,
//! [`RateSense::LowerIsBetter`]) plots.
//!
//! Rows and columns are drawn in the order given (never sorted). Each cell shows
//! `numerator/denominator` and the rate as a percentage, filled from a sequential
//! [`ColourScale`] whose intensity is always the rate (0 = white). The [`RateSense`] picks
//! the hue: blue where a high rate is good, red where a high rate is bad. A cell with a zero
//! denominator, or with no [`HeatmapCell`] at all, is light grey with grey hatching and says
//! "n/a" (with `0/0` above it when the cell was given). A colour bar on the right gives the
//! scale.
//!
//! Size: 900 × (120 + 60 × rows) pixels; with no rows or no columns, a 900 × 180 "no data"
//! page.

use std::collections::HashMap;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::{FontTransform, RGBColor};

use super::{
    draw_no_data, draw_title, fit_text, percent, render, text_colour_on, text_style, text_width,
    ColourScale, DrawResult, Drawing, PlotError, PlotFiles, PlotLabels,
};

/// One cell of a rate heatmap: `numerator` out of `denominator` trials (for the detection
/// heatmap, faults caught out of faults fired; for the false-alarm heatmap, false alarms out
/// of working trials).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeatmapCell {
    /// The row's name; must be one of the `rows` passed to the plot.
    pub row: String,
    /// The column's name; must be one of the `columns` passed to the plot.
    pub column: String,
    /// How many of the trials counted (must not exceed `denominator`).
    pub numerator: u64,
    /// How many trials there were; 0 draws an "n/a" cell.
    pub denominator: u64,
}

/// Whether a high rate is good or bad, which picks the heatmap's colour scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateSense {
    /// A high rate is good (detection): [`ColourScale::Blues`].
    HigherIsBetter,
    /// A low rate is good (false alarms): [`ColourScale::Reds`].
    LowerIsBetter,
}

impl RateSense {
    /// The colour scale for this sense.
    pub fn scale(self) -> ColourScale {
        match self {
            RateSense::HigherIsBetter => ColourScale::Blues,
            RateSense::LowerIsBetter => ColourScale::Reds,
        }
    }
}

pub(crate) const WIDTH: u32 = 900;
const GRID_TOP: i32 = 100;
const CELL_H: i32 = 60;
/// Room on the right for the colour bar and its labels.
const COLOUR_BAR_AREA: i32 = 110;
const NA_FILL: RGBColor = RGBColor(0xee, 0xee, 0xee);
const NA_HATCH: RGBColor = RGBColor(0xc8, 0xc8, 0xc8);
const NA_TEXT: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// Draws a rate heatmap of `cells` with rows and columns in the given order (see the module
/// docs) to `<stem>.svg` and `<stem>.png`. `labels.x` describes the columns (drawn above
/// them), `labels.y` the rows (drawn vertically on the left).
///
/// Errors ([`PlotError::Input`], before anything is written): a duplicate name in `rows` or
/// `columns`; a cell whose row or column is not listed; two cells for the same row and
/// column; a numerator above its denominator.
pub fn heatmap(
    cells: &[HeatmapCell],
    rows: &[String],
    columns: &[String],
    labels: &PlotLabels,
    sense: RateSense,
    stem: impl AsRef<Path>,
) -> Result<PlotFiles, PlotError> {
    let model = HeatmapModel::new(cells, rows, columns, labels, sense)?;
    render(stem.as_ref(), &model)
}

pub(crate) struct HeatmapModel {
    labels: PlotLabels,
    rows: Vec<String>,
    columns: Vec<String>,
    /// `values[row][column]`: `(numerator, denominator)` if a cell was given.
    values: Vec<Vec<Option<(u64, u64)>>>,
    scale: ColourScale,
}

fn index_of(names: &[String], what: &str) -> Result<HashMap<String, usize>, PlotError> {
    let mut index = HashMap::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        if index.insert(name.clone(), i).is_some() {
            return Err(PlotError::Input(format!("{what} {name:?} is listed twice")));
        }
    }
    Ok(index)
}

impl HeatmapModel {
    pub(crate) fn new(
        cells: &[HeatmapCell],
        rows: &[String],
        columns: &[String],
        labels: &PlotLabels,
        sense: RateSense,
    ) -> Result<Self, PlotError> {
        let row_index = index_of(rows, "row")?;
        let column_index = index_of(columns, "column")?;
        let mut values = vec![vec![None; columns.len()]; rows.len()];
        for cell in cells {
            let r = *row_index.get(&cell.row).ok_or_else(|| {
                PlotError::Input(format!("cell row {:?} is not in the row list", cell.row))
            })?;
            let c = *column_index.get(&cell.column).ok_or_else(|| {
                PlotError::Input(format!(
                    "cell column {:?} is not in the column list",
                    cell.column
                ))
            })?;
            if cell.numerator > cell.denominator {
                return Err(PlotError::Input(format!(
                    "cell ({:?}, {:?}) has numerator {} above its denominator {}",
                    cell.row, cell.column, cell.numerator, cell.denominator
                )));
            }
            let slot: &mut Option<(u64, u64)> = &mut values[r][c];
            if slot.is_some() {
                return Err(PlotError::Input(format!(
                    "cell ({:?}, {:?}) is given twice",
                    cell.row, cell.column
                )));
            }
            *slot = Some((cell.numerator, cell.denominator));
        }
        Ok(HeatmapModel {
            labels: labels.clone(),
            rows: rows.to_vec(),
            columns: columns.to_vec(),
            values,
            scale: sense.scale(),
        })
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty() || self.columns.is_empty()
    }
}

impl Drawing for HeatmapModel {
    fn size(&self) -> (u32, u32) {
        let rows = if self.is_empty() { 1 } else { self.rows.len() };
        (WIDTH, 120 + 60 * rows as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        if self.is_empty() {
            return draw_no_data(root, &self.labels.title);
        }
        draw_title(root, &self.labels.title)?;

        let n_rows = self.rows.len() as i32;
        let grid_bottom = GRID_TOP + CELL_H * n_rows;
        let grid_right = WIDTH as i32 - COLOUR_BAR_AREA;

        // Left: the rows' description (rotated) and the row names.
        let left_pad = if self.labels.y.is_empty() { 12 } else { 40 };
        if !self.labels.y.is_empty() {
            let style = text_style(16.0, BLACK, HPos::Center, VPos::Center)
                .transform(FontTransform::Rotate270);
            let label = fit_text(&self.labels.y, &style, (CELL_H * n_rows) as u32);
            root.draw_text(&label, &style, (18, (GRID_TOP + grid_bottom) / 2))?;
        }
        let row_style = text_style(14.0, BLACK, HPos::Right, VPos::Center);
        let widest_row = self
            .rows
            .iter()
            .map(|r| text_width(r, &row_style) as i32)
            .max()
            .unwrap_or(0);
        let grid_left = (left_pad + widest_row + 10).clamp(left_pad + 60, 380);
        let row_room = (grid_left - left_pad - 10).max(0) as u32;
        for (i, name) in self.rows.iter().enumerate() {
            let cy = GRID_TOP + CELL_H * i as i32 + CELL_H / 2;
            let name = fit_text(name, &row_style, row_room);
            root.draw_text(&name, &row_style, (grid_left - 8, cy))?;
        }

        // Top: the columns' description and the column names.
        let cell_w = (grid_right - grid_left) as f64 / self.columns.len() as f64;
        let x_at = |j: usize| grid_left + (cell_w * j as f64).round() as i32;
        if !self.labels.x.is_empty() {
            let style = text_style(16.0, BLACK, HPos::Center, VPos::Center);
            let label = fit_text(&self.labels.x, &style, (grid_right - grid_left) as u32);
            root.draw_text(&label, &style, ((grid_left + grid_right) / 2, 54))?;
        }
        let column_style = text_style(14.0, BLACK, HPos::Center, VPos::Center);
        for (j, name) in self.columns.iter().enumerate() {
            let room = (x_at(j + 1) - x_at(j) - 6).max(0) as u32;
            let name = fit_text(name, &column_style, room);
            root.draw_text(&name, &column_style, ((x_at(j) + x_at(j + 1)) / 2, 84))?;
        }

        // The cells.
        let big = (cell_w * 0.26).clamp(9.0, 17.0);
        let small = (big * 0.8).max(8.0);
        for (i, row) in self.values.iter().enumerate() {
            let y0 = GRID_TOP + CELL_H * i as i32;
            let y1 = y0 + CELL_H;
            let cy = y0 + CELL_H / 2;
            for (j, value) in row.iter().enumerate() {
                let (x0, x1) = (x_at(j), x_at(j + 1));
                let cx = (x0 + x1) / 2;
                match *value {
                    Some((n, d)) if d > 0 => {
                        let rate = n as f64 / d as f64;
                        let fill = self.scale.colour(rate);
                        root.draw(&Rectangle::new(
                            [(x0 + 1, y0 + 1), (x1 - 1, y1 - 1)],
                            fill.filled(),
                        ))?;
                        let ink = text_colour_on(fill);
                        let style = text_style(big, ink, HPos::Center, VPos::Center);
                        root.draw_text(&format!("{n}/{d}"), &style, (cx, cy - 9))?;
                        let style = text_style(small, ink, HPos::Center, VPos::Center);
                        root.draw_text(&percent(rate), &style, (cx, cy + 12))?;
                    }
                    other => {
                        draw_hatched(root, (x0 + 1, y0 + 1), (x1 - 1, y1 - 1))?;
                        let style = text_style(small, NA_TEXT, HPos::Center, VPos::Center);
                        if let Some((n, d)) = other {
                            let big_style = text_style(big, NA_TEXT, HPos::Center, VPos::Center);
                            root.draw_text(&format!("{n}/{d}"), &big_style, (cx, cy - 9))?;
                            root.draw_text("n/a", &style, (cx, cy + 12))?;
                        } else {
                            root.draw_text("n/a", &style, (cx, cy))?;
                        }
                    }
                }
            }
        }

        self.draw_colour_bar(root, grid_right, grid_bottom)
    }
}

impl HeatmapModel {
    fn draw_colour_bar<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        grid_right: i32,
        grid_bottom: i32,
    ) -> DrawResult<DB> {
        const BANDS: i32 = 50;
        let x0 = grid_right + 24;
        let x1 = x0 + 16;
        let (top, bottom) = (GRID_TOP + 1, grid_bottom - 1);
        let height = bottom - top;
        for b in 0..BANDS {
            // Band 0 is at the top and holds rate 1.
            let ya = top + height * b / BANDS;
            let yb = top + height * (b + 1) / BANDS;
            let rate = 1.0 - (b as f64 + 0.5) / BANDS as f64;
            root.draw(&Rectangle::new(
                [(x0, ya), (x1, yb)],
                self.scale.colour(rate).filled(),
            ))?;
        }
        root.draw(&Rectangle::new(
            [(x0, top), (x1, bottom)],
            BLACK.stroke_width(1),
        ))?;
        let style = text_style(12.0, BLACK, HPos::Left, VPos::Center);
        root.draw_text("100%", &style, (x1 + 5, top))?;
        root.draw_text("0%", &style, (x1 + 5, bottom))?;
        if height >= 80 {
            root.draw_text("50%", &style, (x1 + 5, (top + bottom) / 2))?;
        }
        Ok(())
    }
}

/// A light grey rectangle with grey diagonal hatching, clipped to the rectangle.
fn draw_hatched<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    (x0, y0): (i32, i32),
    (x1, y1): (i32, i32),
) -> DrawResult<DB> {
    root.draw(&Rectangle::new([(x0, y0), (x1, y1)], NA_FILL.filled()))?;
    let (w, h) = (x1 - x0, y1 - y0);
    if w <= 0 || h <= 0 {
        return Ok(());
    }
    // Lines x + y = k (local coordinates), running from bottom-left to top-right.
    let mut k = 10;
    while k < w + h {
        let ya = (k - w).max(0);
        let yb = k.min(h);
        let from = (x0 + k - ya, y0 + ya);
        let to = (x0 + k - yb, y0 + yb);
        root.draw(&PathElement::new(vec![from, to], NA_HATCH.stroke_width(1)))?;
        k += 12;
    }
    Ok(())
}
