//! Driving a group of episodes on one page: the recorded decision, then every member's
//! agent turn, each step judged by every member's policy; a member whose reply (or
//! whose policy's failure) differs from the leader's leaves the group. One member is an
//! episode alone. See [`super::run_together`] for when a group is sound.

use super::{EpisodeSpec, EpisodeStep, StopReason};
use crate::agent::portable::ask;
use crate::agent::{Agent, AgentView, HistoryEntry, PolicyFeedback, TokenUsage};
use crate::engine::cost::{Span, Stage};
use crate::engine::liveness::InfraFailure;
use crate::engine::roundtrip::parse::MAX_REPLY_BYTES;
use crate::engine::roundtrip::{ReplyError, RoundTrip, StepOutcome};
use crate::engine::session::Session;
use anyhow::Result;
use faultline_faults::Witness;
use faultline_policies::{
    Evidence, Observation, PageState, PolicyOutcome, Verdict, VerificationPolicy,
};
use faultline_sites::{LedgerEvent, Truth};
use faultline_tasks::{Action, ActionFormat, CoordinateSpace, Instruction};
use std::time::Instant;

/// What driving an episode produced for one policy, before the session is finished and
/// scored: the transcript receives one event per step (a step refused, answered, acted on
/// and judged) and per agent turn, and keeps the history the agent is shown.
pub(super) struct Transcript {
    pub(super) steps: Vec<EpisodeStep>,
    /// What the agent is shown of the steps so far.
    pub(super) history: Vec<HistoryEntry>,
    /// Browser actions the agent took after the recorded decision.
    pub(super) spent: u32,
    /// The first judged step's verdict, and whether it matched the ledger's truth.
    pub(super) first: Option<(Verdict, bool)>,
    pub(super) model_calls: u32,
    pub(super) usage: Option<TokenUsage>,
    /// The parse or agent error that ended the episode.
    pub(super) error: Option<String>,
    pub(super) infra_error: Option<faultline_policies::InfraError>,
}

/// One episode in a group sharing a page: its policy and agent, what the agent was told
/// and did, and where it stands in the group's results.
pub(super) struct Member<'a> {
    /// 0 for the leader, then the followers' order from 1.
    pub(super) index: usize,
    policy: &'a dyn VerificationPolicy,
    agent: &'a dyn Agent,
    seed: u64,
    pub(super) t: Transcript,
    /// The policy's feedback on the step that produced the current observation.
    feedback: Option<PolicyFeedback>,
    /// The token usage of the agent's latest reply, for the step that runs it.
    usage: Option<TokenUsage>,
}

impl<'a> Member<'a> {
    pub(super) fn new(
        index: usize,
        policy: &'a dyn VerificationPolicy,
        agent: &'a dyn Agent,
        seed: u64,
    ) -> Member<'a> {
        Member {
            index,
            policy,
            agent,
            seed,
            t: Transcript::new(),
            feedback: None,
            usage: None,
        }
    }
}

/// The page as the agent last saw it: the observation and its page state.
pub(super) struct Seen {
    pub(super) observation: Observation,
    pub(super) state: PageState,
}

/// The next reply to run: the recorded decision's at step 0, then each agent's.
struct Reply {
    text: String,
    format: ActionFormat,
    /// The recorded decision's coordinate space; an agent's reply is in its format's.
    space: Option<CoordinateSpace>,
    /// The self-report fault's witness, when it rewrote the recorded decision.
    witness: Option<Witness>,
}

impl Reply {
    /// The recorded decision, as a self-report fault may have rewritten it (in
    /// faultline's grammar; a reply in another format is left alone).
    fn recorded(spec: &EpisodeSpec<'_>) -> Reply {
        let (text, witness) = match spec.decision.format {
            ActionFormat::Faultline => spec.fault.on_decision(&spec.decision.reply),
            _ => (spec.decision.reply.clone(), None),
        };
        Reply {
            text,
            format: spec.decision.format,
            space: Some(spec.decision.space),
            witness,
        }
    }
}

/// What the episode does with a parsed reply, decided before anything reaches the page.
enum Admission {
    /// The reply did not parse: the step ends the episode as the agent's parse error.
    Unparsed(ReplyError),
    /// The reply would spend more browser actions than are left.
    OverBudget { browser: u32, left: u32 },
    /// An agent's reply that only answers or stops: nothing for the browser to do.
    Terminal { answer: Option<String> },
    /// Actions for the browser.
    Act {
        space: CoordinateSpace,
        witness: Option<Witness>,
    },
}

