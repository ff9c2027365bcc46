//! The feedback stage: what the tool reports back about what it did.
//!
//! The honest message joins the browser actions' messages (or, for a reply with none,
//! every action's), plus the load error when a navigation did not finish. The armed
//! fault's feedback hook may replace it (`feedback.iframe_no_change` reports a click
//! that landed in an iframe as "No change detected.").

use crate::engine::roundtrip::execute::Execution;
use faultline_faults::{FaultPlan, FeedbackContext, Witness};
use faultline_tasks::Action;

/// The message the agent and the policies are given, and the feedback hook's witness.
pub fn report(
    fault: Option<&FaultPlan>,
    actions: &[Action],
    execution: &Execution,
    load_error: Option<&str>,
) -> (String, Option<Witness>) {
    let join = |pick: fn(&(String, String)) -> &str| {
        let browser: Vec<&str> = execution
            .messages
            .iter()
            .zip(actions)
            .filter(|(_, a)| a.is_browser_action())
            .map(|(m, _)| pick(m))
            .collect();
        if browser.is_empty() {
            execution
                .messages
                .iter()
                .map(pick)
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            browser.join(" ")
        }
    };
    let mut honest = join(|m| &m.0);
    let nominal = join(|m| &m.1);
    if let Some(e) = load_error {
        honest = format!("{honest} {e}");
    }
    match fault {
        Some(f) => f.on_feedback(&FeedbackContext {
            honest: &honest,
            nominal: &nominal,
            clicked_into_iframe: execution.last_pointer_into_iframe,
            last_click: execution.last_click,
        }),
        None => (honest, None),
    }
}
