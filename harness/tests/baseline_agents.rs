//! The two transparent baseline agents end to end, on the real chart page in a real
//! Chromium: under `unverified`, an early capture hides the tooltip and the tool says the
//! hover worked. The trusting agent believes it and stops (not recovered); the observant
//! agent sees no value in its observation, waits, and answers what then shows
//! (recovered, per the ledger).
//!
//! Both say they are deterministic, so recovery runs each of their episodes once where the
//! fault draws nothing from the run's seed; a test here runs a sample three times, under
//! the seeds the three runs would have, and checks that nothing the agent saw or did
//! differs. For the same reason recovery runs an item's episodes under several policies
//! on one page while the agent's replies agree; another test checks each against the
//! episode its policy gets alone.

mod common;

use faultline::agent::observant::ObservantAgent;
use faultline::agent::trusting::TrustingAgent;
use faultline::agent::Agent;
use faultline::engine::episode::EpisodeResult;
use faultline::engine::episode::{
    run_episode, run_together, EpisodeLimits, EpisodeSpec, Follower, StopReason,
};
use faultline_faults::{Fault, FaultPlan};
use faultline_policies::{Registry, Verdict};
use faultline_tasks::decision::embedded_default;
use faultline_tasks::seed::{derive, DEFAULT_ROOT_SEED};
use faultline_tasks::{Action, TaskKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_unverified_the_observant_agent_recovers_an_early_capture_and_the_trusting_one_does_not(
) {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    let unverified = Registry::default().build("unverified").unwrap();
    for index in [0, 7] {
        let decision = set.find(TaskKind::Chart, DEFAULT_ROOT_SEED, index).unwrap();
        let run = |agent: &'static dyn Agent| {
            let spec = EpisodeSpec {
                decision,
                fault: FaultPlan::new(Fault::CaptureBeforeTooltip, 11),
                policy: unverified.as_ref(),
                agent,
                limits: EpisodeLimits::default(),
                seed: 11,
            };
            let env = h.env.clone();
            async move { run_episode(&env, &spec).await.unwrap() }
        };

        let trusting = run(&TrustingAgent).await;
        assert!(trusting.fired, "layout {index}: the early capture fired");
        assert_eq!(trusting.first_verdict, Some(Verdict::Success));
        assert_eq!(trusting.stop_reason, StopReason::Stopped);
        assert!(
            !trusting.truth.achieved,
            "layout {index}: the trusting agent stopped on the policy's word: {}",
            trusting.truth.detail
        );

        let observant = run(&ObservantAgent).await;
        assert!(observant.fired);
        assert_eq!(observant.stop_reason, StopReason::Answered);
        assert!(
            observant.truth.achieved,
            "layout {index}: the observant agent recovered: {}",
            observant.truth.detail
        );
        // It waited (its own eyes disagreed with the policy) before it answered.
        let agent_actions: Vec<&Action> = observant.steps[1..]
            .iter()
            .flat_map(|s| s.actions.iter())
            .collect();
        assert!(
            matches!(agent_actions[0], Action::Wait { .. }),
            "{agent_actions:?}"
        );
        assert!(matches!(agent_actions.last(), Some(Action::Answer { .. })));
    }
    h.shutdown().await;
}

/// The four default tasks, each with its reference fault (none draws a parameter).
const REFERENCE_TASKS: [TaskKind; 4] = [
    TaskKind::Search,
    TaskKind::Grid,
    TaskKind::Frame,
    TaskKind::Chart,
];

const BUILT_IN_AGENTS: [&dyn Agent; 2] = [&TrustingAgent, &ObservantAgent];

/// The seed the recovery phase gives the episode of this item, policy and run.
fn episode_seed(
    task: TaskKind,
    fault: Fault,
    policy: &str,
    agent: &dyn Agent,
    run: u32,
    index: u32,
) -> u64 {
    let key = format!(
        "recovery/{task}/{}/{policy}/{}/r{run}/{index:03}",
        fault.id(),
        agent.name()
    );
    derive(DEFAULT_ROOT_SEED, &["episode", &key])
}

/// What an episode's agent saw and did, step by step, and how it ended: everything but
/// clocks (durations, page-clock instants in witnesses and the ledger) and screenshot
/// bytes (a few anti-aliased pixels differ between captures of one page).
fn transcript(r: &EpisodeResult) -> String {
    let mut out = format!(
        "stop {:?}; error {:?}; browser actions {}; fired {}; truth {} ({}); first verdict {:?}\n",
        r.stop_reason,
        r.error,
        r.browser_actions,
        r.fired,
        r.truth.achieved,
        r.truth.detail,
        r.first_verdict,
    );
    for s in &r.steps {
        out.push_str(&format!(
            "step {}: reply {:?}; parse error {:?}; actions {:?}; executed {}; tool {:?}; feedback {:?}; seen {:?}; witness {:?}; truth {}\n",
            s.step,
            s.reply,
            s.parse_error,
            s.actions,
            s.executed_json,
            s.tool_message,
            s.feedback,
            s.observation.as_ref().map(|o| &o.text),
            s.witness.as_ref().map(|w| &w.fault),
            s.truth.achieved,
        ));
    }
    out
}

