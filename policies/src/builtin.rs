//! The built-in policies: the four reference ones, from most trusting to most specific,
//! and `state`, the generic policy extended to effects that leave the DOM alone.

use crate::evidence::{Evidence, FrameSnapshot, Observation};
use crate::{Judgement, PolicyOutcome, Verdict, VerificationPolicy};
use faultline_tasks::{Expectation, MiniwobTask};

/// Takes the tool's own message as true: a message that reports an error anywhere (a
/// step of several actions joins their messages) is a failure, a "no change" message is
/// no change, anything else is success.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnverifiedPolicy;

impl VerificationPolicy for UnverifiedPolicy {
    fn name(&self) -> &str {
        "unverified"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl UnverifiedPolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        let m = ev.tool_message;
        let lower = m.to_ascii_lowercase();
        let verdict =
            if lower.starts_with("error") || lower.contains("error:") || lower.contains("failed") {
                Verdict::Fail
            } else if lower.contains("no change") {
                Verdict::NoChange
            } else {
                Verdict::Success
            };
        Judgement::new(verdict, m)
    }
}

/// Success when the URL or the top document changed; blind to child frames, like many
/// harnesses that diff only the main document.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenericPolicy;

impl VerificationPolicy for GenericPolicy {
    fn name(&self) -> &str {
        "generic"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl GenericPolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        if ev.before_state.url != ev.after_state.url {
            return Judgement::new(
                Verdict::Success,
                format!("The page navigated to {}.", ev.after_state.url),
            );
        }
        let before = ev.before_state.top().map(|f| f.dom_digest.as_str());
        let after = ev.after_state.top().map(|f| f.dom_digest.as_str());
        if before != after {
            Judgement::new(Verdict::Success, "The page changed.")
        } else {
            Judgement::new(Verdict::NoChange, "No change detected on the page.")
        }
    }
}

/// The generic policy, extended to the effects that leave the DOM alone: when the URL
/// and the top document did not change, it also compares every frame's focus
/// (`document.activeElement`), its scroll offsets (the window's and every scrolled
/// element's) and its selection before and after the action. Success when any of them
/// changed; no change when none did.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatePolicy;

impl VerificationPolicy for StatePolicy {
    fn name(&self) -> &str {
        "state"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl StatePolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        let generic = GenericPolicy.verdict_on(ev);
        if generic.verdict != Verdict::NoChange {
            return generic;
        }
        let before = &ev.before_state.frames;
        for after in &ev.after_state.frames {
            let was = before
                .iter()
                .find(|b| b.is_top == after.is_top && b.url == after.url);
            let Some(was) = was else { continue };
            let place = if after.is_top {
                String::new()
            } else {
                format!(" in the frame {}", after.url)
            };
            if was.focus != after.focus {
                let message = if after.focus.is_empty() {
                    format!("The focus left {}{place}.", was.focus)
                } else {
                    format!("The focus moved to {}{place}.", after.focus)
                };
                return Judgement::new(Verdict::Success, message);
            }
            if was.scroll != after.scroll {
                return Judgement::new(Verdict::Success, format!("The page scrolled{place}."));
            }
            if was.selection != after.selection {
                let message = if after.selection.is_empty() {
                    format!("The selection was cleared{place}.")
                } else {
                    format!("Selected {:?}{place}.", after.selection)
                };
                return Judgement::new(Verdict::Success, message);
            }
        }
        Judgement::new(
            Verdict::NoChange,
            "No change detected on the page, its focus, scroll or selection.",
        )
    }
}

/// Success when enough pixels differ between the before and after screenshots.
#[derive(Debug, Clone, Copy)]
pub struct PixelPolicy {
    /// A pixel counts as changed when any channel moves by more than this.
    pub channel_tolerance: u8,
    /// The share of changed pixels that counts as a change (0.0003 of 900x600 is 162
    /// pixels: more than a blinking caret, less than a recoloured small button).
    pub min_changed_fraction: f64,
}

impl Default for PixelPolicy {
    fn default() -> Self {
        PixelPolicy {
            channel_tolerance: 16,
            min_changed_fraction: 0.0003,
        }
    }
}

