//! Grouped bars of success rates with interval whiskers: one group per task, one bar per
//! policy within it, the bar's height the success rate, a whisker from the interval's lower
//! to upper bound, and `n=…` printed above the whisker.
//!
//! Groups and series are drawn in the order they first appear in the input (never sorted);
//! a (group, series) pair with no point leaves an empty slot so that a policy's bar is in
//! the same place in every group. Series colours come from
//! [`series_colour`](super::series_colour), with a legend on the right.
//!
//! Size: 1000 × 500 pixels, also for the "no data" page drawn when there are no points.

use std::collections::HashMap;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::RGBColor;

use super::{
    draw_no_data, draw_title, fit_text, render, series_colour, text_style, DrawResult, Drawing,
    KeyedAxis, PlotError, PlotFiles, PlotLabels,
};

/// One bar: the success rate of `series` (a policy) in `group` (a task), as proportions in
/// `0..=1`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BarPoint {
    /// The group (task) the bar belongs to; groups appear in first-seen order.
    pub group: String,
    /// The series (policy); series appear in first-seen order, with one colour each.
    pub series: String,
    /// The bar's height, e.g. the success rate, in `0..=1`.
    pub point: f64,
    /// The interval's lower bound, in `0..=1`.
    pub lower: f64,
    /// The interval's upper bound, in `0..=1`, not below `lower`.
    pub upper: f64,
    /// How many trials the rate is over; printed as `n=…` above the bar.
    pub n: u64,
}

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 500;
const LEGEND_W: u32 = 170;
const WHISKER: RGBColor = RGBColor(0x22, 0x22, 0x22);

/// Draws grouped success-rate bars to `<stem>.svg` and `<stem>.png` (1000 × 500).
///
/// `labels.x` describes the groups (e.g. "task"), `labels.y` the bar height (e.g. "success
/// rate"); the y axis runs from 0% to 100%.
///
/// Errors ([`PlotError::Input`], before anything is written): a non-finite value, a value
/// outside `0..=1`, `lower > upper`, or two points for the same group and series. No points
/// draws a "no data" page.
pub fn recovery_bars(
    points: &[BarPoint],
    labels: &PlotLabels,
    stem: impl AsRef<Path>,
) -> Result<PlotFiles, PlotError> {
    let model = BarsModel::new(points, labels)?;
    render(stem.as_ref(), &model)
}

pub(crate) struct BarsModel {
    labels: PlotLabels,
    groups: Vec<String>,
    series: Vec<String>,
    /// (group index, series index, point)
    bars: Vec<(usize, usize, BarPoint)>,
}

fn first_seen(names: &mut Vec<String>, index: &mut HashMap<String, usize>, name: &str) -> usize {
    *index.entry(name.to_string()).or_insert_with(|| {
        names.push(name.to_string());
        names.len() - 1
    })
}

impl BarsModel {
    pub(crate) fn new(points: &[BarPoint], labels: &PlotLabels) -> Result<Self, PlotError> {
        let (mut groups, mut series) = (Vec::new(), Vec::new());
        let (mut group_index, mut series_index) = (HashMap::new(), HashMap::new());
        let mut seen = HashMap::new();
        let mut bars = Vec::with_capacity(points.len());
        for p in points {
            let what = format!("bar ({:?}, {:?})", p.group, p.series);
            for (name, v) in [("point", p.point), ("lower", p.lower), ("upper", p.upper)] {
                if !v.is_finite() || !(0.0..=1.0).contains(&v) {
                    return Err(PlotError::Input(format!(
                        "{what}: {name} {v} is not a proportion in 0..=1"
                    )));
                }
            }
            if p.lower > p.upper {
                return Err(PlotError::Input(format!(
                    "{what}: lower {} is above upper {}",
                    p.lower, p.upper
                )));
            }
            let g = first_seen(&mut groups, &mut group_index, &p.group);
            let s = first_seen(&mut series, &mut series_index, &p.series);
            if seen.insert((g, s), ()).is_some() {
                return Err(PlotError::Input(format!("{what} is given twice")));
            }
            bars.push((g, s, p.clone()));
        }
        Ok(BarsModel {
            labels: labels.clone(),
            groups,
            series,
            bars,
        })
    }
}

