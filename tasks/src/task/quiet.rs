//! The quiet task: an action whose only effect leaves the DOM alone. Each layout asks
//! for one of three such effects, chosen by the layout's index: put the cursor in a text
//! field (focus only), scroll a section into view (scroll only), or select a word of a
//! paragraph (selection only). The page records the effect in the ledger; its markup
//! never changes, so a policy that diffs only the DOM sees nothing happen.

use super::{LayoutRng, LayoutSpec, Task, TaskKind};
use crate::expectation::Expectation;
use crate::geometry::Rect;
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Which effect a quiet layout asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuietEffect {
    /// Put the cursor in a text field: the field takes focus, nothing else changes.
    Focus,
    /// Scroll the page until a section's heading is in view.
    Scroll,
    /// Select one word of a paragraph.
    Select,
}

impl QuietEffect {
    /// The effects in layout order: layout `index` asks for `ALL[index % 3]`.
    pub const ALL: [QuietEffect; 3] =
        [QuietEffect::Focus, QuietEffect::Scroll, QuietEffect::Select];

    /// The effect's name (`focus`, `scroll`, `select`).
    pub fn name(self) -> &'static str {
        match self {
            QuietEffect::Focus => "focus",
            QuietEffect::Scroll => "scroll",
            QuietEffect::Select => "select",
        }
    }
}

/// One item of a quiet page: a labelled text field, a section heading or a word.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuietItem {
    /// The field's label, the section's heading or the word.
    pub label: String,
    /// Where it is drawn, in page coordinates (before any scroll). For a word, the
    /// paragraph's box (the browser lays out the words).
    pub rect: Rect,
}

/// A page whose correct action changes only its focus, its scroll offset or its
/// selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuietLayout {
    /// The effect asked for.
    pub effect: QuietEffect,
    /// The fields (focus), the sections (scroll) or the paragraph's words in order
    /// (select; each word's box is the paragraph's).
    pub items: Vec<QuietItem>,
    /// The field, section or word to act on.
    pub target: String,
}

impl QuietLayout {
    /// The target's item.
    pub fn target_item(&self) -> &QuietItem {
        self.items
            .iter()
            .find(|i| i.label == self.target)
            .expect("a generated quiet layout contains its target")
    }

    /// The page's height, in CSS pixels: a scroll page is taller than the viewport.
    pub fn page_height(&self) -> f64 {
        match self.effect {
            QuietEffect::Scroll => {
                self.items
                    .iter()
                    .map(|i| i.rect.y + i.rect.height)
                    .fold(0.0, f64::max)
                    + SECTION_GAP
            }
            QuietEffect::Focus | QuietEffect::Select => 800.0,
        }
    }
}

const FIELDS: &[&str] = &[
    "Reference",
    "Contact",
    "Phone",
    "Company",
    "Postcode",
    "Department",
    "Email",
    "Invoice",
];

const SECTIONS: &[&str] = &[
    "Overview",
    "Shipping",
    "Returns",
    "Warranty",
    "Payments",
    "Privacy",
    "Accessibility",
    "Cookies",
];

const WORDS: &[&str] = &[
    "the", "harbour", "lantern", "quietly", "morning", "ledger", "copper", "window", "garden",
    "across", "river", "meadow", "orchard", "velvet", "signal", "timber", "market", "bridge",
    "silver", "thunder", "pebble", "compass", "harvest", "canvas", "beacon", "saddle", "a", "of",
    "and", "under",
];

/// The vertical distance between two sections of a scroll page.
const SECTION_GAP: f64 = 520.0;

impl Task for QuietLayout {
    const KIND: TaskKind = TaskKind::Quiet;

