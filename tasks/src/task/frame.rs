//! The frame task: select one row of an orders table inside a same-origin iframe.

use super::{LayoutRng, LayoutSpec, Task, TaskKind};
use crate::expectation::Expectation;
use crate::geometry::Rect;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One row of the orders table inside the iframe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderRow {
    /// The order's label, which identifies its row.
    pub label: String,
    /// The customer's name.
    pub customer: String,
    /// The order total, in cents.
    pub total_cents: u32,
}

/// An orders table inside a same-origin iframe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameLayout {
    /// The iframe's box in the top document.
    pub frame: Rect,
    /// Height of a table row inside the frame.
    pub row_height: f64,
    /// Height of the table header inside the frame.
    pub header_height: f64,
    /// The table's rows, top to bottom.
    pub rows: Vec<OrderRow>,
    /// The label of the row to select.
    pub target: String,
}

impl FrameLayout {
    /// The box of row `i` in top-document coordinates (the frame has no border or
    /// padding and the table starts at its top-left corner).
    pub fn row_rect(&self, i: usize) -> Rect {
        Rect::new(
            self.frame.x,
            self.frame.y + self.header_height + self.row_height * i as f64,
            self.frame.width,
            self.row_height,
        )
    }
}

const CUSTOMERS: &[&str] = &[
    "Ada", "Brook", "Chen", "Dana", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena",
    "Mo", "Nia", "Otto", "Priya",
];

impl Task for FrameLayout {
    const KIND: TaskKind = TaskKind::Frame;

    fn generate(rng: &mut LayoutRng, _index: u32) -> FrameLayout {
        let n_rows = rng.random_range(8..=14usize);
        let row_height = f64::from(rng.random_range(26..=38u32));
        let header_height = 34.0;
        let width = f64::from(rng.random_range(420..=640u32));
        let height =
            header_height + row_height * n_rows as f64 + f64::from(rng.random_range(4..=40u32));
        let frame = Rect::new(
            f64::from(rng.random_range(40..=(1160 - width as u32))),
            f64::from(rng.random_range(110..=(790u32.saturating_sub(height as u32)).max(111))),
            width,
            height,
        );
        let mut numbers: Vec<u32> = Vec::new();
        while numbers.len() < n_rows {
            let n = rng.random_range(1..=99u32);
            if !numbers.contains(&n) {
                numbers.push(n);
            }
        }
        let rows: Vec<OrderRow> = numbers
            .iter()
            .map(|n| OrderRow {
                label: format!("Order {n}"),
                customer: CUSTOMERS[rng.random_range(0..CUSTOMERS.len())].to_string(),
                total_cents: rng.random_range(500..=99_999u32),
            })
            .collect();
        let target = rows[rng.random_range(0..rows.len())].label.clone();
        FrameLayout {
            frame,
            row_height,
            header_height,
            rows,
            target,
        }
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn instruction(&self) -> String {
        format!("Select the row \"{}\" in the orders table.", self.target)
    }

    fn expectation(named: String) -> Expectation {
        Expectation::SelectedRowInFrame { label: named }
    }

    fn target_rect(&self) -> Option<Rect> {
        self.rows
            .iter()
            .position(|r| r.label == self.target)
            .map(|i| self.row_rect(i))
    }

    fn into_spec(self) -> LayoutSpec {
        LayoutSpec::Frame(self)
    }
}
