//! `outcome`: the page compared with the specific result the instruction asks for, one
//! check per task; the MiniWoB++ suite's checks are in [`super::miniwob`].

use crate::evidence::Evidence;
use crate::{Judgement, PolicyOutcome, Verdict, VerificationPolicy};
use faultline_tasks::Expectation;

/// Compares the page with the specific result the instruction asks for: the field text
/// read back, the selected item, the selected row inside a frame, or the value present
/// in the observation the agent received.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutcomePolicy;

impl VerificationPolicy for OutcomePolicy {
    fn name(&self) -> &str {
        "outcome"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl OutcomePolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        let expectation = match ev.instruction.expectation() {
            Ok(e) => e,
            Err(e) => return Judgement::new(Verdict::Fail, format!("Cannot verify: {e}")),
        };
        // One check per expectation, that is, per task (each task's instruction states
        // one kind of expectation: `faultline_tasks::task::Task::expectation`).
        match expectation {
            Expectation::FieldText { text } => search_field_text(ev, &text),
            Expectation::SelectedItem { label } => grid_selected_item(ev, &label),
            Expectation::SelectedRowInFrame { label } => frame_selected_row(ev, &label),
            Expectation::ValueShown { label } => chart_value_shown(&ev.after.text, &label),
            Expectation::NoteSaved { text } => form_note_saved(ev, &text),
            Expectation::OptionChosen { option } => select_option_chosen(ev, &option),
            Expectation::QuietEffect { named } => quiet_effect(ev, &named),
            Expectation::MiniwobQuery { task } => super::miniwob::miniwob_query_holds(ev, &task),
        }
    }
}

/// The search: the field reads back exactly the text, and the search was submitted.
fn search_field_text(ev: &Evidence<'_>, expected: &str) -> Judgement {
    let fields: Vec<&str> = ev
        .after_state
        .top()
        .map(|f| {
            f.controls
                .iter()
                .filter(|c| c.tag == "input" && matches!(c.kind.as_str(), "text" | "search" | ""))
                .map(|c| c.value.as_str())
                .collect()
        })
        .unwrap_or_default();
    let submitted = ev.before_state.url != ev.after_state.url;
    if fields.contains(&expected) {
        if submitted {
            Judgement::new(
                Verdict::Success,
                format!("The search field reads {expected:?} and the search was submitted."),
            )
        } else {
            Judgement::new(
                Verdict::NoChange,
                format!("The search field reads {expected:?} but nothing was submitted."),
            )
        }
    } else if let Some(other) = fields.iter().find(|v| !v.is_empty()) {
        Judgement::new(
            Verdict::Fail,
            format!("The search field reads {other:?}, expected exactly {expected:?}."),
        )
    } else {
        Judgement::new(Verdict::NoChange, "The search field is empty.")
    }
}

/// The grid: the item is the selected one in the top document.
fn grid_selected_item(ev: &Evidence<'_>, label: &str) -> Judgement {
    let selected: Vec<&str> = ev
        .after_state
        .top()
        .map(|f| f.selected.iter().map(String::as_str).collect())
        .unwrap_or_default();
    judge_selection(&selected, label, "item")
}

/// The frame: the row is selected inside a child frame.
fn frame_selected_row(ev: &Evidence<'_>, label: &str) -> Judgement {
    let selected: Vec<&str> = ev
        .after_state
        .children()
        .flat_map(|f| f.selected.iter().map(String::as_str))
        .collect();
    judge_selection(&selected, label, "row")
}

/// The form: the note must be listed exactly once: missing is no change, twice is a
/// failure (a retried submit that wrote again).
fn form_note_saved(ev: &Evidence<'_>, text: &str) -> Judgement {
    let listed = ev
        .after_state
        .top()
        .map(|f| f.text.lines().filter(|l| l.trim() == text).count())
        .unwrap_or(0);
    match listed {
        0 => Judgement::new(
            Verdict::NoChange,
            format!("The note {text:?} is not in the saved list."),
        ),
        1 => Judgement::new(
            Verdict::Success,
            format!("The note {text:?} is in the saved list."),
        ),
        n => Judgement::new(
            Verdict::Fail,
            format!("The note {text:?} is in the saved list {n} times."),
        ),
    }
}

