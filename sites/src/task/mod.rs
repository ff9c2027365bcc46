//! Each task's page, routes, truth and oracle, one file per task.
//!
//! A task's vocabulary (its layout, instruction and expectation) is
//! `faultline_tasks::task`, whose documentation says what a task is and lists every
//! piece; this module holds the pieces that need the page. [`SiteTask`] is implemented
//! by each task's layout struct:
//!
//! - **page** ([`SiteTask::page`]) and **routes** ([`SiteTask::routes`]): the task's top
//!   document and its extra URLs (a results page, the frame's document, a write, a
//!   script or stylesheet), with the armed fault's page changes that live inside the
//!   task's own markup;
//! - **events** ([`SiteTask::EVENTS`]): the ledger events the page sends;
//! - **validate** ([`SiteTask::validate`]): the truth, read from the ledger;
//! - **cheat** ([`SiteTask::locate_js`]): the oracle's script that finds the target on
//!   the live page. It reads the same selectors the page writes, which is why it lives
//!   in the same file as the markup.
//!
//! Every dispatch below is an exhaustive `match`, so a new task does not compile until
//! it has each piece; the tests at the bottom walk every task.

mod chart;
mod form;
mod frame;
mod grid;
mod miniwob;
mod quiet;
mod search;
mod select;

use crate::app::AppState;
use crate::ledger::Ledger;
use crate::truth::Truth;
use axum::Router;
use faultline_faults::site::PageMod;
use faultline_tasks::layout::{
    ChartLayout, FormLayout, FrameLayout, GridLayout, MiniwobLayout, QuietLayout, SearchLayout,
    SelectLayout,
};
use faultline_tasks::task::LayoutSpec;
use faultline_tasks::{Layout, MiniwobTask, TaskKind};

/// The pieces of a task that need the page (the MiniWoB++ suite's are one implementation
/// for the whole family, `MiniwobLayout`'s).
pub(crate) trait SiteTask {
    /// Ledger event kinds this task's page sends (every page also sends `click` and
    /// `page_error`). The server refuses any other kind, so a typo cannot silently
    /// become an unscored event.
    const EVENTS: &'static [&'static str];

    /// The task's page under `scope`, with the page changes in `mods`.
    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String;

    /// The task's extra routes, beyond its page at `/s/{scope}/{task}`.
    fn routes() -> Router<AppState> {
        Router::new()
    }

    /// Validate: judges the ledger against what this layout asked for.
    fn validate(&self, ledger: &Ledger) -> Truth;

    /// Cheat: a script that evaluates, on this layout's clean page, to the viewport
    /// centre `[x, y]` of the element to act on (or `null` when it is missing); `None`
    /// when the task has no point to act on.
    fn locate_js(&self) -> Option<String>;
}

/// Runs `$body` with `$t` bound to the layout's task struct, whatever the task.
macro_rules! with_task {
    ($spec:expr, $t:ident => $body:expr) => {
        match $spec {
            LayoutSpec::Search($t) => $body,
            LayoutSpec::Grid($t) => $body,
            LayoutSpec::Frame($t) => $body,
            LayoutSpec::Chart($t) => $body,
            LayoutSpec::Form($t) => $body,
            LayoutSpec::Select($t) => $body,
            LayoutSpec::Quiet($t) => $body,
            LayoutSpec::Miniwob($t) => $body,
        }
    };
}

/// `layout`'s page under `scope`.
pub(crate) fn page(scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
    with_task!(&layout.spec, t => t.page(scope, layout, mods))
}

/// Every task's extra routes.
pub(crate) fn routes() -> Router<AppState> {
    TaskKind::ALL
        .into_iter()
        .fold(Router::new(), |router, task| {
            router.merge(match task {
                TaskKind::Search => SearchLayout::routes(),
                TaskKind::Grid => GridLayout::routes(),
                TaskKind::Frame => FrameLayout::routes(),
                TaskKind::Chart => ChartLayout::routes(),
                TaskKind::Form => FormLayout::routes(),
                TaskKind::Select => SelectLayout::routes(),
                TaskKind::Quiet => QuietLayout::routes(),
                // The vendored files' one route, merged once.
                TaskKind::Miniwob(t) if t == MiniwobTask::ALL[0] => MiniwobLayout::routes(),
                TaskKind::Miniwob(_) => Router::new(),
            })
        })
}

