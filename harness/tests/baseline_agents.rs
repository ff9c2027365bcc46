//! The two transparent baseline agents end to end, on the real chart page in a real
//! Chromium: under `unverified`, an early capture hides the tooltip and the tool says the
//! hover worked. The trusting agent believes it and stops (not recovered); the observant
//! agent sees no value in its observation, waits, and answers what then shows
//! (recovered, per the ledger).

mod common;

use faultline::agent::observant::ObservantAgent;
use faultline::agent::trusting::TrustingAgent;
use faultline::agent::Agent;
use faultline::engine::episode::{run_episode, EpisodeLimits, EpisodeSpec, StopReason};
use faultline_faults::{Fault, FaultPlan};
use faultline_policies::{Registry, Verdict};
use faultline_tasks::decision::embedded_default;
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
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