impl Drawing for BarsModel {
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        if self.bars.is_empty() {
            return draw_no_data(root, &self.labels.title);
        }
        draw_title(root, &self.labels.title)?;
        let (chart_area, legend_area) = root.split_horizontally(WIDTH - LEGEND_W);
        let chart_area = chart_area.margin(50, 10, 10, 10);

        let n_groups = self.groups.len();
        let n_series = self.series.len();
        let centres: Vec<f64> = (0..n_groups).map(|i| i as f64 + 0.5).collect();
        let x_label_area = if self.labels.x.is_empty() { 30 } else { 55 };
        let y_label_area = if self.labels.y.is_empty() { 50 } else { 70 };
        let group_px = (WIDTH - LEGEND_W - 20 - y_label_area) / n_groups as u32;
        let label_style = text_style(13.0, BLACK, HPos::Center, VPos::Top);
        let group_names: Vec<String> = self
            .groups
            .iter()
            .map(|g| fit_text(g, &label_style, group_px.saturating_sub(8)))
            .collect();
        let x_formatter = |v: &f64| {
            let i = v.floor().max(0.0) as usize;
            group_names.get(i).cloned().unwrap_or_default()
        };
        let y_formatter = |v: &f64| format!("{:.0}%", v * 100.0);

        let mut chart = ChartBuilder::on(&chart_area)
            .x_label_area_size(x_label_area)
            .y_label_area_size(y_label_area)
            .build_cartesian_2d(KeyedAxis::new(0.0..n_groups as f64, centres), 0.0..1.0)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_labels(6)
            .x_label_formatter(&x_formatter)
            .y_label_formatter(&y_formatter)
            .label_style(text_style(13.0, BLACK, HPos::Center, VPos::Center))
            .axis_desc_style(text_style(15.0, BLACK, HPos::Center, VPos::Center))
            .x_desc(self.labels.x.as_str())
            .y_desc(self.labels.y.as_str())
            .bold_line_style(RGBColor(0xd0, 0xd0, 0xd0))
            .light_line_style(TRANSPARENT)
            .draw()?;

        let slot = 0.8 / n_series as f64;
        let x0_px = chart.backend_coord(&(0.0, 0.0)).0;
        let slot_px = (chart.backend_coord(&(slot, 0.0)).0 - x0_px) as f64;
        let n_size = (slot_px * 0.4).clamp(8.0, 12.0);
        let n_style = text_style(n_size, BLACK, HPos::Center, VPos::Bottom);
        for (g, s, p) in &self.bars {
            let left = *g as f64 + 0.1 + slot * *s as f64;
            let (a, b) = (left + 0.1 * slot, left + 0.9 * slot);
            let centre = left + 0.5 * slot;
            let colour = series_colour(*s);
            chart
                .plotting_area()
                .draw(&Rectangle::new([(a, 0.0), (b, p.point)], colour.filled()))?;
            let cap = 0.15 * slot;
            let whisker = WHISKER.stroke_width(2);
            let area = chart.plotting_area();
            area.draw(&PathElement::new(
                vec![(centre, p.lower), (centre, p.upper)],
                whisker,
            ))?;
            for y in [p.lower, p.upper] {
                area.draw(&PathElement::new(
                    vec![(centre - cap, y), (centre + cap, y)],
                    whisker,
                ))?;
            }
            // `n` above the higher of the bar and the whisker, drawn on the root so that it
            // may go into the margin above 100%.
            let (px, py) = chart.backend_coord(&(centre, p.upper.max(p.point)));
            root.draw_text(&format!("n={}", p.n), &n_style, (px, py - 4))?;
        }

        // The legend: one swatch and name per series.
        let name_style = text_style(13.0, BLACK, HPos::Left, VPos::Center);
        for (s, name) in self.series.iter().enumerate() {
            let y = 70 + 24 * s as i32;
            legend_area.draw(&Rectangle::new(
                [(10, y - 7), (24, y + 7)],
                series_colour(s).filled(),
            ))?;
            let name = fit_text(name, &name_style, LEGEND_W - 40);
            legend_area.draw_text(&name, &name_style, (32, y))?;
        }
        Ok(())
    }
}