/// The select: the menu reads back the option.
/// The quiet task: the field labelled `named` has the focus, or exactly `named` is
/// selected, or the page scrolled (which section is in view, the evidence does not
/// say: the text of every frame is the whole document's, not the visible part's).
fn quiet_effect(ev: &Evidence<'_>, named: &str) -> Judgement {
    let Some(after) = ev.after_state.top() else {
        return Judgement::new(Verdict::Fail, "The page could not be read.");
    };
    let before = ev.before_state.top();
    let field = after
        .controls
        .iter()
        .find(|c| c.label == named)
        .map(|c| c.name.as_str());
    if let Some(name) = field.filter(|n| !n.is_empty()) {
        let focused = after.focus.ends_with(&format!("#{name}"))
            || after.focus.contains(&format!("[name={name}]"));
        return if focused {
            Judgement::new(
                Verdict::Success,
                format!("The {named:?} field has the focus."),
            )
        } else if before.is_some_and(|b| b.focus == after.focus) {
            Judgement::new(
                Verdict::NoChange,
                format!("The {named:?} field does not have the focus."),
            )
        } else {
            Judgement::new(
                Verdict::Fail,
                format!(
                    "The focus is on {:?}, not the {named:?} field.",
                    after.focus
                ),
            )
        };
    }
    if after.selection.trim() == named {
        return Judgement::new(Verdict::Success, format!("{named:?} is selected."));
    }
    if !after.selection.trim().is_empty() {
        return Judgement::new(
            Verdict::Fail,
            format!("{:?} is selected, not {named:?}.", after.selection.trim()),
        );
    }
    if before.is_some_and(|b| b.scroll != after.scroll) && !after.scroll.is_empty() {
        return Judgement::new(Verdict::Success, "The page scrolled.");
    }
    Judgement::new(
        Verdict::NoChange,
        format!("Nothing shows {named:?} focused, selected or scrolled to."),
    )
}

fn select_option_chosen(ev: &Evidence<'_>, option: &str) -> Judgement {
    let menus = |state: &'_ crate::evidence::PageState| -> Vec<String> {
        state
            .frames
            .iter()
            .flat_map(|f| f.controls.iter())
            .filter(|c| c.tag == "select")
            .map(|c| c.value.clone())
            .collect()
    };
    let (selects, before) = (menus(ev.after_state), menus(ev.before_state));
    let selects: Vec<&str> = selects.iter().map(String::as_str).collect();
    let before: Vec<&str> = before.iter().map(String::as_str).collect();
    if selects.contains(&option) {
        Judgement::new(Verdict::Success, format!("The menu reads {option:?}."))
    } else if selects == before {
        Judgement::new(
            Verdict::NoChange,
            format!(
                "The menu still reads {:?}; expected {option:?}.",
                selects.first().copied().unwrap_or("")
            ),
        )
    } else {
        Judgement::new(
            Verdict::Fail,
            format!(
                "The menu reads {:?}, expected {option:?}.",
                selects.first().copied().unwrap_or("")
            ),
        )
    }
}

pub(super) fn judge_selection(selected: &[&str], label: &str, what: &str) -> Judgement {
    if selected.contains(&label) {
        Judgement::new(Verdict::Success, format!("{label} is selected."))
    } else if let Some(other) = selected.first() {
        Judgement::new(Verdict::Fail, format!("{other} is selected, not {label}."))
    } else {
        Judgement::new(
            Verdict::NoChange,
            format!("No {what} is selected; expected {label}."),
        )
    }
}

/// The chart: looks for `label: <number>` in the observation text.
fn chart_value_shown(text: &str, label: &str) -> Judgement {
    if let Some(v) = faultline_tasks::instruction::value_shown(text, label) {
        return Judgement::new(
            Verdict::Success,
            format!("The observation shows {label}: {v}."),
        );
    }
    let other = text.lines().find_map(|line| {
        let (name, rest) = line.trim().split_once(": ")?;
        (!name.is_empty() && name.len() <= 12 && rest.trim().parse::<f64>().is_ok())
            .then(|| line.trim().to_string())
    });
    match other {
        Some(o) => Judgement::new(
            Verdict::Fail,
            format!("The observation shows {o:?}, not a value for {label}."),
        ),
        None => Judgement::new(
            Verdict::NoChange,
            format!("No value for {label} is visible in the observation."),
        ),
    }
}
