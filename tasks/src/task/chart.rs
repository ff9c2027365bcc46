//! The chart task: hover a bar, wait for its tooltip, and report the value it shows.

use super::{LayoutRng, LayoutSpec, Task, TaskKind};
use crate::expectation::Expectation;
use crate::geometry::Rect;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One bar of the chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartMark {
    /// The bar's label on the category axis.
    pub label: String,
    /// The bar's value, shown in its tooltip.
    pub value: u32,
    /// The bar's box in the page.
    pub rect: Rect,
}

/// A bar chart whose tooltip appears after a hover delay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartLayout {
    /// The plot area's box in the page.
    pub plot: Rect,
    /// The bars, left to right.
    pub marks: Vec<ChartMark>,
    /// The label of the bar whose value the task asks for.
    pub target: String,
    /// How long the pointer must rest on a bar before its tooltip appears, in milliseconds.
    pub tooltip_delay_ms: u32,
}

impl ChartLayout {
    /// The bar labelled `target`.
    pub fn target_mark(&self) -> &ChartMark {
        self.marks
            .iter()
            .find(|m| m.label == self.target)
            .expect("generated chart contains its target")
    }
}

const MONTHS: &[&str] = &[
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl Task for ChartLayout {
    const KIND: TaskKind = TaskKind::Chart;

    fn generate(rng: &mut LayoutRng, _index: u32) -> ChartLayout {
        let n = rng.random_range(5..=8usize);
        let start = rng.random_range(0..MONTHS.len());
        let bar_w = f64::from(rng.random_range(40..=80u32));
        let gap = f64::from(rng.random_range(16..=48u32));
        let plot_h = f64::from(rng.random_range(260..=360u32));
        let plot_w = n as f64 * (bar_w + gap) + gap;
        let plot = Rect::new(
            f64::from(rng.random_range(60..=(1140 - plot_w as u32))),
            f64::from(rng.random_range(150..=(760 - plot_h as u32))),
            plot_w,
            plot_h,
        );
        let mut values: Vec<u32> = Vec::new();
        while values.len() < n {
            let v = rng.random_range(12..=99u32);
            if !values.contains(&v) {
                values.push(v);
            }
        }
        let marks: Vec<ChartMark> = (0..n)
            .map(|i| {
                let value = values[i];
                let bar_h = (plot_h - 20.0) * f64::from(value) / 100.0;
                ChartMark {
                    label: MONTHS[(start + i) % MONTHS.len()].to_string(),
                    value,
                    rect: Rect::new(
                        plot.x + gap + i as f64 * (bar_w + gap),
                        plot.y + plot_h - bar_h,
                        bar_w,
                        bar_h,
                    ),
                }
            })
            .collect();
        let target = marks[rng.random_range(0..n)].label.clone();
        ChartLayout {
            plot,
            marks,
            target,
            tooltip_delay_ms: rng.random_range(600..=900u32),
        }
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn instruction(&self) -> String {
        format!(
            "Hover the bar for \"{}\" and report the value its tooltip shows.",
            self.target
        )
    }

    fn expectation(named: String) -> Expectation {
        Expectation::ValueShown { label: named }
    }

    fn target_rect(&self) -> Option<Rect> {
        Some(self.target_mark().rect)
    }

    fn into_spec(self) -> LayoutSpec {
        LayoutSpec::Chart(self)
    }
}
