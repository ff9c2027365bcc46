//! The MiniWoB++ suite on a real fixture server and a real Chromium: the pages are
//! hygienic (an idle page and a click on blank space change nothing; no reward text in
//! anything a policy sees), and MiniWoB's seeding draws distinct, reproducible problems.

mod common;

use faultline::engine::session::Session;
use faultline_tasks::layout::IMAGE;
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
use faultline_tasks::{Layout, MiniwobTask, Point, TaskKind};
use std::collections::BTreeSet;
use std::time::Duration;

/// The page's markup without its scripts (which carry the seed): what MiniWoB drew for
/// this episode, the task area and anything it appended to the body (a dialog).
const PROBLEM_JS: &str = "Array.from(document.body.children).filter((e) => e.tagName !== 'SCRIPT').map((e) => e.outerHTML).join('')";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_page_and_a_blank_click_change_nothing_and_no_reward_text_is_shown() {
    let h = common::harness().await;
    for task in TaskKind::MINIWOB {
        let layout = Layout::for_root(DEFAULT_ROOT_SEED, task, 0);
        let mut s = Session::open(&h.env, &layout, None, IMAGE).await.unwrap();
        let (obs0, state0) = s.rt().observe_now().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let (obs1, state1) = s.rt().observe_now().await.unwrap();
        assert_eq!(state0, state1, "{task}: the idle page changed");
        assert_eq!(obs0.png, obs1.png, "{task}: the idle page's pixels changed");
        // Blank space, right of the task area. A focused control (the dialog's close
        // button) loses its focus ring, as on any page; nothing else may change.
        let focused = s
            .rt()
            .page
            .eval("document.activeElement !== null && document.activeElement !== document.body")
            .await
            .unwrap();
        s.rt().page.click(Point::new(700.0, 500.0)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Leaving the focused control is the one change a blank click may make, here
        // and in every look after it.
        let focus_as_before = |mut state: faultline_policies::PageState| {
            if focused == serde_json::Value::Bool(true) {
                for (after, before) in state.frames.iter_mut().zip(&state0.frames) {
                    after.focus.clone_from(&before.focus);
                }
            }
            state
        };
        let (obs2, state2) = s.rt().observe_now().await.unwrap();
        let state2 = focus_as_before(state2);
        assert_eq!(state0, state2, "{task}: a blank click changed the page");
        if focused != serde_json::Value::Bool(true) {
            assert_eq!(
                obs0.png, obs2.png,
                "{task}: a blank click changed the pixels"
            );
        }
        // No click canvas, no click stamps, no HUD, no START cover.
        let traces = s
            .rt()
            .page
            .eval("document.querySelectorAll('#click-canvas, [data-tampered], #reward-display, #sync-task-cover').length")
            .await
            .unwrap();
        assert_eq!(traces, serde_json::json!(0), "{task}");
        for text in [&obs0.text, &state0.top().unwrap().text] {
            let lower = text.to_lowercase();
            for leak in ["reward", "episodes done", "time left"] {
                assert!(!lower.contains(leak), "{task}: {leak:?} in {text:?}");
            }
            // The START cover's label (a query may say "starts with").
            assert!(!text.contains("START"), "{task}: START in {text:?}");
        }
        let (truth, _) = s.peek();
        assert!(
            !truth.achieved && truth.detail.starts_with("open"),
            "{task}: {}",
            truth.detail
        );
        // After a terminal event, the page does not start another episode (no START
        // cover comes back): end it the way the page would, and look again.
        s.rt()
            .page
            .eval("core.endEpisode(-1.0); true")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (_, state3) = s.rt().observe_now().await.unwrap();
        let state3 = focus_as_before(state3);
        assert_eq!(
            state0, state3,
            "{task}: the end of the episode changed the page"
        );
        s.record(None).await.unwrap();
        let (truth, _) = s.peek();
        assert!(
            !truth.achieved && truth.detail.contains("raw reward -1"),
            "{task}: {}",
            truth.detail
        );
        s.finish().unwrap();
    }
    h.shutdown().await;
}

/// The next draw of the page's seeded `Math.random`.
const NEXT_DRAW_JS: &str = "Math.random()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_seeds_draw_forty_streams_and_a_seed_draws_the_same_problem_twice() {
    let h = common::harness().await;
    for task in TaskKind::MINIWOB {
        let mut problems = BTreeSet::new();
        let mut streams = BTreeSet::new();
        for index in 0..40 {
            let layout = Layout::for_root(DEFAULT_ROOT_SEED, task, index);
            let mut a = Session::open(&h.env, &layout, None, IMAGE).await.unwrap();
            let pa = a.rt().page.eval(PROBLEM_JS).await.unwrap();
            // The seeded stream's next draw after the problem.
            let ra = a.rt().page.eval(NEXT_DRAW_JS).await.unwrap();
            a.finish().unwrap();
            if index < 3 {
                // A fresh context, the same seed: the same problem and the same stream.
                let mut b = Session::open(&h.env, &layout, None, IMAGE).await.unwrap();
                let pb = b.rt().page.eval(PROBLEM_JS).await.unwrap();
                let rb = b.rt().page.eval(NEXT_DRAW_JS).await.unwrap();
                b.finish().unwrap();
                assert_eq!(pa, pb, "{task} layout {index}");
                assert_eq!(ra, rb, "{task} layout {index}");
            }
            problems.insert(pa.to_string());
            streams.insert(ra.to_string());
        }
        assert_eq!(
            streams.len(),
            40,
            "{task}: 40 seeds, {} streams",
            streams.len()
        );
        // Some tasks draw from a few thousand problems only (focus-text: the box's 21 x
        // 141 margins; use-autocomplete: a country and how much of its start and end the
        // query quotes), so two of 40 seeds may draw the same one (the seeded streams
        // above still differ); more than two repeats would mean the seeds collapse.
        let want = 38;
        assert!(
            problems.len() >= want,
            "{task}: 40 seeds, {} problems",
            problems.len()
        );
    }
    h.shutdown().await;
}

