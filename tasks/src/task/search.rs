//! The search task: type the exact record name into a search field and submit.

use super::{LayoutRng, LayoutSpec, Task, TaskKind};
use crate::expectation::Expectation;
use crate::geometry::Rect;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// A search form over a catalogue of records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchLayout {
    /// The search field's box.
    pub field: Rect,
    /// Every record the server knows.
    pub records: Vec<String>,
    /// The record the instruction names.
    pub target: String,
}

impl Task for SearchLayout {
    const KIND: TaskKind = TaskKind::Search;

    fn generate(rng: &mut LayoutRng, _index: u32) -> SearchLayout {
        // Near-miss names make "exact record" meaningful: Record-10 vs Record-100.
        let mut numbers: Vec<u32> = Vec::new();
        while numbers.len() < 24 {
            let n = rng.random_range(1..=999u32);
            if !numbers.contains(&n) {
                numbers.push(n);
            }
        }
        let target_n = numbers[rng.random_range(0..numbers.len())];
        for near in [target_n * 10, target_n * 10 + 1] {
            if near <= 9999 && !numbers.contains(&near) {
                numbers.push(near);
            }
        }
        numbers.sort_unstable();
        let records = numbers.iter().map(|n| format!("Record-{n}")).collect();
        let width = f64::from(rng.random_range(260..=520u32));
        let field = Rect::new(
            f64::from(rng.random_range(40..=1200 - 40 - 140 - width as u32)),
            f64::from(rng.random_range(120..=520u32)),
            width,
            f64::from(rng.random_range(32..=44u32)),
        );
        SearchLayout {
            field,
            records,
            target: format!("Record-{target_n}"),
        }
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn instruction(&self) -> String {
        format!(
            "Search for the exact record \"{}\": type it into the search field and submit.",
            self.target
        )
    }

    fn expectation(named: String) -> Expectation {
        Expectation::FieldText { text: named }
    }

    fn target_rect(&self) -> Option<Rect> {
        Some(self.field)
    }

    fn into_spec(self) -> LayoutSpec {
        LayoutSpec::Search(self)
    }
}