impl PixelPolicy {
    /// The share of pixels that changed, or an error message.
    pub fn changed_fraction(&self, a: &Observation, b: &Observation) -> Result<f64, String> {
        let a = image::load_from_memory(&a.png)
            .map_err(|e| format!("before screenshot: {e}"))?
            .to_rgb8();
        let b = image::load_from_memory(&b.png)
            .map_err(|e| format!("after screenshot: {e}"))?
            .to_rgb8();
        if a.dimensions() != b.dimensions() {
            return Ok(1.0);
        }
        let tol = self.channel_tolerance;
        let changed = a
            .pixels()
            .zip(b.pixels())
            .filter(|(p, q)| {
                p.0.iter()
                    .zip(q.0.iter())
                    .any(|(x, y)| x.abs_diff(*y) > tol)
            })
            .count();
        let total = (a.width() as usize * a.height() as usize).max(1);
        Ok(changed as f64 / total as f64)
    }
}

impl VerificationPolicy for PixelPolicy {
    fn name(&self) -> &str {
        "pixel"
    }

    fn judge(&self, ev: &Evidence<'_>) -> PolicyOutcome {
        Ok(self.verdict_on(ev))
    }
}

impl PixelPolicy {
    /// The judgement, which a built-in policy can always give.
    pub fn verdict_on(&self, ev: &Evidence<'_>) -> Judgement {
        match self.changed_fraction(ev.before, ev.after) {
            Err(e) => Judgement::new(Verdict::Fail, format!("Could not compare screenshots: {e}")),
            Ok(f) if f >= self.min_changed_fraction => Judgement::new(
                Verdict::Success,
                format!("The screen changed ({:.2}% of pixels).", f * 100.0),
            ),
            Ok(f) => Judgement::new(
                Verdict::NoChange,
                format!("No visible change ({:.3}% of pixels).", f * 100.0),
            ),
        }
    }
}

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
            Expectation::MiniwobQuery { task } => miniwob_query_holds(ev, &task),
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

/// A MiniWoB++ task: what the page's own instruction (its `#query` box, the first line of
/// the page's text) asks, read back from the page after the action. Only the page: the
/// reward MiniWoB computes goes to scoring and never into the document. `task` is the
/// MiniWoB++ task name; each suite task has its own check below, named after it.
fn miniwob_query_holds(ev: &Evidence<'_>, task: &str) -> Judgement {
    let (Some(before), Some(after)) = (ev.before_state.top(), ev.after_state.top()) else {
        return Judgement::new(Verdict::Fail, "The page has no readable top document.");
    };
    let Ok(task) = task.parse::<MiniwobTask>() else {
        return Judgement::new(
            Verdict::Fail,
            format!("Cannot verify the MiniWoB++ task {task:?}."),
        );
    };
    let query = before.text.lines().next().unwrap_or("").trim().to_string();
    let page = MiniwobPage {
        ev,
        before,
        after,
        quoted: query.split('"').skip(1).step_by(2).collect(),
        query: &query,
    };
    match task {
        MiniwobTask::ClickTab => miniwob_click_tab(&page),
        MiniwobTask::ClickDialog => miniwob_click_dialog(&page),
        MiniwobTask::EnterText => miniwob_enter_text(&page),
        MiniwobTask::LoginUser => miniwob_login_user(&page),
        MiniwobTask::ClickButton => miniwob_click_button(&page),
        MiniwobTask::ClickLink => miniwob_click_link(&page),
        MiniwobTask::ClickCheckboxes => miniwob_click_checkboxes(&page),
        MiniwobTask::FocusText => miniwob_focus_text(&page),
        MiniwobTask::LoginUserPopup => miniwob_login_user_popup(&page),
        MiniwobTask::ChooseList => miniwob_choose_list(&page),
        MiniwobTask::UseAutocomplete => miniwob_use_autocomplete(&page),
        MiniwobTask::NavigateTree => miniwob_navigate_tree(&page),
        MiniwobTask::ClickWidget => miniwob_click_widget(&page),
        MiniwobTask::SearchEngine => miniwob_search_engine(&page),
        MiniwobTask::ClickCollapsible => miniwob_click_collapsible(&page),
    }
}

/// What a MiniWoB++ check reads: the evidence, the top document before and after the
/// action, and the page's own instruction (the query and the strings it quotes).
struct MiniwobPage<'a> {
    ev: &'a Evidence<'a>,
    before: &'a FrameSnapshot,
    after: &'a FrameSnapshot,
    query: &'a str,
    quoted: Vec<&'a str>,
}

