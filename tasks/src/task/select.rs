//! The select task: choose one option of a native `<select>`, which the page applies to
//! an order summary.

use super::{LayoutRng, LayoutSpec, Task, TaskKind};
use crate::expectation::Expectation;
use crate::geometry::Rect;
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// A native `<select>` whose choice the page applies to an order summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectLayout {
    /// The select control's box in the page.
    pub control: Rect,
    /// The option texts, in menu order.
    pub options: Vec<String>,
    /// Index of the option selected when the page loads.
    pub initial: usize,
    /// The option to choose (never the initial one).
    pub target: String,
}

impl SelectLayout {
    /// The index of `target` in `options`.
    pub fn target_index(&self) -> usize {
        self.options
            .iter()
            .position(|o| *o == self.target)
            .expect("generated select contains its target")
    }
}

const SHIPPING: &[&str] = &[
    "Standard",
    "Express",
    "Overnight",
    "Economy",
    "Priority",
    "Same day",
    "Pickup",
    "Freight",
];

impl Task for SelectLayout {
    const KIND: TaskKind = TaskKind::Select;

    fn generate(rng: &mut LayoutRng, _index: u32) -> SelectLayout {
        let mut options: Vec<String> = SHIPPING.iter().map(|s| s.to_string()).collect();
        options.shuffle(rng);
        options.truncate(rng.random_range(4..=7usize));
        let initial = rng.random_range(0..options.len());
        let mut t = rng.random_range(0..options.len() - 1);
        if t >= initial {
            t += 1;
        }
        let width = f64::from(rng.random_range(180..=320u32));
        let control = Rect::new(
            f64::from(rng.random_range(40..=(1200 - 40 - width as u32))),
            f64::from(rng.random_range(140..=460u32)),
            width,
            f64::from(rng.random_range(30..=40u32)),
        );
        SelectLayout {
            control,
            initial,
            target: options[t].clone(),
            options,
        }
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn instruction(&self) -> String {
        format!("Choose \"{}\" as the shipping speed.", self.target)
    }

    fn expectation(named: String) -> Expectation {
        Expectation::OptionChosen { option: named }
    }

    fn target_rect(&self) -> Option<Rect> {
        Some(self.control)
    }

    fn into_spec(self) -> LayoutSpec {
        LayoutSpec::Select(self)
    }
}