    fn generate(rng: &mut LayoutRng, index: u32) -> QuietLayout {
        let effect = QuietEffect::ALL[index as usize % QuietEffect::ALL.len()];
        match effect {
            QuietEffect::Focus => {
                let mut labels: Vec<&str> = FIELDS.to_vec();
                labels.shuffle(rng);
                labels.truncate(rng.random_range(4..=6usize));
                let x = f64::from(rng.random_range(60..=500u32));
                let width = f64::from(rng.random_range(220..=340u32));
                let top = f64::from(rng.random_range(130..=200u32));
                let items: Vec<QuietItem> = labels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| QuietItem {
                        label: l.to_string(),
                        rect: Rect::new(x + 130.0, top + 80.0 * i as f64, width, 32.0),
                    })
                    .collect();
                let target = items[rng.random_range(0..items.len())].label.clone();
                QuietLayout {
                    effect,
                    items,
                    target,
                }
            }
            QuietEffect::Scroll => {
                let mut labels: Vec<&str> = SECTIONS.to_vec();
                labels.shuffle(rng);
                labels.truncate(rng.random_range(5..=8usize));
                let x = f64::from(rng.random_range(40..=300u32));
                let items: Vec<QuietItem> = labels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| QuietItem {
                        label: l.to_string(),
                        rect: Rect::new(x, 120.0 + SECTION_GAP * i as f64, 400.0, 34.0),
                    })
                    .collect();
                // A section that starts below the first screen (800 px).
                let below: Vec<usize> = (0..items.len())
                    .filter(|&i| items[i].rect.y > 900.0)
                    .collect();
                let target = items[below[rng.random_range(0..below.len())]].label.clone();
                QuietLayout {
                    effect,
                    items,
                    target,
                }
            }
            QuietEffect::Select => {
                // A paragraph of words in which the target occurs exactly once.
                let candidates: Vec<&str> =
                    WORDS.iter().copied().filter(|w| w.len() >= 5).collect();
                let target = candidates[rng.random_range(0..candidates.len())];
                let count = rng.random_range(24..=36usize);
                let at = rng.random_range(3..count - 3);
                let others: Vec<&str> = WORDS.iter().copied().filter(|w| *w != target).collect();
                let rect = Rect::new(
                    f64::from(rng.random_range(40..=200u32)),
                    f64::from(rng.random_range(140..=300u32)),
                    f64::from(rng.random_range(600..=800u32)),
                    160.0,
                );
                let items = (0..count)
                    .map(|i| QuietItem {
                        label: if i == at {
                            target.to_string()
                        } else {
                            others[rng.random_range(0..others.len())].to_string()
                        },
                        rect,
                    })
                    .collect();
                QuietLayout {
                    effect,
                    items,
                    target: target.to_string(),
                }
            }
        }
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn instruction(&self) -> String {
        match self.effect {
            QuietEffect::Focus => format!("Put the cursor in the \"{}\" field.", self.target),
            QuietEffect::Scroll => {
                format!(
                    "Scroll down until the section \"{}\" is in view.",
                    self.target
                )
            }
            QuietEffect::Select => {
                format!("Select the word \"{}\" in the paragraph.", self.target)
            }
        }
    }

    fn expectation(named: String) -> Expectation {
        Expectation::QuietEffect { named }
    }

    /// The field, the section's heading (in page coordinates: below the first screen
    /// until the page is scrolled) or the paragraph holding the word.
    fn target_rect(&self) -> Option<Rect> {
        Some(self.target_item().rect)
    }

    fn into_spec(self) -> LayoutSpec {
        LayoutSpec::Quiet(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layout;

    #[test]
    fn layouts_take_turns_at_the_three_effects() {
        for index in 0..9u32 {
            let l = Layout::generate(TaskKind::Quiet, index, 5);
            let LayoutSpec::Quiet(q) = &l.spec else {
                panic!("a quiet layout")
            };
            assert_eq!(q.effect, QuietEffect::ALL[index as usize % 3]);
            assert!(l.instruction().text.contains(&format!("\"{}\"", q.target)));
            match q.effect {
                QuietEffect::Focus => assert!(q.items.len() >= 4),
                QuietEffect::Scroll => {
                    assert!(q.target_item().rect.y > 900.0);
                    assert!(q.page_height() > q.target_item().rect.y + 400.0);
                }
                QuietEffect::Select => {
                    let n = q.items.iter().filter(|i| i.label == q.target).count();
                    assert_eq!(n, 1, "the word occurs once");
                }
            }
        }
    }
}