/// A step admitted to the browser: its record so far, its actions, the space their
/// points are in and the parse stage's witness.
struct Admitted {
    record: EpisodeStep,
    actions: Vec<Action>,
    space: CoordinateSpace,
    witness: Option<Witness>,
}

/// How an agent's turn ended.
enum Turn {
    /// A reply to run next.
    Replied(Reply),
    /// The episode ends here.
    Ended(StopReason),
}

impl Turn {
    /// Whether the browser does the same after this turn as after `other`: the same
    /// reply in the same format, or the same end.
    fn same_as(&self, other: &Turn) -> bool {
        match (self, other) {
            (Turn::Replied(a), Turn::Replied(b)) => a.text == b.text && a.format == b.format,
            (Turn::Ended(a), Turn::Ended(b)) => a == b,
            _ => false,
        }
    }
}

impl Transcript {
    fn new() -> Transcript {
        Transcript {
            steps: Vec::new(),
            history: Vec::new(),
            spent: 0,
            first: None,
            model_calls: 0,
            usage: None,
            error: None,
            infra_error: None,
        }
    }

    /// A new step's record for `reply`, before anything is known about it.
    fn begin(&self, reply: &Reply) -> EpisodeStep {
        EpisodeStep {
            step: self.steps.len() as u32,
            from_decision: self.steps.is_empty(),
            // An over-long reply is refused by the parse stage and stored cut.
            reply: crate::plugin::truncate(&reply.text, MAX_REPLY_BYTES).into_owned(),
            parse_error: None,
            actions: Vec::new(),
            executed_json: "[]".into(),
            browser_actions: 0,
            tool_message: String::new(),
            feedback: None,
            observation: None,
            witness: None,
            truth: Truth {
                achieved: false,
                detail: String::new(),
            },
            ledger_events: Vec::new(),
            // Each policy's episode sets its own agent's usage.
            usage: None,
        }
    }

    /// Parses `reply` (the armed fault acts on every reply) and decides what the step
    /// does: refuse it, end on its answer, or act. The record gets the parsed actions.
    fn admit(
        &self,
        rt: &RoundTrip,
        reply: &mut Reply,
        budget: u32,
        record: &mut EpisodeStep,
    ) -> (Vec<Action>, Admission) {
        let (converted, parse_witness) = match rt.parse(&reply.text, reply.format) {
            Ok(parsed) => parsed,
            Err(e) => return (Vec::new(), Admission::Unparsed(e)),
        };
        let space = reply.space.take().unwrap_or(converted.space);
        let witness = reply.witness.take().or(parse_witness);
        let actions = converted.actions;
        let browser = actions.iter().filter(|a| a.is_browser_action()).count() as u32;
        record.actions = actions.clone();
        record.browser_actions = browser;
        if record.from_decision {
            return (actions, Admission::Act { space, witness });
        }
        if self.spent + browser > budget {
            let left = budget - self.spent;
            return (actions, Admission::OverBudget { browser, left });
        }
        let terminal = actions
            .iter()
            .all(|a| matches!(a, Action::Answer { .. } | Action::Stop));
        if terminal {
            record.witness = witness;
            let answer = actions.iter().rev().find_map(|a| match a {
                Action::Answer { value } => Some(value.clone()),
                _ => None,
            });
            return (actions, Admission::Terminal { answer });
        }
        (actions, Admission::Act { space, witness })
    }

    /// Counts an agent's reply: its model calls and token usage.
    fn replied(&mut self, calls: u32, usage: Option<TokenUsage>) {
        self.model_calls += calls;
        if let Some(u) = usage {
            let t = self.usage.get_or_insert_with(TokenUsage::default);
            t.prompt_tokens += u.prompt_tokens;
            t.completion_tokens += u.completion_tokens;
        }
    }
}

/// Flushes the page's ledger requests, notes what the harness witnessed, and judges the
/// ledger as it stands; returns the events recorded since the last checkpoint.
async fn checkpoint(
    session: &mut Session<'_>,
    answer: Option<&str>,
) -> Result<(Truth, Vec<LedgerEvent>)> {
    session.record(answer).await?;
    Ok(session.peek())
}

