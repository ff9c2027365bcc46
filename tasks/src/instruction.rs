//! Instructions (what the agent is asked) and the expectations read from them.
//!
//! An [`Expectation`] is parsed from the instruction's *text*: it is exactly what an
//! agent harness that was handed the instruction could know. Verification policies build
//! their expectation this way, so they never need the layout or the ledger.

use crate::layout::{Layout, LayoutSpec, TaskKind};
use serde::{Deserialize, Serialize};

/// The public task statement given to the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instruction {
    pub task: TaskKind,
    pub text: String,
}

impl Instruction {
    pub fn for_layout(layout: &Layout) -> Instruction {
        let text = match &layout.spec {
            LayoutSpec::Search(s) => format!(
                "Search for the exact record \"{}\": type it into the search field and submit.",
                s.target
            ),
            LayoutSpec::Grid(g) => format!("Click the button \"{}\".", g.target),
            LayoutSpec::Frame(f) => format!("Select the row \"{}\" in the orders table.", f.target),
            LayoutSpec::Chart(c) => format!(
                "Hover the bar for \"{}\" and report the value its tooltip shows.",
                c.target
            ),
            LayoutSpec::Form(f) => format!(
                "Save the note \"{}\": type it into the note field and press Save once.",
                f.target
            ),
            LayoutSpec::Select(s) => {
                format!("Choose \"{}\" as the shipping speed.", s.target)
            }
        };
        Instruction {
            task: layout.task,
            text,
        }
    }

    /// The expectation this instruction states, read from its text.
    pub fn expectation(&self) -> Result<Expectation, String> {
        Expectation::from_instruction(self)
    }
}

/// What the instruction says must be true after the action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Expectation {
    /// The search field reads back exactly `text` and the search was submitted.
    FieldText { text: String },
    /// The item labelled `label` is the selected one in the top document.
    SelectedItem { label: String },
    /// The row labelled `label` is selected inside a child frame.
    SelectedRowInFrame { label: String },
    /// The observation the agent received shows `label`'s value.
    ValueShown { label: String },
    /// The saved-notes list shows `text` exactly once.
    NoteSaved { text: String },
    /// The select control reads back `option`.
    OptionChosen { option: String },
}

impl Expectation {
    pub fn from_instruction(instruction: &Instruction) -> Result<Expectation, String> {
        let quoted = first_quoted(&instruction.text)
            .ok_or_else(|| format!("instruction has no quoted target: {:?}", instruction.text))?;
        Ok(match instruction.task {
            TaskKind::Search => Expectation::FieldText { text: quoted },
            TaskKind::Grid => Expectation::SelectedItem { label: quoted },
            TaskKind::Frame => Expectation::SelectedRowInFrame { label: quoted },
            TaskKind::Chart => Expectation::ValueShown { label: quoted },
            TaskKind::Form => Expectation::NoteSaved { text: quoted },
            TaskKind::Select => Expectation::OptionChosen { option: quoted },
        })
    }
}

/// The number an observation's text shows right after `label: ` (the chart tooltip's
/// `Mar: 57`), if any. What a reader of the observation can see, nothing more: the
/// outcome policy and the scripted agent both read values this way.
pub fn value_shown(text: &str, label: &str) -> Option<String> {
    let needle = format!("{label}: ");
    let mut from = 0;
    while let Some(pos) = text[from..].find(&needle) {
        let start = from + pos + needle.len();
        let digits: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        if !digits.is_empty() {
            return Some(digits);
        }
        from = start;
    }
    None
}

fn first_quoted(text: &str) -> Option<String> {
    let start = text.find('"')? + 1;
    let len = text[start..].find('"')?;
    Some(text[start..start + len].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_shown_reads_the_number_after_the_label() {
        assert_eq!(
            value_shown("Sales\nMar: 57\nJan", "Mar").as_deref(),
            Some("57")
        );
        assert_eq!(
            value_shown("Mar: none, Mar: 4.5", "Mar").as_deref(),
            Some("4.5")
        );
        assert_eq!(value_shown("Mar 57", "Mar"), None);
        assert_eq!(value_shown("Mars: 57", "Mar"), None);
    }

    #[test]
    fn expectation_comes_from_the_instruction_text() {
        for task in TaskKind::ALL {
            let layout = Layout::generate(task, 0, 5);
            let e = layout.instruction().expectation().unwrap();
            let named = match &e {
                Expectation::FieldText { text } | Expectation::NoteSaved { text } => text,
                Expectation::OptionChosen { option } => option,
                Expectation::SelectedItem { label }
                | Expectation::SelectedRowInFrame { label }
                | Expectation::ValueShown { label } => label,
            };
            assert_eq!(named, layout.target());
        }
        let bad = Instruction {
            task: TaskKind::Grid,
            text: "Click something".into(),
        };
        assert!(bad.expectation().is_err());
    }
}
