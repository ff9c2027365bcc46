//! The plot writer: the three heatmaps, the forest plot of paired differences, the
//! recovery bars (with episodes) and the click overlay (when a fired unscaled click has its
//! screenshot), each as SVG and PNG under `plots/`.

use super::compute::{Analysis, Heatmap};
use super::{Report, ReportFiles};
use crate::plots::{self, PlotFiles, PlotLabels, RateSense};
use anyhow::Result;
use std::path::Path;

/// Writes every plot.
pub struct Plots;

impl Report for Plots {
    fn write(&self, a: &Analysis<'_>, out: &Path, files: &mut ReportFiles) -> Result<()> {
        let dir = out.join("plots");
        let mut add = |f: PlotFiles| files.plots.extend([f.svg, f.png]);
        let heatmap = |h: &Heatmap, labels: PlotLabels, sense: RateSense, stem: &str| {
            plots::heatmap(
                &h.cells,
                &h.rows,
                a.policies,
                &labels,
                sense,
                dir.join(stem),
            )
        };
        add(heatmap(
            &a.detection_heatmap,
            PlotLabels::new("Detection: caught / fired", "policy", "fault"),
            RateSense::HigherIsBetter,
            "detection_heatmap",
        )?);
        add(heatmap(
            &a.layer_heatmap,
            PlotLabels::new("Detection by layer: caught / fired", "policy", "layer"),
            RateSense::HigherIsBetter,
            "layer_heatmap",
        )?);
        add(heatmap(
            &a.false_alarm_heatmap,
            PlotLabels::new("False alarms on working trials", "policy", "task"),
            RateSense::LowerIsBetter,
            "false_alarm_heatmap",
        )?);
        add(plots::forest(
            &a.forest,
            &PlotLabels::new(
                "Paired differences in caught rate (later policy minus earlier)",
                "difference in caught rate",
                "",
            ),
            dir.join("paired_differences"),
        )?);
        if a.recovery.is_some() {
            add(plots::recovery_bars(
                &a.recovery_bars,
                &PlotLabels::new(
                    "Recovery: success rate on fired episodes",
                    "task",
                    "success rate",
                ),
                dir.join("recovery_bars"),
            )?);
        }
        if let Some(o) = &a.overlay {
            let title = format!(
                "{}: intended point (green) vs the unscaled click (red), image coordinates",
                o.trial_key
            );
            add(plots::click_overlay(
                &o.png,
                o.intended,
                o.clicked,
                &title,
                dir.join("click_overlay"),
            )?);
        }
        Ok(())
    }
}