/// The ledger event kinds `task`'s page sends.
pub(crate) fn events(task: TaskKind) -> &'static [&'static str] {
    match task {
        TaskKind::Search => SearchLayout::EVENTS,
        TaskKind::Grid => GridLayout::EVENTS,
        TaskKind::Frame => FrameLayout::EVENTS,
        TaskKind::Chart => ChartLayout::EVENTS,
        TaskKind::Form => FormLayout::EVENTS,
        TaskKind::Select => SelectLayout::EVENTS,
        TaskKind::Quiet => QuietLayout::EVENTS,
        TaskKind::Miniwob(_) => MiniwobLayout::EVENTS,
    }
}

/// Judges `ledger` against what `layout` asked for: the answer key. Only scoring calls
/// it (it needs a [`Ledger`], which needs the run's [`crate::LedgerKey`]).
pub fn judge(layout: &Layout, ledger: &Ledger) -> Truth {
    with_task!(&layout.spec, t => t.validate(ledger))
}

/// The oracle's locate script for `layout` (see `SiteTask::locate_js`): it evaluates to
/// the viewport centre `[x, y]` of the element to act on, or `null`. `None` when the
/// task has no point to locate.
pub fn locate_script(layout: &Layout) -> Option<String> {
    with_task!(&layout.spec, t => t.locate_js())
}

/// The oracle's whole plan for a MiniWoB++ layout: a script that evaluates, on its clean
/// page, to the steps an ideal agent takes (`[["click", x, y], ["type", text], ...]`,
/// viewport coordinates) or `null`; `None` for faultline's own tasks.
pub fn plan_script(layout: &Layout) -> Option<String> {
    match &layout.spec {
        LayoutSpec::Miniwob(t) => Some(miniwob::task_plan_js(t.task)),
        LayoutSpec::Search(_)
        | LayoutSpec::Grid(_)
        | LayoutSpec::Frame(_)
        | LayoutSpec::Chart(_)
        | LayoutSpec::Form(_)
        | LayoutSpec::Select(_)
        | LayoutSpec::Quiet(_) => None,
    }
}

/// A JSON string literal, for embedding a name in a script.
fn js_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ledger::LedgerEvent;

    /// A ledger holding `events` in order.
    pub(crate) fn ledger(events: &[(&str, serde_json::Value)]) -> Ledger {
        Ledger {
            scope: "t".into(),
            events: events
                .iter()
                .enumerate()
                .map(|(i, (k, d))| LedgerEvent {
                    seq: i as u64,
                    server_ms: i as f64,
                    page_ms: None,
                    kind: k.to_string(),
                    data: d.clone(),
                })
                .collect(),
        }
    }

    /// Every task has every piece this crate holds: a page that renders, truth that does
    /// not call an empty ledger a success, an oracle script (or a documented reason to
    /// have none), and events of its own.
    #[test]
    fn every_task_has_every_piece() {
        for task in TaskKind::ALL {
            for index in 0..3 {
                let layout = Layout::generate(task, index, 11 + u64::from(index));
                let html = page("t", &layout, &[]);
                assert!(html.starts_with("<!doctype html>"), "{task}");
                assert!(html.contains("/static/ledger.js"), "{task}");
                let truth = judge(&layout, &ledger(&[]));
                assert!(!truth.achieved, "{task}: an empty ledger achieved the task");
                assert!(!truth.detail.is_empty(), "{task}");
                let script = locate_script(&layout);
                // Only the search is done by typing alone: nothing to locate.
                assert_eq!(script.is_none(), task == TaskKind::Search, "{task}");
                if let Some(js) = script {
                    assert!(js.starts_with("(() =>") && js.ends_with(")()"), "{task}");
                }
                // Every task's page sends events, except the form, whose server records
                // its writes itself.
                assert_eq!(events(task).is_empty(), task == TaskKind::Form, "{task}");
            }
        }
    }
}