/// Each MiniWoB++ task has a fault that changes MiniWoB's reward on a real page: the
/// committed decision succeeds clean and does not under the fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_changes_the_reward_on_every_task() {
    use faultline::engine::trial::run_trial;
    use faultline_faults::{Fault, FaultPlan};
    let h = common::harness().await;
    let committed = faultline_tasks::decision::embedded_default().unwrap();
    for task in TaskKind::MINIWOB {
        let d = committed.find(task, DEFAULT_ROOT_SEED, 0).unwrap();
        let clean = run_trial(&h.env, d, None).await.unwrap();
        assert!(clean.truth.achieved, "{task}: {}", clean.truth.detail);
        let fault = if task == TaskKind::Miniwob(MiniwobTask::EnterText) {
            Fault::TokenLeak
        } else {
            Fault::ClickSwallowed
        };
        let faulty = run_trial(&h.env, d, Some(FaultPlan::new(fault, 7)))
            .await
            .unwrap();
        assert!(
            !faulty.truth.achieved,
            "{task} under {fault}: {}",
            faulty.truth.detail
        );
    }
    h.shutdown().await;
}

/// The outcome policy reads only the page: on a clean replay that MiniWoB rewards, it
/// confirms every task whose result the page shows, says "no change" where the page keeps
/// no trace (a click on a button or a link, a focus MiniWoB takes away at once), and calls
/// a rewarded trial a failure only where the page undoes what it rewarded
/// (click-collapsible).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outcome_policy_reads_the_result_where_the_page_shows_it() {
    use faultline::engine::trial::run_trial;
    use faultline_policies::Verdict;
    let h = common::harness().await;
    let committed = faultline_tasks::decision::embedded_default().unwrap();
    for task in TaskKind::MINIWOB {
        for index in [0, 1] {
            let d = committed.find(task, DEFAULT_ROOT_SEED, index).unwrap();
            let r = run_trial(&h.env, d, None).await.unwrap();
            assert!(r.truth.achieved, "{task} {index}: {}", r.truth.detail);
            let j = r
                .judgements
                .iter()
                .find(|(p, _)| p == "outcome")
                .and_then(|(_, j)| j.as_ref().ok())
                .expect("the outcome policy judged");
            let allowed: &[Verdict] = match task {
                TaskKind::Miniwob(MiniwobTask::ClickButton)
                | TaskKind::Miniwob(MiniwobTask::ClickLink)
                | TaskKind::Miniwob(MiniwobTask::FocusText) => &[Verdict::NoChange],
                // A text field or a button keeps no trace of a click, a radio or a box
                // does; a file clicked at the top of the tree leaves it as it was.
                TaskKind::Miniwob(MiniwobTask::ClickWidget)
                | TaskKind::Miniwob(MiniwobTask::NavigateTree) => {
                    &[Verdict::Success, Verdict::NoChange]
                }
                // MiniWoB's Submit sits in a <p> that jQuery UI takes for a second
                // accordion header: the click that earns the reward also collapses the
                // section, so the page after the action shows it closed.
                TaskKind::Miniwob(MiniwobTask::ClickCollapsible) => &[Verdict::Fail],
                _ => &[Verdict::Success],
            };
            assert!(
                allowed.contains(&j.verdict),
                "{task} {index}: outcome says {} ({})",
                j.verdict,
                j.message
            );
        }
    }
    h.shutdown().await;
}

