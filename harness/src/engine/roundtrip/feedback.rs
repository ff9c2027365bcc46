//! The feedback stage: what the tool reports back about what it did.
//!
//! The honest message joins the browser actions' messages (or, for a reply with none,
//! every action's), plus the load error when a navigation did not finish. The armed
//! fault's feedback hook may replace it (`feedback.iframe_no_change` reports a click
//! that landed in an iframe as "No change detected.").
//!
//! What the hook decides from is kept as a [`Feedback`], so the message can be told
//! under another fault too: a detection trial whose fault acts only here runs on its
//! working trial's page (see [`crate::engine::trial::run_trials`]).

use crate::engine::roundtrip::execute::Execution;
use faultline_faults::{FaultPlan, FeedbackContext, Witness};
use faultline_tasks::{Action, Point};

/// What a step did, as the feedback stage reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Feedback {
    /// The honest message.
    pub honest: String,
    /// The message the tool would give had every action succeeded.
    pub nominal: String,
    /// Whether the harness's own hit test found the last click going into an iframe.
    pub clicked_into_iframe: bool,
    /// The last click's viewport point, if the step clicked.
    pub last_click: Option<Point>,
}

impl Feedback {
    /// The step's feedback: its actions' messages as `execution` left them, and the load
    /// error when a navigation did not finish.
    pub fn of(actions: &[Action], execution: &Execution, load_error: Option<&str>) -> Feedback {
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
        Feedback {
            honest,
            nominal,
            clicked_into_iframe: execution.last_pointer_into_iframe,
            last_click: execution.last_click,
        }
    }

    /// Feedback that is one message whatever happened (a page the fault broke).
    pub fn fixed(message: &str) -> Feedback {
        Feedback {
            honest: message.to_string(),
            nominal: message.to_string(),
            clicked_into_iframe: false,
            last_click: None,
        }
    }

    /// The message the agent and the policies are given under `fault`, and the feedback
    /// hook's witness.
    pub fn report(&self, fault: Option<&FaultPlan>) -> (String, Option<Witness>) {
        match fault {
            Some(f) => f.on_feedback(&FeedbackContext {
                honest: &self.honest,
                nominal: &self.nominal,
                clicked_into_iframe: self.clicked_into_iframe,
                last_click: self.last_click,
            }),
            None => (self.honest.clone(), None),
        }
    }
}