impl MiniwobPage<'_> {
    /// The value of the control named `name` after the action.
    fn field(&self, name: &str) -> Option<String> {
        self.after
            .controls
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.clone())
    }

    /// The judgement on a query the check cannot read.
    fn unreadable(&self) -> Judgement {
        Judgement::new(
            Verdict::Fail,
            format!("Cannot read the task: {:?}", self.query),
        )
    }
}

/// `click-tab`: the tab the query names is the open one.
fn miniwob_click_tab(p: &MiniwobPage<'_>) -> Judgement {
    let Some(tab) = p
        .query
        .split_once("Click on ")
        .map(|(_, t)| t.trim_end_matches('.').to_string())
    else {
        return p.unreadable();
    };
    let selected: Vec<&str> = p.after.selected.iter().map(String::as_str).collect();
    if selected.contains(&tab.as_str()) {
        Judgement::new(Verdict::Success, format!("{tab} is the open tab."))
    } else if p.after.selected == p.before.selected {
        Judgement::new(
            Verdict::NoChange,
            format!("The open tab did not change; expected {tab}."),
        )
    } else {
        judge_selection(&selected, &tab, "tab")
    }
}

/// `click-dialog`: the dialog that was open is closed.
fn miniwob_click_dialog(p: &MiniwobPage<'_>) -> Judgement {
    let open = |f: &FrameSnapshot| f.text.lines().any(|l| l.trim() == "Close");
    if !open(p.before) {
        Judgement::new(Verdict::Fail, "No dialog was open before the action.")
    } else if open(p.after) {
        Judgement::new(Verdict::NoChange, "The dialog is still open.")
    } else {
        Judgement::new(Verdict::Success, "The dialog is closed.")
    }
}

/// `enter-text`: the field reads the quoted text.
fn miniwob_enter_text(p: &MiniwobPage<'_>) -> Judgement {
    miniwob_form_reads(p, &["tt"])
}

/// `login-user`: the username and password fields read the quoted ones.
fn miniwob_login_user(p: &MiniwobPage<'_>) -> Judgement {
    miniwob_form_reads(p, &["username", "password"])
}

/// `login-user-popup`: as `login-user`, with MiniWoB's session popup dismissed.
fn miniwob_login_user_popup(p: &MiniwobPage<'_>) -> Judgement {
    if p.after.text.contains("Exit to home page?") {
        return Judgement::new(
            Verdict::Fail,
            "MiniWoB's session popup is still open over the form.",
        );
    }
    miniwob_form_reads(p, &["username", "password"])
}

/// The fields `names` read the query's quoted strings, in order.
fn miniwob_form_reads(p: &MiniwobPage<'_>, names: &[&str]) -> Judgement {
    let quoted = &p.quoted;
    if quoted.len() < names.len() {
        return p.unreadable();
    }
    let mut wrong = Vec::new();
    let mut empty = 0;
    for (name, want) in names.iter().zip(quoted) {
        match p.field(name) {
            Some(v) if v == *want => {}
            Some(v) if v.is_empty() => empty += 1,
            Some(v) => wrong.push(format!("{name} reads {v:?}, expected {want:?}")),
            None => wrong.push(format!("there is no {name} field")),
        }
    }
    if !wrong.is_empty() {
        Judgement::new(
            Verdict::Fail,
            format!("The form is wrong: {}.", wrong.join("; ")),
        )
    } else if empty == names.len() {
        Judgement::new(Verdict::NoChange, "The form is empty.")
    } else if empty > 0 {
        Judgement::new(Verdict::Fail, "Part of the form is empty.")
    } else {
        Judgement::new(
            Verdict::Success,
            format!("The form reads {}.", quoted[..names.len()].join(", ")),
        )
    }
}

/// `click-button`: see [`miniwob_no_trace`].
fn miniwob_click_button(_: &MiniwobPage<'_>) -> Judgement {
    miniwob_no_trace(MiniwobTask::ClickButton)
}

/// `click-link`: see [`miniwob_no_trace`].
fn miniwob_click_link(_: &MiniwobPage<'_>) -> Judgement {
    miniwob_no_trace(MiniwobTask::ClickLink)
}

/// `focus-text`: see [`miniwob_no_trace`].
fn miniwob_focus_text(_: &MiniwobPage<'_>) -> Judgement {
    miniwob_no_trace(MiniwobTask::FocusText)
}