/// `tool.capture_before_settled` on the two tasks whose recorded decisions wait: the
/// page right after the action before the wait is not the page after it (the
/// autocomplete's menu has no item yet, the accordion's section is 1 px high), the fault
/// fires with the recorded wait in its witness on every layout, and on at least one of
/// three layouts per task the click the wait was for meets something else and MiniWoB's
/// reward says the episode failed where the clean replay of the same decision is
/// rewarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipping_the_recorded_waits_acts_before_the_page_settled() {
    use faultline::engine::roundtrip::execute::NEXT_ACTION_MET;
    use faultline::engine::trial::run_trial;
    use faultline_faults::{Fault, FaultPlan};
    use faultline_tasks::Action;
    /// What the wait lets settle, measured on the page.
    const MENU_ITEMS: &str = "Array.from(document.querySelectorAll('.ui-autocomplete .ui-menu-item')).filter((e) => e.getBoundingClientRect().height > 0).length";
    const SECTION_HEIGHT: &str =
        "document.querySelector('#area .ui-accordion-content').getBoundingClientRect().height";
    let h = common::harness().await;
    let committed = faultline_tasks::decision::embedded_default().unwrap();
    let mut broken = BTreeSet::new();
    for (task, measure) in [
        (TaskKind::Miniwob(MiniwobTask::UseAutocomplete), MENU_ITEMS),
        (
            TaskKind::Miniwob(MiniwobTask::ClickCollapsible),
            SECTION_HEIGHT,
        ),
    ] {
        for index in [0, 1, 2] {
            let at = format!("{task} layout {index}");
            let d = committed.find(task, DEFAULT_ROOT_SEED, index).unwrap();
            let k = d
                .actions
                .iter()
                .position(|a| matches!(a, Action::Wait { .. }))
                .unwrap_or_else(|| panic!("{at}: the decision waits"));
            let Action::Wait { ms } = d.actions[k] else {
                unreachable!()
            };
            let next = d.actions[k + 1..]
                .iter()
                .find_map(Action::point)
                .unwrap_or_else(|| panic!("{at}: a pointer action follows the wait"));

            // The page itself, driven directly: what the wait lets settle.
            let layout = Layout::for_root(DEFAULT_ROOT_SEED, task, index);
            let mut s = Session::open(&h.env, &layout, None, IMAGE).await.unwrap();
            let page = &s.rt().page;
            let query = page
                .eval("document.getElementById('query').innerText")
                .await
                .unwrap()
                .as_str()
                .unwrap_or_default()
                .to_string();
            let source = d.space.extent(d.image);
            let to_viewport = |p: Point| p.scale(source, page.viewport());
            for a in &d.actions[..k] {
                match a {
                    Action::Click { x, y } => {
                        page.click(to_viewport(Point::new(*x, *y))).await.unwrap()
                    }
                    Action::Type { text } => page.insert_text(text).await.unwrap(),
                    other => panic!("{at}: unexpected action before the wait: {other:?}"),
                }
            }
            let right_after = page.eval(measure).await.unwrap().as_f64().unwrap();
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let settled = page.eval(measure).await.unwrap().as_f64().unwrap();
            let p = to_viewport(next);
            let met_settled = page
                .eval(
                    &NEXT_ACTION_MET
                        .replace("{x}", &p.x.to_string())
                        .replace("{y}", &p.y.to_string()),
                )
                .await
                .unwrap();
            s.finish().unwrap();
            eprintln!("{at} ({query:?}): {right_after} right after, {settled} after {ms} ms; the next action meets {met_settled} once settled");
            assert!(
                right_after < settled,
                "{at}: the wait let nothing settle ({right_after} -> {settled})"
            );
            if task == TaskKind::Miniwob(MiniwobTask::UseAutocomplete) {
                assert_eq!(right_after, 0.0, "{at}: menu items right after typing");
            }

            // The same decision replayed clean, and with its waits skipped.
            let clean = run_trial(&h.env, d, None).await.unwrap();
            assert!(clean.truth.achieved, "{at} clean: {}", clean.truth.detail);
            assert!(clean.witness.is_none(), "{at}: a working trial fired");
            let plan = FaultPlan::new(Fault::CaptureBeforeSettled, 7);
            let faulty = run_trial(&h.env, d, Some(plan)).await.unwrap();
            let w = faulty
                .witness
                .as_ref()
                .unwrap_or_else(|| panic!("{at}: the fault did not fire"));
            assert_eq!(w.fault, Fault::CaptureBeforeSettled.id());
            assert_eq!(w.data["skipped"][0]["ms"], serde_json::json!(ms), "{at}");
            let met_unsettled = &w.data["skipped"][0]["next_action_met"];
            eprintln!(
                "{at}: with the waits skipped the next action met {met_unsettled}; reward: {}",
                faulty.truth.detail
            );
            // Whether the click still met what the wait was for depends on how long the
            // machine takes between the skipped wait and the click (on a loaded machine
            // the accordion may have opened far enough): MiniWoB's reward says what
            // happened. A query that names only the start of the word accepts the typed
            // start alone, so the Submit the menu item would have covered is rewarded.
            if met_unsettled != &met_settled && !faulty.truth.achieved {
                broken.insert(task);
            }
        }
    }
    h.shutdown().await;
    assert_eq!(
        broken.len(),
        2,
        "tasks where the unsettled click met something else and was not rewarded: {broken:?}"
    );
}