/// Ends a step that did not reach the browser: the ledger is checkpointed once (with the
/// answer, if any) and the step joins every member's transcript.
async fn close(
    session: &mut Session<'_>,
    members: &mut [Member<'_>],
    record: EpisodeStep,
    answer: Option<&str>,
) -> Result<()> {
    let (truth, events) = checkpoint(session, answer).await?;
    for m in members {
        let mut record = record.clone();
        record.truth = truth.clone();
        record.ledger_events = events.clone();
        record.usage = m.usage.take();
        m.t.steps.push(record);
    }
    Ok(())
}

/// The recorded decision, then the agent's turns, until the episode ends; returns the
/// members still in the group (the leader first) and why their episode ended.
pub(super) async fn drive<'a>(
    session: &mut Session<'_>,
    spec: &EpisodeSpec<'_>,
    instruction: &Instruction,
    mut members: Vec<Member<'a>>,
    mut seen: Seen,
    deadline: Instant,
) -> Result<(Vec<Member<'a>>, StopReason)> {
    let mut reply = Reply::recorded(spec);
    let stop_reason = loop {
        if Instant::now() >= deadline {
            break StopReason::TimeLimit;
        }
        // Every member is at the same step with the same reply; the leader's transcript
        // stands for all in what the step does.
        let lead = &members[0].t;
        let mut record = lead.begin(&reply);
        let (actions, admission) =
            lead.admit(session.rt(), &mut reply, spec.limits.budget, &mut record);
        let (space, witness) = match admission {
            Admission::Unparsed(e) => {
                record.parse_error = Some(e.0.clone());
                record.tool_message = e.to_string();
                close(session, &mut members, record, None).await?;
                for m in &mut members {
                    m.t.error = Some(e.to_string());
                }
                break StopReason::ParseError;
            }
            Admission::OverBudget { browser, left } => {
                record.tool_message = format!(
                    "Refused: the reply needs {browser} browser action(s) and {left} remain."
                );
                close(session, &mut members, record, None).await?;
                break StopReason::OverBudget;
            }
            Admission::Terminal { answer } => {
                // Recorded against the newest observation.
                record.tool_message = match &answer {
                    Some(v) => format!("Answered {v:?}."),
                    None => "Stopped.".into(),
                };
                close(session, &mut members, record, answer.as_deref()).await?;
                break match answer {
                    Some(_) => StopReason::Answered,
                    None => StopReason::Stopped,
                };
            }
            Admission::Act { space, witness } => (space, witness),
        };
        let admitted = Admitted {
            record,
            actions,
            space,
            witness,
        };
        if let Some(reason) = act(session, instruction, &mut members, &mut seen, admitted).await? {
            break reason;
        }
        if members[0].t.steps.len() as u32 >= spec.limits.max_steps {
            break StopReason::StepCap;
        }
        match agent_turns(session, spec, instruction, &mut members, &seen, deadline).await? {
            Turn::Replied(next) => reply = next,
            Turn::Ended(reason) => break reason,
        }
    };
    Ok((members, stop_reason))
}

/// Has the policy judge an executed step against what the agent saw before it (timed as
/// the policies' stage).
fn judge_step(
    session: &mut Session<'_>,
    policy: &dyn VerificationPolicy,
    instruction: &Instruction,
    seen: &Seen,
    outcome: &StepOutcome,
) -> PolicyOutcome {
    let judging = Span::start(Stage::Policies);
    let judged = session.judge(
        policy,
        &Evidence {
            instruction,
            actions: &outcome.actions,
            tool_message: &outcome.tool_message,
            before: &seen.observation,
            after: &outcome.after,
            before_state: &seen.state,
            after_state: &outcome.after_state,
        },
    );
    judging.end(session.costs());
    judged
}

