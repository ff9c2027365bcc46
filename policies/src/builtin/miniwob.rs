//! The outcome checks of the MiniWoB++ suite: one per suite task, each reading the
//! page's own query back from the page after the action.

use super::outcome::judge_selection;
use crate::evidence::{Evidence, FrameSnapshot};
use crate::{Judgement, Verdict};
use faultline_tasks::MiniwobTask;

/// A MiniWoB++ task: what the page's own instruction (its `#query` box, the first line of
/// the page's text) asks, read back from the page after the action. Only the page: the
/// reward MiniWoB computes goes to scoring and never into the document. `task` is the
/// MiniWoB++ task name; each suite task has its own check below, named after it.
pub(super) fn miniwob_query_holds(ev: &Evidence<'_>, task: &str) -> Judgement {
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
    if p.ev.after_state.same_content(p.ev.before_state) {
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