/// A click that leaves nothing on the page to read back: MiniWoB's handler only ends the
/// episode (click-button, click-link), or takes the focus away again at once
/// (focus-text). The page after the action cannot confirm it.
fn miniwob_no_trace(task: MiniwobTask) -> Judgement {
    Judgement::new(
        Verdict::NoChange,
        format!("The page keeps no trace of what {task} asks; nothing to read back."),
    )
}

/// `click-checkboxes`: exactly the boxes the query names are checked.
fn miniwob_click_checkboxes(p: &MiniwobPage<'_>) -> Judgement {
    let Some(list) = p
        .query
        .strip_prefix("Select ")
        .and_then(|q| q.strip_suffix(" and click Submit."))
    else {
        return p.unreadable();
    };
    let want: Vec<&str> = if list == "nothing" {
        Vec::new()
    } else {
        list.split(", ").collect()
    };
    let boxes = |f: &FrameSnapshot| -> Vec<(String, bool)> {
        f.controls
            .iter()
            .filter(|c| c.kind == "checkbox")
            .map(|c| (c.label.clone(), c.checked))
            .collect()
    };
    let wrong: Vec<String> = boxes(p.after)
        .into_iter()
        .filter(|(label, checked)| want.contains(&label.as_str()) != *checked)
        .map(|(label, checked)| {
            format!(
                "{label} is {}",
                if checked { "checked" } else { "unchecked" }
            )
        })
        .collect();
    if wrong.is_empty() {
        Judgement::new(Verdict::Success, format!("Checked exactly: {list}."))
    } else if boxes(p.after) == boxes(p.before) {
        Judgement::new(Verdict::NoChange, "No box changed.")
    } else {
        Judgement::new(Verdict::Fail, format!("{}.", wrong.join("; ")))
    }
}

/// `choose-list`: the list reads the item the query names.
fn miniwob_choose_list(p: &MiniwobPage<'_>) -> Judgement {
    let Some(item) = p
        .query
        .strip_prefix("Select ")
        .and_then(|q| q.strip_suffix(" from the list and click Submit."))
    else {
        return p.unreadable();
    };
    let chosen = p.field("options");
    let was = p
        .before
        .controls
        .iter()
        .find(|c| c.name == "options")
        .map(|c| c.value.clone());
    match chosen {
        Some(v) if v == item => Judgement::new(Verdict::Success, format!("The list reads {item}.")),
        Some(v) if Some(&v) == was.as_ref() => Judgement::new(
            Verdict::NoChange,
            format!("The list still reads {v}; expected {item}."),
        ),
        Some(v) => Judgement::new(Verdict::Fail, format!("The list reads {v}, not {item}.")),
        None => Judgement::new(Verdict::Fail, "There is no list."),
    }
}

/// `use-autocomplete`: the field reads an entry that starts (and ends) as the query asks.
fn miniwob_use_autocomplete(p: &MiniwobPage<'_>) -> Judgement {
    let Some(start) = p.quoted.first() else {
        return p.unreadable();
    };
    let end = p.quoted.get(1);
    match p.field("tags") {
        Some(v) if v.is_empty() => Judgement::new(Verdict::NoChange, "The field is empty."),
        Some(v) if v.starts_with(start) && end.is_none_or(|e| v.ends_with(e)) => {
            Judgement::new(Verdict::Success, format!("The field reads {v:?}."))
        }
        Some(v) => Judgement::new(
            Verdict::Fail,
            format!("The field reads {v:?}, which does not fit the task."),
        ),
        None => Judgement::new(Verdict::Fail, "There is no field."),
    }
}

/// `navigate-tree`: the tree shows the named item, and changed.
fn miniwob_navigate_tree(p: &MiniwobPage<'_>) -> Judgement {
    let Some(name) = p.quoted.first() else {
        return p.unreadable();
    };
    let shows = |f: &FrameSnapshot| f.text.lines().any(|l| l.trim() == *name);
    if !shows(p.after) {
        Judgement::new(Verdict::Fail, format!("The tree does not show {name}."))
    } else if p.after.dom_digest == p.before.dom_digest {
        // A click on a file leaves the tree as it was.
        Judgement::new(Verdict::NoChange, "The tree did not change.")
    } else {
        Judgement::new(Verdict::Success, format!("The tree shows {name}."))
    }
}