/// Executes an admitted step, has every member's policy judge it and records it; returns
/// why the episode ends after it, if it does. A member whose policy failed where the
/// leader's judged (or judged where the leader's failed) leaves the group.
async fn act(
    session: &mut Session<'_>,
    instruction: &Instruction,
    members: &mut Vec<Member<'_>>,
    seen: &mut Seen,
    admitted: Admitted,
) -> Result<Option<StopReason>> {
    let Admitted {
        mut record,
        actions,
        space,
        witness,
    } = admitted;
    let browser = record.browser_actions;
    let outcome = session.rt().act(actions, space, witness).await?;
    let mut judged = Vec::with_capacity(members.len());
    for m in members.iter_mut() {
        if !record.from_decision {
            m.t.spent += browser;
        }
        judged.push(judge_step(session, m.policy, instruction, seen, &outcome));
    }
    let leader_judged = judged[0].is_ok();
    let mut kept = Vec::with_capacity(members.len());
    for (m, j) in members.drain(..).zip(judged) {
        if j.is_ok() == leader_judged {
            kept.push((m, j));
        }
    }
    if !leader_judged {
        for (mut m, judged) in kept {
            if let Err(e) = judged {
                m.t.error = Some(e.to_string());
                m.t.infra_error = Some(e);
            }
            members.push(m);
        }
        close(session, members, record, outcome.answer.as_deref()).await?;
        // Not a way an episode ends but a way it fails to: `infra_error` says so, and the
        // episode is stored as an infrastructure error only (its stop reason is never
        // read).
        return Ok(Some(StopReason::Stopped));
    }
    let (truth, events) = checkpoint(session, outcome.answer.as_deref()).await?;
    record.executed_json = serde_json::to_string(&outcome.executed)?;
    record.tool_message = outcome.tool_message.clone();
    record.observation = Some(outcome.after.clone());
    record.witness = outcome.witness;
    record.truth = truth;
    record.ledger_events = events;
    for (mut m, judged) in kept {
        let Ok(judgement) = judged else {
            unreachable!("only judged steps are kept with a judged leader")
        };
        let feedback = PolicyFeedback {
            policy: m.policy.name().to_string(),
            verdict: judgement.verdict,
            message: judgement.message,
        };
        if m.t.first.is_none() {
            let detected = (feedback.verdict == Verdict::Success) == record.truth.achieved;
            m.t.first = Some((feedback.verdict, detected));
        }
        let mut step = record.clone();
        step.feedback = Some(feedback.clone());
        step.usage = m.usage.take();
        m.t.history.push(HistoryEntry {
            // The whole reply: one that reaches the browser is within the stored size.
            reply: step.reply.clone(),
            actions: outcome.actions.clone(),
            tool_message: outcome.tool_message.clone(),
            feedback: Some(feedback.clone()),
        });
        m.t.steps.push(step);
        m.feedback = Some(feedback);
        members.push(m);
    }
    *seen = Seen {
        observation: outcome.after,
        state: outcome.after_state,
    };
    // The recorded decision's own answer does not end the episode: the agent still sees
    // what the policy says about it and may act again.
    if !record.from_decision && (outcome.stop || outcome.answer.is_some()) {
        return Ok(Some(match outcome.answer {
            Some(_) => StopReason::Answered,
            None => StopReason::Stopped,
        }));
    }
    Ok(None)
}

/// Every member's agent turn; the members whose turn is not the leader's leave the group.
/// Returns the leader's turn.
async fn agent_turns(
    session: &mut Session<'_>,
    spec: &EpisodeSpec<'_>,
    instruction: &Instruction,
    members: &mut Vec<Member<'_>>,
    seen: &Seen,
    deadline: Instant,
) -> Result<Turn> {
    let mut turns = Vec::with_capacity(members.len());
    for m in members.iter_mut() {
        turns.push(agent_turn(session, spec, instruction, m, seen, deadline).await?);
    }
    let leader = turns.remove(0);
    let stays = turns
        .iter()
        .map(|turn| turn.same_as(&leader))
        .collect::<Vec<_>>();
    let mut followers = members
        .drain(1..)
        .zip(stays)
        .filter(|(_, s)| *s)
        .map(|(m, _)| m)
        .collect::<Vec<_>>();
    members.append(&mut followers);
    Ok(leader)
}

/// The agent's turn: it is shown what it saw and was told, and replies within what is
/// left of the episode's time. Only its thinking counts against that time: the harness
/// runs its actions after the turn. An agent whose endpoint or process failed is an
/// infrastructure failure (the error), never a way the episode ends.
async fn agent_turn(
    session: &mut Session<'_>,
    spec: &EpisodeSpec<'_>,
    instruction: &Instruction,
    m: &mut Member<'_>,
    seen: &Seen,
    deadline: Instant,
) -> Result<Turn> {
    let view = AgentView {
        instruction,
        observation: &seen.observation,
        feedback: m.feedback.as_ref(),
        history: &m.t.history,
        budget_left: spec.limits.budget - m.t.spent,
        step: m.t.steps.len() as u32,
        image: spec.decision.image,
        seed: m.seed,
    };
    let site = session.site();
    let left = deadline.saturating_duration_since(Instant::now());
    let thinking = Span::start(Stage::Agent);
    let replied = tokio::time::timeout(left, ask(m.agent, view, &site)).await;
    thinking.end(session.costs());
    let Ok(replied) = replied else {
        return Ok(Turn::Ended(StopReason::TimeLimit));
    };
    match replied {
        Ok(r) => {
            m.t.replied(r.model_calls, r.usage);
            m.usage = r.usage;
            Ok(Turn::Replied(Reply {
                text: r.text,
                format: r.format,
                space: None,
                witness: None,
            }))
        }
        Err(e) => match e.infra {
            Some(kind) => Err(anyhow::Error::new(InfraFailure::new(
                kind,
                format!("{} ({})", e.message, m.agent.name()),
            ))),
            None => {
                m.t.error = Some(e.to_string());
                Ok(Turn::Ended(StopReason::AgentError))
            }
        },
    }
}
