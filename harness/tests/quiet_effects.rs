//! Effects that leave the DOM alone, on real pages in a real Chromium: the quiet task's
//! focus, scroll and selection layouts. The oracle's action is confirmed by the ledger,
//! `generic` (which diffs only the URL and the top document) calls it no change, a false
//! alarm, while `state` (which also compares focus, scroll and selection) calls it a
//! success; with `execution.effect_undone` armed the ledger says the effect was lost and
//! `state` does not call it a success.

mod common;

use faultline::config::{self, Overrides};
use faultline::engine::trial::{run_trial, TrialResult};
use faultline::experiment::Harness;
use faultline_faults::{Fault, FaultPlan};
use faultline_policies::Verdict;
use faultline_tasks::decision::embedded_default;
use faultline_tasks::layout::{LayoutSpec, QuietEffect};
use faultline_tasks::seed::{derive, DEFAULT_ROOT_SEED};
use faultline_tasks::{Layout, TaskKind};

/// The catalogue config's harness: its policies include `state`.
async fn harness() -> Harness {
    let c = config::resolve(
        &config::load_text(Some("catalogue")).unwrap(),
        &Overrides {
            seed: None,
            layouts: Some(3),
            jobs: Some(2),
            faults: None,
            isolation: None,
        },
    )
    .unwrap();
    assert!(c.policies.iter().any(|p| p == "state"), "{:?}", c.policies);
    Harness::start(&c)
        .await
        .expect("fixture server and Chromium start")
}

fn verdict(r: &TrialResult, policy: &str) -> Verdict {
    r.judgements
        .iter()
        .find(|(p, _)| p == policy)
        .map(|(_, j)| j.as_ref().expect("a built-in policy judges").verdict)
        .unwrap_or_else(|| panic!("{policy} judged"))
}

/// The ledger event kind the page records the effect under.
fn effect_kind(effect: QuietEffect) -> &'static str {
    match effect {
        QuietEffect::Focus => "focus",
        QuietEffect::Scroll => "scrolled",
        QuietEffect::Select => "selected",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_sees_focus_scroll_and_selection_that_generic_misses_and_their_loss() {
    let h = harness().await;
    let set = embedded_default().unwrap();
    let mut seen = Vec::new();
    for index in 0..3u32 {
        let d = set.find(TaskKind::Quiet, DEFAULT_ROOT_SEED, index).unwrap();
        let layout = Layout::for_root(DEFAULT_ROOT_SEED, TaskKind::Quiet, index);
        let LayoutSpec::Quiet(q) = &layout.spec else {
            panic!("a quiet layout")
        };
        let effect = q.effect;
        seen.push(effect);
        let at = format!("{} layout {index}", effect.name());

        // The correct action: the ledger confirms it; generic raises a false alarm;
        // state does not.
        let r = run_trial(&h.env, d, None)
            .await
            .unwrap_or_else(|e| panic!("{at}: working trial failed: {e:#}"));
        assert!(r.truth.achieved, "{at}: {}", r.truth.detail);
        assert!(r.witness.is_none(), "{at}: a working trial fired");
        assert_eq!(verdict(&r, "generic"), Verdict::NoChange, "{at}: generic");
        assert_eq!(verdict(&r, "state"), Verdict::Success, "{at}: state");
        assert_eq!(verdict(&r, "outcome"), Verdict::Success, "{at}: outcome");

        // The effect undone by the page: the ledger saw it happen, then lost; state
        // catches it.
        let plan = FaultPlan::new(Fault::EffectUndone, derive(1, &["quiet", &at]));
        let r = run_trial(&h.env, d, Some(plan))
            .await
            .unwrap_or_else(|e| panic!("{at}: faulty trial failed: {e:#}"));
        let w = r
            .witness
            .as_ref()
            .unwrap_or_else(|| panic!("{at}: no witness"));
        assert!(
            format!("{w:?}").contains("effect_undone"),
            "{at}: witness {w:?}"
        );
        assert!(!r.truth.achieved, "{at}: {}", r.truth.detail);
        assert!(
            r.ledger.of_kind(effect_kind(effect)).count() >= 2,
            "{at}: the ledger should hold the effect and its loss: {:?}",
            r.ledger.events
        );
        assert_ne!(
            verdict(&r, "state"),
            Verdict::Success,
            "{at}: state missed it"
        );
        assert_ne!(verdict(&r, "generic"), Verdict::Success, "{at}: generic");
    }
    assert_eq!(seen, QuietEffect::ALL.to_vec());
    h.shutdown().await;
}
