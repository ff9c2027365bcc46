//! The `observant` agent: the trusting baseline with its own eyes open.
//!
//! It reads exactly what the trusting agent reads ([`AgentView`]: the instruction, the
//! observation's visible text, the policy's verdict and message, its history, the
//! budget) and never the ledger, the layout or the DOM. The difference is one rule: it
//! treats its own observation as evidence. When the instruction names something that a
//! reader of the page should see once the task is done, and the observation does not
//! show it, it does not stop on the policy's Success.
//!
//! What it looks for, by the instruction's public [`Expectation`] (nothing else):
//!
//! | expectation | seen as done when the observation's text shows |
//! |---|---|
//! | a value (`report the value its tooltip shows`) | `label: N` (then rule 1 answers it) |
//! | a search for `text` | the query in quotes, exactly: `“text”` or `"text"` |
//! | a saved note `text` | a line reading exactly `text`, exactly once |
//! | an option `o` chosen | a line ending in `: o` |
//! | a selected item or frame row | nothing it can read: it cannot tell, and trusts the policy |
//!
//! The rules, first match wins:
//!
//! 1. **Answer what is visible** (as the trusting agent).
//! 2. **Eyes disagree.** The observation contradicts the expected outcome (table above):
//!    whatever the policy said, wait once (`wait(1500)`: what is late may still come),
//!    then resend its first reply's browser actions while the budget covers them, then
//!    stop.
//! 3. **Trust success**, 4. **wait once on NoChange**, 5. **retry**, 6. **give up**: the
//!    trusting agent's rules 2 to 5.
//!
//! Beside the trusting agent it separates two sources of recovery: what the policy's
//! message gives the agent, and what the agent's own eyes give it.

use super::trusting::{Rule, TrustingAgent, WAIT_MS};
use super::{Agent, AgentError, AgentReply, AgentView};
use faultline_policies::Verdict;
use faultline_tasks::{Action, Expectation};
use futures::future::BoxFuture;

/// The observant baseline. See the module docs for its rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct ObservantAgent;

/// What the observation says about the expected outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The observation shows the outcome.
    Done,
    /// The outcome should be readable and is not there.
    NotDone,
    /// Nothing in the text can tell (a selection shown only by styling).
    CannotTell,
}

/// Reads the observation's text for the expected outcome (see the module table).
pub fn seen(expectation: &Expectation, text: &str) -> Seen {
    let verdict = |done: bool| if done { Seen::Done } else { Seen::NotDone };
    match expectation {
        Expectation::ValueShown { label } => {
            verdict(faultline_tasks::instruction::value_shown(text, label).is_some())
        }
        Expectation::FieldText { text: query } => {
            verdict(text.contains(&format!("“{query}”")) || text.contains(&format!("\"{query}\"")))
        }
        Expectation::NoteSaved { text: note } => {
            verdict(text.lines().filter(|l| l.trim() == note).count() == 1)
        }
        Expectation::OptionChosen { option } => verdict(
            text.lines()
                .any(|l| l.trim_end().ends_with(&format!(": {option}"))),
        ),
        // A selection shown only by styling; a MiniWoB++ page's own query, which the
        // observation's text does not answer; a focus, scroll or text selection.
        Expectation::SelectedItem { .. }
        | Expectation::SelectedRowInFrame { .. }
        | Expectation::MiniwobQuery { .. }
        | Expectation::QuietEffect { .. } => Seen::CannotTell,
    }
}

impl ObservantAgent {
    /// The reply and the rule that produced it.
    pub fn decide(view: &AgentView<'_>) -> (String, Rule) {
        let (reply, rule) = TrustingAgent::decide(view);
        if rule == Rule::AnswerVisible {
            return (reply, rule);
        }
        let Ok(expectation) = view.instruction.expectation() else {
            return (reply, rule);
        };
        if seen(&expectation, &view.observation.text) != Seen::NotDone {
            return (reply, rule);
        }
        // Its eyes say the task is not done, whatever the policy said.
        let waited = view
            .history
            .iter()
            .any(|h| h.actions.iter().any(|a| matches!(a, Action::Wait { .. })));
        if !waited {
            return (Action::Wait { ms: WAIT_MS }.to_string(), Rule::EyesDisagree);
        }
        match view.feedback.map(|f| f.verdict) {
            // A NoChange or Fail verdict already leads to a retry or to giving up.
            Some(Verdict::NoChange) | Some(Verdict::Fail) => (reply, rule),
            _ => TrustingAgent::retry_or_give_up(view),
        }
    }
}

impl Agent for ObservantAgent {
    fn name(&self) -> &str {
        "observant"
    }

    /// Its reply is a function of the view alone: no seed, clock or randomness.
    fn deterministic(&self) -> bool {
        true
    }

