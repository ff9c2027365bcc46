//! The form task: type a note and press Save once; the server writes it through an
//! idempotency key.

use super::{LayoutRng, LayoutSpec, Task, TaskKind};
use crate::expectation::Expectation;
use crate::geometry::Rect;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// A notes form: a text field, a Save button that writes through the server with an
/// idempotency key, and the list of notes already saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormLayout {
    /// The text field's box in the page.
    pub field: Rect,
    /// The Save button's box in the page.
    pub save: Rect,
    /// Notes saved before the task starts (never the target).
    pub existing: Vec<String>,
    /// The note to save.
    pub target: String,
}

const NOTE_VERBS: &[&str] = &[
    "Buy", "Call", "Email", "Pay", "Renew", "Book", "Order", "Return", "Check", "Print",
];
const NOTE_OBJECTS: &[&str] = &[
    "milk",
    "the plumber",
    "Ada",
    "rent",
    "passport",
    "flights",
    "paper",
    "parcel",
    "tyres",
    "tickets",
    "invoice",
    "lamps",
];

impl Task for FormLayout {
    const KIND: TaskKind = TaskKind::Form;

    fn generate(rng: &mut LayoutRng, _index: u32) -> FormLayout {
        let note = |rng: &mut LayoutRng| {
            format!(
                "{} {} {}",
                NOTE_VERBS[rng.random_range(0..NOTE_VERBS.len())],
                NOTE_OBJECTS[rng.random_range(0..NOTE_OBJECTS.len())],
                rng.random_range(2..=99u32)
            )
        };
        let target = note(rng);
        let mut existing = Vec::new();
        let n = rng.random_range(2..=5usize);
        while existing.len() < n {
            let e = note(rng);
            if e != target && !existing.contains(&e) {
                existing.push(e);
            }
        }
        let width = f64::from(rng.random_range(280..=460u32));
        let height = f64::from(rng.random_range(34..=44u32));
        let x = f64::from(rng.random_range(40..=(1200 - 40 - 150 - width as u32)));
        let y = f64::from(rng.random_range(130..=420u32));
        let field = Rect::new(x, y, width, height);
        let save = Rect::new(
            x + width + 14.0,
            y,
            f64::from(rng.random_range(90..=130u32)),
            height,
        );
        FormLayout {
            field,
            save,
            existing,
            target,
        }
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn instruction(&self) -> String {
        format!(
            "Save the note \"{}\": type it into the note field and press Save once.",
            self.target
        )
    }

    fn expectation(named: String) -> Expectation {
        Expectation::NoteSaved { text: named }
    }

    fn target_rect(&self) -> Option<Rect> {
        Some(self.save)
    }

    fn into_spec(self) -> LayoutSpec {
        LayoutSpec::Form(self)
    }
}
