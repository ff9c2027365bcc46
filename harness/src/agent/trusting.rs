//! The `trusting` agent (formerly `scripted`, still accepted under that name): a
//! transparent, deterministic, rule-based baseline that believes the policy.
//!
//! It reads only what every agent is given ([`AgentView`]): the instruction text, the
//! observation's visible text, the policy's verdict and message, its own history and the
//! remaining budget. It never sees the ledger, the layout or the page's DOM, and it
//! cannot see *where* anything is: when it retries, it resends its first reply.
//!
//! The rules, first match wins:
//!
//! 1. **Answer what is visible.** If the instruction asks for a value (`report the value
//!    its tooltip shows`) and the observation text shows `label: N` for the instruction's
//!    label, reply `answer("N")`.
//! 2. **Trust success.** If the policy said Success, reply `stop()`.
//! 3. **Wait once.** If the policy said NoChange and the agent has not waited yet in this
//!    episode, reply `wait(1500)` (pages can be slow; one wait is enough to tell slow
//!    from stuck).
//! 4. **Retry.** If the policy said NoChange or Fail and the budget still covers the
//!    browser actions of the first reply, resend them (answers and stops dropped).
//! 5. **Give up.** Otherwise reply `stop()`.
//!
//! A persistent fault in the harness's own code (the parser, the executor) therefore
//! defeats it: its retries meet the same fault. A fault that only lies about the outcome
//! (the feedback stage) or hides it for a moment (the observe stage) does not — unless
//! the policy calls it a success, which rule 2 believes. The `observant` agent
//! ([`super::observant`]) is the same baseline with its own eyes open.

use super::{Agent, AgentError, AgentReply, AgentView};
use faultline_policies::Verdict;
use faultline_tasks::instruction::value_shown;
use faultline_tasks::{parse_reply, Action, Expectation};
use futures::future::BoxFuture;

/// How long rule 3 waits. Chart tooltips take up to 900 ms to appear after a hover.
pub const WAIT_MS: u64 = 1500;

/// The trusting baseline. See the module docs for its rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrustingAgent;

/// Which rule fired, for tests and transcripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Rule 1: the observation shows the value the instruction asks for; answer it.
    AnswerVisible,
    /// The observant agent's own rule: its observation contradicts the outcome.
    EyesDisagree,
    /// Rule 2: the policy said Success; stop.
    TrustSuccess,
    /// Rule 3: the policy said NoChange and the agent has not waited yet; wait once.
    WaitOnce,
    /// Rule 4: resend the first reply's browser actions, which the budget still covers.
    Retry,
    /// Rule 5: nothing else applies; stop.
    GiveUp,
}

impl TrustingAgent {
    /// The reply and the rule that produced it.
    pub fn decide(view: &AgentView<'_>) -> (String, Rule) {
        if let Ok(Expectation::ValueShown { label }) = view.instruction.expectation() {
            if let Some(v) = value_shown(&view.observation.text, &label) {
                return (Action::Answer { value: v }.to_string(), Rule::AnswerVisible);
            }
        }
        let verdict = view.feedback.map(|f| f.verdict);
        if verdict == Some(Verdict::Success) {
            return (Action::Stop.to_string(), Rule::TrustSuccess);
        }
        TrustingAgent::wait_retry_or_give_up(view, verdict)
    }

    /// Rules 3 to 5, shared with the observant agent: wait once on NoChange, else resend
    /// the first reply's browser actions within the budget, else stop.
    pub(super) fn wait_retry_or_give_up(
        view: &AgentView<'_>,
        verdict: Option<Verdict>,
    ) -> (String, Rule) {
        let waited = view
            .history
            .iter()
            .any(|h| h.actions.iter().any(|a| matches!(a, Action::Wait { .. })));
        if verdict == Some(Verdict::NoChange) && !waited {
            return (Action::Wait { ms: WAIT_MS }.to_string(), Rule::WaitOnce);
        }
        TrustingAgent::retry_or_give_up(view)
    }
}

impl TrustingAgent {
    /// Rules 4 and 5, shared with the observant agent: resend the first reply's browser
    /// actions (read with its own honest parser) when the budget covers them, else stop.
    pub(super) fn retry_or_give_up(view: &AgentView<'_>) -> (String, Rule) {
        if let Some(first) = view.history.first() {
            let retry: Vec<Action> = parse_reply(&first.reply)
                .unwrap_or_default()
                .into_iter()
                .filter(Action::is_browser_action)
                .collect();
            if !retry.is_empty() && retry.len() as u32 <= view.budget_left {
                let text: Vec<String> = retry.iter().map(Action::to_string).collect();
                return (text.join("\n"), Rule::Retry);
            }
        }
        (Action::Stop.to_string(), Rule::GiveUp)
    }
}

impl Agent for TrustingAgent {
    fn name(&self) -> &str {
        "trusting"
    }

    /// Its reply is a function of the view alone: no seed, clock or randomness.
    fn deterministic(&self) -> bool {
        true
    }

