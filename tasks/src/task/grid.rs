//! The grid task: click one numbered button among many, at seeded positions with holes
//! and gaps of blank space.

use super::{LayoutRng, LayoutSpec, Task, TaskKind};
use crate::expectation::Expectation;
use crate::geometry::{Point, Rect, IMAGE, VIEWPORT};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One button of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridItem {
    /// The button's label.
    pub label: String,
    /// The button's box in the page.
    pub rect: Rect,
}

/// Where the unscaled (3/4) point of the grid target lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnscaledLanding {
    /// It lands on another button.
    OtherItem,
    /// It lands on blank space, hitting no button.
    Blank,
}

/// Numbered buttons at seeded positions, with holes and gaps of blank space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridLayout {
    /// The buttons, in DOM order.
    pub items: Vec<GridItem>,
    /// The label of the button to click.
    pub target: String,
    /// What the target's unscaled point hits (checked at generation time).
    pub unscaled_landing: UnscaledLanding,
}

impl Task for GridLayout {
    const KIND: TaskKind = TaskKind::Grid;

    /// The index decides which kind of miss the unscaled-coordinates fault produces, so
    /// that every run of N layouts has both in equal share (even: another item, odd:
    /// blank space) instead of whatever a coin flip gives.
    fn generate(rng: &mut LayoutRng, index: u32) -> GridLayout {
        let wanted = if index.is_multiple_of(2) {
            UnscaledLanding::OtherItem
        } else {
            UnscaledLanding::Blank
        };
        // Draw whole arrangements until one has a target whose unscaled point lands the
        // wanted way; almost every arrangement has several candidates of each kind.
        for _ in 0..10_000 {
            let cols = rng.random_range(4..=8u32);
            let rows = rng.random_range(3..=6u32);
            let w = f64::from(rng.random_range(70..=120u32));
            let h = f64::from(rng.random_range(40..=64u32));
            let gap_x = f64::from(rng.random_range(8..=70u32));
            let gap_y = f64::from(rng.random_range(8..=60u32));
            let total_w = f64::from(cols) * w + f64::from(cols - 1) * gap_x;
            let total_h = f64::from(rows) * h + f64::from(rows - 1) * gap_y;
            if total_w > 1140.0 || total_h > 640.0 {
                continue;
            }
            let ox = f64::from(rng.random_range(30..=(1170 - total_w as u32)));
            let oy = f64::from(rng.random_range(110..=(790 - total_h as u32)));
            let mut numbers: Vec<u32> = (1..=cols * rows).collect();
            numbers.shuffle(rng);
            let mut items = Vec::new();
            for r in 0..rows {
                for c in 0..cols {
                    let n = numbers[(r * cols + c) as usize];
                    // Holes: about one cell in six stays blank.
                    if rng.random_range(0..6) == 0 {
                        continue;
                    }
                    items.push(GridItem {
                        label: format!("Item {n}"),
                        rect: Rect::new(
                            ox + f64::from(c) * (w + gap_x),
                            oy + f64::from(r) * (h + gap_y),
                            w,
                            h,
                        ),
                    });
                }
            }
            let mut candidates: Vec<usize> = (0..items.len())
                .filter(|&i| landing(&items, i) == Some(wanted))
                .collect();
            if candidates.is_empty() {
                continue;
            }
            candidates.sort_unstable();
            let t = candidates[rng.random_range(0..candidates.len())];
            return GridLayout {
                target: items[t].label.clone(),
                items,
                unscaled_landing: wanted,
            };
        }
        unreachable!("grid generation always finds a target within 10,000 draws")
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn instruction(&self) -> String {
        format!("Click the button \"{}\".", self.target)
    }

    fn expectation(named: String) -> Expectation {
        Expectation::SelectedItem { label: named }
    }

    fn target_rect(&self) -> Option<Rect> {
        self.items
            .iter()
            .find(|i| i.label == self.target)
            .map(|i| i.rect)
    }

    fn into_spec(self) -> LayoutSpec {
        LayoutSpec::Grid(self)
    }
}

/// The point the executor clicks when it forgets to scale image coordinates: the
/// model's image point (rounded, as a model writes integers) used as a viewport point.
pub fn unscaled_point(viewport_target: Point) -> Point {
    let image = viewport_target.scale(VIEWPORT, IMAGE);
    Point::new(image.x.round(), image.y.round())
}

/// Where the unscaled point of item `t` lands, with a 4 px safety margin so that
/// sub-pixel rounding can never flip the outcome; `None` when it is too close to call
/// or lands on the target itself.
fn landing(items: &[GridItem], t: usize) -> Option<UnscaledLanding> {
    let p = unscaled_point(items[t].rect.center());
    if items[t].rect.clear_of(p, 4.0) {
        if let Some(i) = items.iter().position(|it| it.rect.contains(p)) {
            return (i != t && items[i].rect.contains_with_margin(p, 4.0))
                .then_some(UnscaledLanding::OtherItem);
        }
        if items.iter().all(|it| it.rect.clear_of(p, 4.0)) {
            return Some(UnscaledLanding::Blank);
        }
    }
    None
}