    fn reply<'a>(&'a self, view: AgentView<'a>) -> BoxFuture<'a, Result<AgentReply, AgentError>> {
        let (text, _) = ObservantAgent::decide(&view);
        Box::pin(async move { Ok(AgentReply::text(text)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{HistoryEntry, PolicyFeedback};
    use faultline_policies::Observation;
    use faultline_tasks::{parse_reply, Instruction, Size, TaskKind};

    struct Case {
        instruction: Instruction,
        text: String,
        verdict: Verdict,
        history: Vec<HistoryEntry>,
        budget_left: u32,
    }

    impl Case {
        fn new(task: TaskKind, instruction: &str, first_reply: &str, verdict: Verdict) -> Case {
            Case {
                instruction: Instruction {
                    task,
                    text: instruction.into(),
                },
                text: String::new(),
                verdict,
                history: vec![entry(first_reply)],
                budget_left: 3,
            }
        }

        fn decide(&self) -> (String, Rule) {
            let observation = Observation {
                png: Vec::new(),
                size: Size::new(900, 600),
                text: self.text.clone(),
            };
            let feedback = PolicyFeedback {
                policy: "unverified".into(),
                verdict: self.verdict,
                message: "m".into(),
            };
            ObservantAgent::decide(&AgentView {
                instruction: &self.instruction,
                observation: &observation,
                feedback: Some(&feedback),
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
        let mut c = Case::new(
            TaskKind::Chart,
            "Hover the bar for \"Mar\" and report the value its tooltip shows.",
            "hover(300, 200)\nanswer(\"57\")",
            verdict,
        );
        c.text = "Monthly sales\nJan\nFeb\nMar".into();
        c
    }

    #[test]
    fn rule_1_answers_a_value_the_observation_shows() {
        let mut c = chart(Verdict::Success);
        c.text.push_str("\nMar: 57");
        assert_eq!(c.decide(), ("answer(\"57\")".into(), Rule::AnswerVisible));
    }

    #[test]
    fn rule_2_does_not_stop_on_success_when_the_value_is_missing() {
        // The trusting agent stops here; the observant one waits first...
        let mut c = chart(Verdict::Success);
        assert_eq!(c.decide(), (format!("wait({WAIT_MS})"), Rule::EyesDisagree));
        // ...then, still not seeing it, re-hovers (the stale answer dropped)...
        c.history.push(entry(&format!("wait({WAIT_MS})")));
        assert_eq!(c.decide(), ("hover(300, 200)".into(), Rule::Retry));
        // ...and stops when the budget no longer covers a retry.
        c.budget_left = 0;
        assert_eq!(c.decide(), ("stop()".into(), Rule::GiveUp));
    }

    #[test]
    fn rule_2_reads_a_search_query_a_note_and_an_option() {
        let mut s = Case::new(
            TaskKind::Search,
            "Search for the exact record \"Record-10\": type it into the search field and submit.",
            "type(\"Record-10\")\npress(\"Enter\")",
            Verdict::Success,
        );
        s.text = "Results for “Record-10<|im_end|>”: 0".into();
        assert_eq!(
            s.decide().1,
            Rule::EyesDisagree,
            "a leaked token is not the query"
        );
        s.text = "Results for “Record-10”: 3".into();
        assert_eq!(s.decide().1, Rule::TrustSuccess);

        let note = Expectation::NoteSaved {
            text: "Order paper 5".into(),
        };
        assert_eq!(
            seen(&note, "Saved notes\nBuy tickets 39\nOrder paper 5"),
            Seen::Done
        );
        assert_eq!(
            seen(&note, "Saved notes\nOrder paper 5\nOrder paper 5"),
            Seen::NotDone
        );
        assert_eq!(seen(&note, "Saved notes\nBuy tickets 39"), Seen::NotDone);
        let option = Expectation::OptionChosen {
            option: "Same day".into(),
        };
        assert_eq!(
            seen(&option, "Shipping speed\nSame day\n\nShipping: Same day"),
            Seen::Done
        );
        assert_eq!(
            seen(&option, "Shipping speed\nSame day\n\nShipping: Freight"),
            Seen::NotDone
        );
    }

    #[test]
    fn a_selection_it_cannot_read_leaves_the_trusting_rules_in_charge() {
        let g = Case::new(
            TaskKind::Grid,
            "Click the button \"Item 3\".",
            "click(100, 200)",
            Verdict::Success,
        );
        assert_eq!(g.decide(), ("stop()".into(), Rule::TrustSuccess));
        let g = Case::new(
            TaskKind::Grid,
            "Click the button \"Item 3\".",
            "click(100, 200)",
            Verdict::Fail,
        );
        assert_eq!(g.decide(), ("click(100, 200)".into(), Rule::Retry));
    }

    #[test]
    fn when_eyes_and_policy_both_say_not_done_it_follows_the_shared_rules() {
        let mut c = chart(Verdict::NoChange);
        c.history.push(entry(&format!("wait({WAIT_MS})")));
        assert_eq!(c.decide(), ("hover(300, 200)".into(), Rule::Retry));
    }
}