    fn reply<'a>(&'a self, view: AgentView<'a>) -> BoxFuture<'a, Result<AgentReply, AgentError>> {
        let (text, _) = TrustingAgent::decide(&view);
        Box::pin(async move { Ok(AgentReply::text(text)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{HistoryEntry, PolicyFeedback};
    use faultline_policies::Observation;
    use faultline_tasks::{Instruction, Size, TaskKind};

    struct Case {
        instruction: Instruction,
        observation: Observation,
        feedback: PolicyFeedback,
        history: Vec<HistoryEntry>,
        budget_left: u32,
    }

    impl Case {
        fn new(task: TaskKind, text: &str, first_reply: &str, verdict: Verdict) -> Case {
            Case {
                instruction: Instruction {
                    task,
                    text: text.into(),
                },
                observation: Observation {
                    png: Vec::new(),
                    size: Size::new(900, 600),
                    text: "Monthly sales\nJan\nFeb\nMar".into(),
                },
                feedback: PolicyFeedback {
                    policy: "outcome".into(),
                    verdict,
                    message: "m".into(),
                },
                history: vec![entry(first_reply)],
                budget_left: 3,
            }
        }

        fn decide(&self) -> (String, Rule) {
            TrustingAgent::decide(&AgentView {
                instruction: &self.instruction,
                observation: &self.observation,
                feedback: Some(&self.feedback),
                history: &self.history,
                budget_left: self.budget_left,
                step: self.history.len() as u32,
                image: Size::new(900, 600),
                seed: 1,
            })
        }
    }

    fn entry(reply: &str) -> HistoryEntry {
        HistoryEntry {
            reply: reply.into(),
            actions: parse_reply(reply).unwrap(),
            tool_message: String::new(),
            feedback: None,
        }
    }

    fn chart(verdict: Verdict) -> Case {
        Case::new(
            TaskKind::Chart,
            "Hover the bar for \"Mar\" and report the value its tooltip shows.",
            "hover(300, 200)\nanswer(\"57\")",
            verdict,
        )
    }

    fn grid(verdict: Verdict) -> Case {
        Case::new(
            TaskKind::Grid,
            "Click the button \"Item 3\".",
            "click(100, 200)",
            verdict,
        )
    }

    #[test]
    fn rule_1_answers_a_value_the_observation_shows() {
        let mut c = chart(Verdict::NoChange);
        c.observation.text = "Monthly sales\nMar: 57\nJan".into();
        assert_eq!(c.decide(), ("answer(\"57\")".into(), Rule::AnswerVisible));
        // Even when the policy said Success or Fail: the value is what was asked.
        c.feedback.verdict = Verdict::Fail;
        assert_eq!(c.decide().1, Rule::AnswerVisible);
        // Another bar's value is not an answer.
        c.observation.text = "Feb: 41".into();
        assert_ne!(c.decide().1, Rule::AnswerVisible);
        // Tasks that ask no question never answer.
        let mut g = grid(Verdict::NoChange);
        g.observation.text = "Item 3: 57".into();
        assert_ne!(g.decide().1, Rule::AnswerVisible);
    }

    #[test]
    fn rule_2_trusts_a_success_message() {
        assert_eq!(
            grid(Verdict::Success).decide(),
            ("stop()".into(), Rule::TrustSuccess)
        );
        // Success without the value visible: it trusts it too, and stops.
        assert_eq!(chart(Verdict::Success).decide().1, Rule::TrustSuccess);
    }

    #[test]
    fn rule_3_waits_once_on_no_change() {
        let mut c = grid(Verdict::NoChange);
        assert_eq!(c.decide(), (format!("wait({WAIT_MS})"), Rule::WaitOnce));
        c.history.push(entry(&format!("wait({WAIT_MS})")));
        assert_eq!(
            c.decide().1,
            Rule::Retry,
            "a second NoChange retries instead"
        );
        // Fail does not wait: something changed, just not the right thing.
        assert_eq!(grid(Verdict::Fail).decide().1, Rule::Retry);
    }

    #[test]
    fn rule_4_retries_the_first_reply_within_budget() {
        let c = grid(Verdict::Fail);
        assert_eq!(c.decide(), ("click(100, 200)".into(), Rule::Retry));
        let mut s = Case::new(
            TaskKind::Search,
            "Search for the exact record \"Record-10\": type it into the search field and submit.",
            "type(\"Record-10\")\npress(\"Enter\")",
            Verdict::Fail,
        );
        assert_eq!(s.decide().0, "type(\"Record-10\")\npress(\"Enter\")");
        // The retry needs two browser actions; one left is not enough.
        s.budget_left = 1;
        assert_eq!(s.decide(), ("stop()".into(), Rule::GiveUp));
        // A chart retry drops the stale answer and re-hovers.
        let mut ch = chart(Verdict::Fail);
        ch.history.push(entry("wait(1500)"));
        assert_eq!(ch.decide().0, "hover(300, 200)");
    }

    #[test]
    fn rule_5_gives_up_when_the_budget_is_spent() {
        let mut c = grid(Verdict::Fail);
        c.budget_left = 0;
        assert_eq!(c.decide(), ("stop()".into(), Rule::GiveUp));
        let mut n = grid(Verdict::NoChange);
        n.history.push(entry("wait(1500)"));
        n.budget_left = 0;
        assert_eq!(n.decide().1, Rule::GiveUp);
    }

    #[test]
    fn the_same_view_gives_the_same_reply() {
        let c = grid(Verdict::NoChange);
        assert_eq!(c.decide(), c.decide());
    }
}
