//! What an instruction says must be true after the action, in public words.
//!
//! An [`Expectation`] is read from the instruction's *text* (see
//! [`crate::Instruction::expectation`]): it is exactly what an agent harness that was
//! handed the instruction could know. Verification policies build their expectation this
//! way, so they never need the layout or the ledger. Which variant a task's instruction
//! states is part of the task ([`crate::task::Task::expectation`]).

use serde::{Deserialize, Serialize};

/// What the instruction says must be true after the action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Expectation {
    /// The search field reads back exactly `text` and the search was submitted.
    FieldText {
        /// The text the field must read back.
        text: String,
    },
    /// The item labelled `label` is the selected one in the top document.
    SelectedItem {
        /// The label of the item that must be selected.
        label: String,
    },
    /// The row labelled `label` is selected inside a child frame.
    SelectedRowInFrame {
        /// The label of the row that must be selected.
        label: String,
    },
    /// The observation the agent received shows `label`'s value.
    ValueShown {
        /// The label whose value must be shown.
        label: String,
    },
    /// The saved-notes list shows `text` exactly once.
    NoteSaved {
        /// The note's text.
        text: String,
    },
    /// The select control reads back `option`.
    OptionChosen {
        /// The option the select must read back.
        option: String,
    },
    /// The named field has the focus, the named section is in view, or the named word is
    /// selected (the quiet task: which of the three, the instruction's verb says; the
    /// name alone does not).
    QuietEffect {
        /// The field's label, the section's heading or the word.
        named: String,
    },
    /// What the MiniWoB++ page's own instruction (its `#query` box) asks holds on the
    /// page; `task` is the MiniWoB++ task name, which says how to read the query.
    MiniwobQuery {
        /// The MiniWoB++ task name.
        task: String,
    },
}

impl Expectation {
    /// The name the expectation is about (the instruction's quoted target).
    pub fn named(&self) -> &str {
        match self {
            Expectation::FieldText { text } | Expectation::NoteSaved { text } => text,
            Expectation::OptionChosen { option } => option,
            Expectation::MiniwobQuery { task } => task,
            Expectation::QuietEffect { named } => named,
            Expectation::SelectedItem { label }
            | Expectation::SelectedRowInFrame { label }
            | Expectation::ValueShown { label } => label,
        }
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
}