/// Guards the claim recovery plans by: a deterministic built-in agent's three runs of an
/// item are one run three times. Each task's reference fault (none draws a parameter), on
/// its first layout, under a policy that believes the tool and one that checks the
/// outcome, is run under the seeds of runs r0, r1 and r2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_agents_give_the_same_transcript_in_every_run_of_an_item() {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    let mut compared = 0;
    for task in REFERENCE_TASKS {
        let fault = Fault::reference_for(task).unwrap();
        assert!(!fault.draws_parameters(), "{}", fault.id());
        let decision = set.find(task, DEFAULT_ROOT_SEED, 0).unwrap();
        for policy in ["unverified", "outcome"] {
            let judge = Registry::default().build(policy).unwrap();
            for agent in BUILT_IN_AGENTS {
                assert!(agent.deterministic(), "{}", agent.name());
                let mut runs = Vec::new();
                for run in 0..3 {
                    let seed = episode_seed(task, fault, policy, agent, run, 0);
                    let spec = EpisodeSpec {
                        decision,
                        fault: FaultPlan::new(fault, seed),
                        policy: judge.as_ref(),
                        agent,
                        limits: EpisodeLimits::default(),
                        seed,
                    };
                    runs.push(transcript(&run_episode(&h.env, &spec).await.unwrap()));
                }
                let what = format!("{task}, {}, {policy}, {}", fault.id(), agent.name());
                assert!(
                    runs[0].contains("step 1:"),
                    "{what}: the agent acted:\n{}",
                    runs[0]
                );
                assert_eq!(runs[0], runs[1], "{what}: runs 0 and 1 differ");
                assert_eq!(runs[0], runs[2], "{what}: runs 0 and 2 differ");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 16);
    h.shutdown().await;
}

/// Guards the claim the recovery phase groups episodes by: an item's episodes under
/// several policies and agents, run together on one page while the replies agree, are
/// the episodes each gets on a page of its own. Each task's reference fault, on its
/// first two layouts: `unverified` with the `trusting` agent leads, every other pair of
/// (`unverified`, `generic`, `outcome`) x (`trusting`, `observant`) follows; every
/// follower that stayed to the end must match its own episode, and the sample must hold
/// followers that stayed and followers that left, under another policy with the same
/// agent and under the other agent (the policies disagree on a faulty step, and the two
/// agents read the same feedback differently).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn episodes_sharing_a_page_are_the_episodes_each_policy_and_agent_gets_alone() {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    let registry = Registry::default();
    let policies = ["unverified", "generic", "outcome"];
    let judges: Vec<_> = policies
        .iter()
        .map(|p| registry.build(p).unwrap())
        .collect();
    // Every (policy, agent) pair, the leader first.
    let members: Vec<(usize, &dyn Agent)> = BUILT_IN_AGENTS
        .iter()
        .flat_map(|&a| (0..policies.len()).map(move |p| (p, a)))
        .collect();
    // (stayed, left), with the leader's agent and with the other one.
    let (mut same_agent, mut other_agent) = ((0, 0), (0, 0));
    for task in REFERENCE_TASKS {
        let fault = Fault::reference_for(task).unwrap();
        for index in [0, 1] {
            let decision = set.find(task, DEFAULT_ROOT_SEED, index).unwrap();
            let spec = |&(p, agent): &(usize, &'static dyn Agent)| {
                let seed = episode_seed(task, fault, policies[p], agent, 0, index);
                EpisodeSpec {
                    decision,
                    fault: FaultPlan::new(fault, seed),
                    policy: judges[p].as_ref(),
                    agent,
                    limits: EpisodeLimits::default(),
                    seed,
                }
            };
            let followers: Vec<Follower<'_>> = members[1..]
                .iter()
                .map(|m| {
                    let s = spec(m);
                    Follower {
                        policy: s.policy,
                        agent: s.agent,
                        seed: s.seed,
                    }
                })
                .collect();
            let together = run_together(&h.env, &spec(&members[0]), &followers)
                .await
                .unwrap();
            assert_eq!(together.len(), members.len());
            for (i, shared) in together.iter().enumerate() {
                let (p, agent) = members[i];
                let what = format!("{task}, layout {index}, {}, {}", policies[p], agent.name());
                let tally = if agent.name() == members[0].1.name() {
                    &mut same_agent
                } else {
                    &mut other_agent
                };
                let Some(shared) = shared else {
                    assert!(i > 0, "{what}: the leader always finishes");
                    tally.1 += 1;
                    continue;
                };
                if i > 0 {
                    tally.0 += 1;
                    assert!(
                        shared.costs.rows().is_empty(),
                        "{what}: the page's cost is the leader's"
                    );
                }
                let alone = run_episode(&h.env, &spec(&members[i])).await.unwrap();
                assert_eq!(transcript(shared), transcript(&alone), "{what}");
                assert_eq!(
                    shared
                        .steps
                        .iter()
                        .map(|s| s.feedback.as_ref().map(|f| f.policy.clone()))
                        .collect::<Vec<_>>(),
                    alone
                        .steps
                        .iter()
                        .map(|s| s.feedback.as_ref().map(|f| f.policy.clone()))
                        .collect::<Vec<_>>(),
                    "{what}: each step carries its own policy's feedback"
                );
            }
        }
    }
    for (who, (stayed, left)) in [("same agent", same_agent), ("other agent", other_agent)] {
        assert!(
            stayed > 0 && left > 0,
            "{who}: followers that stayed: {stayed}, that left: {left}"
        );
    }
    h.shutdown().await;
}