/// `click-widget`: a new widget of the named kind is checked (where a click leaves one).
fn miniwob_click_widget(p: &MiniwobPage<'_>) -> Judgement {
    let Some(kind) = p.quoted.first() else {
        return p.unreadable();
    };
    let checked = |f: &FrameSnapshot| -> Vec<String> {
        f.controls
            .iter()
            .filter(|c| c.checked)
            .map(|c| c.kind.clone())
            .collect()
    };
    let (was, now) = (checked(p.before), checked(p.after));
    if was == now {
        // Text fields, text areas and buttons keep no trace of a click.
        Judgement::new(Verdict::NoChange, "No widget changed.")
    } else if *kind == "radio" || *kind == "checkbox" {
        if now.iter().filter(|k| k == kind).count() > was.iter().filter(|k| k == kind).count() {
            Judgement::new(Verdict::Success, format!("A {kind} is now checked."))
        } else {
            Judgement::new(Verdict::Fail, format!("No new {kind} is checked."))
        }
    } else {
        Judgement::new(
            Verdict::Fail,
            format!("A box changed, but the task asks for a {kind}."),
        )
    }
}

/// `search-engine`: the quoted name was searched, its result is shown and a result link
/// was followed.
fn miniwob_search_engine(p: &MiniwobPage<'_>) -> Judgement {
    let Some(name) = p.quoted.first() else {
        return p.unreadable();
    };
    let typed = p.field("search-text").unwrap_or_default();
    let listed = p.after.text.lines().any(|l| l.trim() == *name);
    if p.ev.after_state == p.ev.before_state {
        Judgement::new(Verdict::NoChange, "Nothing changed.")
    } else if !typed.eq_ignore_ascii_case(name) {
        Judgement::new(
            Verdict::Fail,
            format!("The search box reads {typed:?}, not {name:?}."),
        )
    } else if !listed {
        Judgement::new(Verdict::Fail, format!("No result titled {name} is shown."))
    } else if !p.ev.after_state.url.ends_with('#') {
        Judgement::new(Verdict::NoChange, "No result link was followed.")
    } else {
        Judgement::new(
            Verdict::Success,
            format!("Searched {name}; its result is shown and a result link was followed."),
        )
    }
}

/// `click-collapsible`: the section is expanded.
fn miniwob_click_collapsible(p: &MiniwobPage<'_>) -> Judgement {
    let open = |f: &FrameSnapshot| f.selected.iter().any(|s| s.starts_with("Section #"));
    if open(p.after) {
        Judgement::new(Verdict::Success, "The section is expanded.")
    } else if open(p.before) == open(p.after) && p.after.dom_digest == p.before.dom_digest {
        Judgement::new(Verdict::NoChange, "The section is still collapsed.")
    } else {
        // What MiniWoB's own Submit does: it sits in a <p> that jQuery UI takes for a
        // second header, so clicking it collapses the section again.
        Judgement::new(Verdict::Fail, "The section is collapsed.")
    }
}

