//! Real fixture server + real Chromium: the committed decisions replay cleanly, and each
//! stage fault fires, leaves its witness, and has the ledger effect it is meant to have.

mod common;

use faultline::engine::trial::{run_trial, run_trials, TrialResult};
use faultline_faults::{Fault, FaultPlan, LEAKED_TOKEN, NO_CHANGE_MESSAGE};
use faultline_policies::Verdict;
use faultline_tasks::decision::embedded_default;
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
use faultline_tasks::TaskKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_decisions_replay_cleanly_per_the_ledger() {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    assert_eq!(
        set.decisions.len(),
        40 * TaskKind::ALL.len(),
        "40 committed decisions per task"
    );
    for task in TaskKind::ALL {
        for index in [0, 9, 22, 39] {
            let d = set.find(task, DEFAULT_ROOT_SEED, index).unwrap();
            let r = run_trial(&h.env, d, None).await.unwrap();
            assert!(
                r.truth.achieved,
                "{task} layout {index}: {}",
                r.truth.detail
            );
            assert!(r.witness.is_none(), "no fault, no witness");
            assert!(!r.ledger.events.is_empty());
        }
    }
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_stage_fault_fires_with_its_witness_and_working_trials_are_unaffected() {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    for task in TaskKind::REFERENCE {
        let fault = Fault::reference_for(task).unwrap();
        // Layouts 0 and 1: for the grid, one unscaled click lands on another item and
        // one on blank space.
        for index in [0, 1] {
            let d = set.find(task, DEFAULT_ROOT_SEED, index).unwrap();
            let faulty = run_trial(&h.env, d, Some(FaultPlan::new(fault, 1)))
                .await
                .unwrap();
            let w = faulty
                .witness
                .clone()
                .unwrap_or_else(|| panic!("{fault} did not fire on {task} layout {index}"));
            assert_eq!(w.fault, fault.id());
            match fault {
                Fault::TokenLeak => {
                    let original = w.str("original").unwrap();
                    assert_eq!(
                        w.str("corrupted").unwrap(),
                        format!("{original}{LEAKED_TOKEN}")
                    );
                    assert!(
                        faulty.truth.detail.contains(LEAKED_TOKEN),
                        "{}",
                        faulty.truth.detail
                    );
                }
                Fault::UnscaledCoordinates => {
                    let (image, intended, executed) = (
                        w.get("image_point").unwrap(),
                        w.get("intended").unwrap(),
                        w.get("executed").unwrap(),
                    );
                    assert_eq!(executed, image);
                    let (ix, vx) = (
                        image["x"].as_f64().unwrap(),
                        intended["x"].as_f64().unwrap(),
                    );
                    assert!((vx - ix * 4.0 / 3.0).abs() < 1e-9);
                    let detail = &faulty.truth.detail;
                    if index == 0 {
                        assert!(detail.starts_with("clicked Item"), "{detail}");
                    } else {
                        assert!(detail.starts_with("clicked blank space"), "{detail}");
                    }
                }
                Fault::IframeNoChange => {
                    assert_eq!(w.str("reported"), Some(NO_CHANGE_MESSAGE));
                    assert!(w.str("original").unwrap().starts_with("Clicked at"));
                    assert_eq!(faulty.tool_message, NO_CHANGE_MESSAGE);
                }
                Fault::CaptureBeforeTooltip => {
                    let hover = w.f64("hover_at_ms").unwrap();
                    let capture = w.f64("capture_at_ms").unwrap();
                    let shown = w
                        .f64("tooltip_shown_at_ms")
                        .expect("the tooltip appears after the early capture");
                    assert!(hover <= capture && capture < shown);
                }
                f => panic!("{f} is not a reference stage fault"),
            }
            // The feedback fault lies about a click that worked; every other fault
            // breaks the outcome.
            assert_eq!(
                faulty.truth.achieved,
                fault == Fault::IframeNoChange,
                "{fault} on {task} layout {index}: {}",
                faulty.truth.detail
            );
            // The outcome policy catches every fired stage fault.
            let outcome = faulty
                .judgements
                .iter()
                .find(|(p, _)| p == "outcome")
                .map(|(_, j)| j.as_ref().expect("a built-in policy judges"))
                .unwrap();
            assert_eq!(
                outcome.verdict == Verdict::Success,
                faulty.truth.achieved,
                "outcome on {task} layout {index}: {}",
                outcome.message
            );

            let working = run_trial(&h.env, d, None).await.unwrap();
            assert!(working.witness.is_none());
            assert!(
                working.truth.achieved,
                "{task} layout {index}: {}",
                working.truth.detail
            );
            let outcome = working
                .judgements
                .iter()
                .find(|(p, _)| p == "outcome")
                .map(|(_, j)| j.as_ref().expect("a built-in policy judges"))
                .unwrap();
            assert_eq!(outcome.verdict, Verdict::Success, "{}", outcome.message);
        }
    }
    h.shutdown().await;
}

/// `click(1e300, 5)` used to reach Chromium, which never answered the input event: the
/// trial ended as the harness's `unresponsive` failure and dropped out of every
/// denominator. It is the agent's parse error, scored like any other failed reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_an_absurd_click_is_the_agents_parse_error_not_an_unresponsive_browser() {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    // The committed decision's layout, with the absurd reply an agent might give (built
    // directly: loading such a decision from a file is refused too).
    let mut d = set
        .find(TaskKind::Grid, DEFAULT_ROOT_SEED, 0)
        .unwrap()
        .clone();
    d.reply = "The item is far to the right.\nclick(1e300, 5)".into();
    d.actions = Vec::new();
    let started = std::time::Instant::now();
    let r = run_trial(&h.env, &d, None)
        .await
        .expect("a parse error, not an infrastructure failure");
    let error = r.parse_error.expect("the reply is the agent's parse error");
    assert!(
        error.contains("line 2") && error.contains("from 0 to 100000"),
        "{error}"
    );
    assert!(!r.truth.achieved, "{}", r.truth.detail);
    assert!(r.actions.is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
    h.shutdown().await;
}

/// What a detection trial stores and is scored on, apart from its timing and costs.
fn record(r: &TrialResult) -> String {
    let judged: Vec<String> = r
        .judgements
        .iter()
        .map(|(p, o)| match o {
            Ok(j) => format!("{p}: {:?} {}", j.verdict, j.message),
            Err(e) => format!("{p}: error {e}"),
        })
        .collect();
    format!(
        "actions {:?}\nexecuted {}\ntool {}\ntext {}\nwitness {:?}\njudged {judged:?}\ntruth {} {}\nparse {:?}",
        r.actions,
        r.executed_json,
        r.tool_message,
        r.observation_text,
        r.witness.as_ref().map(|w| serde_json::to_string(w).unwrap()),
        r.truth.achieved,
        r.truth.detail,
        r.parse_error,
    )
}

/// The detection phase runs a decision's working trial and its trials whose fault acts
/// only on the feedback on one page. Each must be the trial it is alone: the working
/// trial leading (its page now also hit-tests the click) and the faulty one leading, on
/// both tasks such a fault applies to, on three layouts each; the faults fire in the
/// sample, and the page's cost is the leader's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trials_sharing_a_working_page_are_the_trials_each_fault_gets_alone() {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    let mut fired = 0;
    for (task, fault) in [
        (TaskKind::Frame, Fault::IframeNoChange),
        (TaskKind::Grid, Fault::WrongFeedback),
    ] {
        assert!(fault.acts_only_on_feedback());
        for index in [0, 1, 2] {
            let d = set.find(task, DEFAULT_ROOT_SEED, index).unwrap();
            let plan = Some(FaultPlan::new(fault, 3));
            let alone = [
                run_trial(&h.env, d, None).await.unwrap(),
                run_trial(&h.env, d, plan).await.unwrap(),
            ];
            for (lead, follower, order) in [(None, plan, [0, 1]), (plan, None, [1, 0])] {
                let shared = run_trials(&h.env, d, lead, &[follower]).await.unwrap();
                assert_eq!(shared.len(), 2);
                let what = format!("{task} layout {index}, {lead:?} leading");
                for (r, &i) in shared.iter().zip(&order) {
                    assert_eq!(record(r), record(&alone[i]), "{what}");
                }
                assert!(!shared[0].costs.rows().is_empty(), "{what}");
                assert!(
                    shared[1].costs.rows().is_empty(),
                    "{what}: the page is the leader's"
                );
                fired += usize::from(shared[order[1]].witness.is_some());
            }
            assert_ne!(
                alone[0].tool_message, alone[1].tool_message,
                "{task} {index}"
            );
        }
    }
    assert_eq!(fired, 12, "every faulty trial fired, alone and sharing");
    h.shutdown().await;
}