fn judge_selection(selected: &[&str], label: &str, what: &str) -> Judgement {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{Control, FrameSnapshot, PageState};
    use faultline_tasks::{Instruction, Size, TaskKind};

    fn obs(text: &str, png: Vec<u8>) -> Observation {
        Observation {
            png,
            size: Size::new(4, 4),
            text: text.into(),
        }
    }

    fn png(color: [u8; 3], changed: u32) -> Vec<u8> {
        let mut img = image::RgbImage::from_pixel(100, 100, image::Rgb([255, 255, 255]));
        for i in 0..changed {
            img.put_pixel(i % 100, i / 100, image::Rgb(color));
        }
        let mut out = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    }

    fn frame(top: bool, digest: &str, selected: &[&str], controls: Vec<Control>) -> FrameSnapshot {
        FrameSnapshot {
            url: if top {
                "http://x/top".into()
            } else {
                "http://x/f".into()
            },
            is_top: top,
            dom_digest: digest.into(),
            text: String::new(),
            controls,
            selected: selected.iter().map(|s| s.to_string()).collect(),
            focus: String::new(),
            scroll: Vec::new(),
            selection: String::new(),
        }
    }

    struct Case {
        instruction: Instruction,
        message: String,
        before: Observation,
        after: Observation,
        before_state: PageState,
        after_state: PageState,
    }

    impl Case {
        fn new(task: TaskKind, text: &str) -> Case {
            let state = PageState {
                url: "http://x/top".into(),
                frames: vec![frame(true, "a", &[], vec![])],
            };
            Case {
                instruction: Instruction {
                    task,
                    text: text.into(),
                },
                message: "Clicked at (1, 2).".into(),
                before: obs("", png([0, 0, 0], 0)),
                after: obs("", png([0, 0, 0], 0)),
                before_state: state.clone(),
                after_state: state,
            }
        }
        fn judge(&self, p: &dyn VerificationPolicy) -> Judgement {
            p.judge(&Evidence {
                instruction: &self.instruction,
                actions: &[],
                tool_message: &self.message,
                before: &self.before,
                after: &self.after,
                before_state: &self.before_state,
                after_state: &self.after_state,
            })
            .expect("a built-in policy always judges")
        }
    }

    #[test]
    fn unverified_believes_the_message() {
        let mut c = Case::new(TaskKind::Grid, "Click the button \"Item 3\".");
        assert_eq!(c.judge(&UnverifiedPolicy).verdict, Verdict::Success);
        c.message = "No change detected.".into();
        assert_eq!(c.judge(&UnverifiedPolicy).verdict, Verdict::NoChange);
        c.message = "Error: element not found".into();
        assert_eq!(c.judge(&UnverifiedPolicy).verdict, Verdict::Fail);
        c.message =
            "Typed \"a\". Pressed Enter. Error: the page did not finish loading within 4.0 s."
                .into();
        assert_eq!(c.judge(&UnverifiedPolicy).verdict, Verdict::Fail);
    }

    #[test]
    fn state_sees_focus_scroll_and_selection_that_generic_does_not() {
        let mut c = Case::new(TaskKind::Grid, "Click the button \"Item 3\".");
        assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
        assert_eq!(c.judge(&StatePolicy).verdict, Verdict::NoChange);
        // Focus only.
        c.after_state.frames[0].focus = "input#name".into();
        assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
        let j = c.judge(&StatePolicy);
        assert_eq!(j.verdict, Verdict::Success);
        assert!(j.message.contains("input#name"), "{}", j.message);
        c.after_state.frames[0].focus.clear();
        // Scroll only.
        c.after_state.frames[0].scroll = vec![crate::ScrollOffset {
            target: "window".into(),
            x: 0,
            y: 400,
        }];
        assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
        assert_eq!(c.judge(&StatePolicy).verdict, Verdict::Success);
        c.after_state.frames[0].scroll.clear();
        // Selection only.
        c.after_state.frames[0].selection = "harbour".into();
        assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
        assert_eq!(c.judge(&StatePolicy).verdict, Verdict::Success);
        c.after_state.frames[0].selection.clear();
        // In a child frame too, which generic never looks at.
        c.before_state.frames.push(frame(false, "f", &[], vec![]));
        c.after_state.frames.push(frame(false, "f", &[], vec![]));
        c.after_state.frames[1].focus = "input#q".into();
        assert_eq!(c.judge(&StatePolicy).verdict, Verdict::Success);
        c.after_state.frames[1].focus.clear();
        assert_eq!(c.judge(&StatePolicy).verdict, Verdict::NoChange);
        // A DOM change is a success for both, with generic's message.
        c.after_state.frames[0].dom_digest = "b".into();
        assert_eq!(c.judge(&StatePolicy), c.judge(&GenericPolicy));
    }

    #[test]
    fn generic_ignores_child_frames() {
        let mut c = Case::new(
            TaskKind::Frame,
            "Select the row \"Order 7\" in the orders table.",
        );
        c.before_state.frames.push(frame(false, "f1", &[], vec![]));
        c.after_state
            .frames
            .push(frame(false, "f2", &["Order 7"], vec![]));
        assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::NoChange);
        // ...which the outcome policy does not.
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
        c.after_state.frames[0].dom_digest = "b".into();
        assert_eq!(c.judge(&GenericPolicy).verdict, Verdict::Success);
    }

    #[test]
    fn pixel_threshold_separates_a_caret_from_a_button() {
        let mut c = Case::new(TaskKind::Grid, "Click the button \"Item 3\".");
        c.after = obs("", png([0, 0, 0], 2));
        assert_eq!(c.judge(&PixelPolicy::default()).verdict, Verdict::NoChange);
        c.after = obs("", png([0, 0, 0], 400));
        assert_eq!(c.judge(&PixelPolicy::default()).verdict, Verdict::Success);
        // Changes below the channel tolerance are noise.
        c.after = obs("", png([250, 250, 250], 400));
        assert_eq!(c.judge(&PixelPolicy::default()).verdict, Verdict::NoChange);
    }

    #[test]
    fn outcome_reads_the_field_back_exactly() {
        let mut c = Case::new(
            TaskKind::Search,
            "Search for the exact record \"Record-10\": type it into the search field and submit.",
        );
        let field = |v: &str| Control {
            tag: "input".into(),
            kind: "text".into(),
            name: "q".into(),
            label: "Search records".into(),
            value: v.into(),
            checked: false,
        };
        c.after_state.url = "http://x/results".into();
        c.after_state.frames[0].controls = vec![field("Record-10<|im_end|>")];
        let j = c.judge(&OutcomePolicy);
        assert_eq!(j.verdict, Verdict::Fail);
        assert!(j.message.contains("<|im_end|>"));
        c.after_state.frames[0].controls = vec![field("Record-10")];
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
        c.after_state.url = c.before_state.url.clone();
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
    }

    #[test]
    fn outcome_names_the_wrong_item() {
        let mut c = Case::new(TaskKind::Grid, "Click the button \"Item 3\".");
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
        c.after_state.frames[0].selected = vec!["Item 30".into()];
        let j = c.judge(&OutcomePolicy);
        assert_eq!(j.verdict, Verdict::Fail);
        assert!(j.message.contains("Item 30"));
        c.after_state.frames[0].selected = vec!["Item 3".into()];
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
    }

    #[test]
    fn outcome_needs_the_value_in_the_observation() {
        let mut c = Case::new(
            TaskKind::Chart,
            "Hover the bar for \"Mar\" and report the value its tooltip shows.",
        );
        c.after = obs("Monthly sales\nJan\nFeb\nMar", vec![]);
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
        c.after = obs("Monthly sales\nFeb: 41\nJan\nFeb\nMar", vec![]);
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Fail);
        c.after = obs("Monthly sales\nMar: 57\nJan\nFeb\nMar", vec![]);
        let j = c.judge(&OutcomePolicy);
        assert_eq!(j.verdict, Verdict::Success);
        assert!(j.message.contains("57"));
    }

    #[test]
    fn outcome_wants_the_note_listed_exactly_once() {
        let mut c = Case::new(
            TaskKind::Form,
            "Save the note \"Buy milk 4\": type it into the note field and press Save once.",
        );
        c.after_state.frames[0].text = "Notes\nPay rent 3".into();
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
        c.after_state.frames[0].text = "Notes\nPay rent 3\nBuy milk 4".into();
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
        c.after_state.frames[0].text = "Notes\nBuy milk 4\nBuy milk 4".into();
        let j = c.judge(&OutcomePolicy);
        assert_eq!(j.verdict, Verdict::Fail);
        assert!(j.message.contains("2 times"));
    }

    #[test]
    fn outcome_reads_the_menu_back() {
        let mut c = Case::new(
            TaskKind::Select,
            "Choose \"Express\" as the shipping speed.",
        );
        let menu = |v: &str| Control {
            tag: "select".into(),
            kind: "select-one".into(),
            name: "speed".into(),
            label: "Shipping speed".into(),
            value: v.into(),
            checked: false,
        };
        c.before_state.frames[0].controls = vec![menu("Standard")];
        c.after_state.frames[0].controls = vec![menu("Standard")];
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::NoChange);
        c.after_state.frames[0].controls = vec![menu("Pickup")];
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Fail);
        c.after_state.frames[0].controls = vec![menu("Express")];
        assert_eq!(c.judge(&OutcomePolicy).verdict, Verdict::Success);
    }

    #[test]
    fn registry_rebuilds_policies_by_name() {
        let r = crate::Registry::default();
        for name in crate::BUILTIN {
            assert_eq!(r.build(name).unwrap().name(), name);
        }
        let e = r.build("outcom").err().unwrap();
        assert!(
            e.contains("known: generic, outcome, pixel, state, unverified"),
            "{e}"
        );
    }
}