/// What a trial stores and is scored on, apart from its timing, costs and the page
/// clocks in its witness: the capture-timing fault's witness records when the hover,
/// the capture and the tooltip happened, which differ from run to run.
fn record_but_clocks(r: &TrialResult) -> String {
    let mut r = r.clone();
    let fired = r.witness.take().map(|w| w.fault);
    format!("{}\nfired {fired:?}", record(&r))
}

/// The ledger's events as kinds, with the captures' ids and the answer's capture.
fn ledger_shape(r: &TrialResult) -> Vec<String> {
    r.ledger
        .events
        .iter()
        .map(|e| match e.kind.as_str() {
            "capture" => format!("capture {}", e.data["id"]),
            "answer" => format!(
                "answer {} at capture {}",
                e.data["value"], e.data["capture"]
            ),
            k => k.to_string(),
        })
        .collect()
}

/// The detection phase runs a chart decision's working trial and its trial whose fault
/// acts only on the capture's timing on one page: the page captures early for the
/// rider, its ledger is judged there, then the working trial settles and captures. Each
/// must be the trial it is alone: the same record, verdicts and truth, the rider's
/// ledger the same events as alone, and the rider's fault fired on every layout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_timing_trial_on_the_working_page_is_the_trial_it_is_alone() {
    let h = common::harness().await;
    let set = embedded_default().unwrap();
    let fault = Fault::CaptureBeforeTooltip;
    assert!(fault.acts_only_on_capture_timing());
    for index in [0, 1, 2, 3] {
        let d = set.find(TaskKind::Chart, DEFAULT_ROOT_SEED, index).unwrap();
        let plan = Some(FaultPlan::new(fault, 3));
        let alone = [
            run_trial(&h.env, d, None).await.unwrap(),
            run_trial(&h.env, d, plan).await.unwrap(),
        ];
        let shared = run_trials(&h.env, d, None, &[plan]).await.unwrap();
        assert_eq!(shared.len(), 2);
        let what = format!("chart layout {index}");
        for (r, a) in shared.iter().zip(&alone) {
            assert_eq!(record_but_clocks(r), record_but_clocks(a), "{what}");
        }
        assert_eq!(ledger_shape(&shared[1]), ledger_shape(&alone[1]), "{what}");
        // The working trial's ledger also holds the rider's capture: its answer is
        // judged against its own, the page's last.
        let working = ledger_shape(&shared[0]);
        assert!(
            working.last().unwrap().ends_with("at capture 2"),
            "{what}: {working:?}"
        );
        assert!(alone[0].truth.achieved, "{what}: {}", alone[0].truth.detail);
        assert!(
            !shared[1].truth.achieved,
            "{what}: {}",
            shared[1].truth.detail
        );
        assert!(
            shared[1].witness.is_some(),
            "{what}: the rider's fault fired"
        );
        assert_ne!(shared[0].after_png, shared[1].after_png, "{what}");
        assert!(!shared[0].costs.rows().is_empty(), "{what}");
        assert!(
            shared[1].costs.rows().is_empty(),
            "{what}: the page is the leader's"
        );
    }
    h.shutdown().await;
}
