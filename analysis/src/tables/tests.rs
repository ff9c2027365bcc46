use super::*;
use crate::config::AnalysisConfig;
use crate::db::tests::{row, verdict};
use crate::format::{csv_field, fmt4};
use crate::stats::{clustered_wilson, ClusteredSample};

/// A trial of `task` whose answer key says `achieved`.
fn keyed(key: &str, task: TaskKind, achieved: bool) -> TrialRow {
    let mut t = row(key);
    t.task = task;
    t.truth_achieved = achieved;
    t
}

#[test]
fn answer_key_rows_count_agreement_precision_and_recall_per_key() {
    use faultline_tasks::MiniwobTask;
    use TaskKind::{Grid, Search};
    const TAB: TaskKind = TaskKind::Miniwob(MiniwobTask::ClickTab);
    const ENTER: TaskKind = TaskKind::Miniwob(MiniwobTask::EnterText);
    // MiniWoB++: 3 rewarded trials, 2 not; the policy says Success on 2 rewarded
    // trials and on both unrewarded ones: precision 2/4, recall 2/3, agreement 2/5
    // (the rewarded trial called No change and the two unrewarded ones called
    // Success disagree).
    let mut trials = vec![
        keyed("m1", TAB, true),
        keyed("m2", TAB, true),
        keyed("m3", ENTER, true),
        keyed("m4", ENTER, false),
        keyed("m5", ENTER, false),
        // Own ledgers: 1 achieved, 3 not; Success only on the achieved one.
        keyed("o1", Grid, true),
        keyed("o2", Grid, false),
        keyed("o3", Search, false),
        keyed("o4", Search, false),
    ];
    // A faulty trial whose fault did not fire is never counted.
    let mut quiet = keyed("q", TAB, false);
    quiet.fired = Some(false);
    trials.push(quiet);
    let v = |k: &str, verdict: &str| super::super::db::tests::verdict(k, "outcome", verdict);
    let verdicts = vec![
        v("m1", "success"),
        v("m2", "success"),
        v("m3", "no_change"),
        v("m4", "success"),
        v("m5", "success"),
        v("o1", "success"),
        v("o2", "fail"),
        v("o3", "no_change"),
        v("o4", "fail"),
        v("q", "success"),
    ];
    let rows = answer_key(&trials, &verdicts, &["outcome".to_string()]);
    let find = |key: AnswerKey, task: Option<TaskKind>| {
        rows.iter()
            .find(|r| r.key == key && r.task == task)
            .unwrap_or_else(|| panic!("no row for {key:?} {task:?}"))
    };
    let pooled = find(AnswerKey::SuiteReward, None);
    assert_eq!(
        (
            pooled.n,
            pooled.agree,
            pooled.said_success,
            pooled.key_success,
            pooled.both
        ),
        (5, 2, 4, 3, 2)
    );
    let cfg = AnalysisConfig::for_run(1);
    let (precision, recall) = (
        pooled.precision(&cfg).unwrap(),
        pooled.recall(&cfg).unwrap(),
    );
    // Swapped precision and recall would read 2/3 and 2/4.
    assert!((precision.point - 0.5).abs() < 1e-12, "{precision:?}");
    assert!((recall.point - 2.0 / 3.0).abs() < 1e-12, "{recall:?}");
    assert_eq!((precision.n, recall.n), (4, 3));
    let agreement = pooled.agreement(&cfg).unwrap();
    assert!((agreement.point - 0.4).abs() < 1e-12);
    for e in [agreement, precision, recall] {
        assert!(e.lower < e.point && e.point < e.upper, "no width: {e:?}");
    }
    let tab = find(AnswerKey::SuiteReward, Some(TAB));
    assert_eq!((tab.n, tab.agree, tab.both), (2, 2, 2));
    let own = find(AnswerKey::OwnLedger, None);
    assert_eq!(
        (
            own.n,
            own.agree,
            own.said_success,
            own.key_success,
            own.both
        ),
        (4, 4, 1, 1, 1)
    );
    let own_agreement = own.agreement(&cfg).unwrap();
    assert_eq!(own_agreement.n, 4);
    assert!(own_agreement.lower < own_agreement.upper);
    // The suite's rows first (tasks, then pooled), then the own ledgers'.
    let order: Vec<(AnswerKey, Option<TaskKind>)> = rows.iter().map(|r| (r.key, r.task)).collect();
    assert_eq!(
        order,
        vec![
            (AnswerKey::SuiteReward, Some(TAB)),
            (AnswerKey::SuiteReward, Some(ENTER)),
            (AnswerKey::SuiteReward, None),
            (AnswerKey::OwnLedger, Some(Search)),
            (AnswerKey::OwnLedger, Some(Grid)),
            (AnswerKey::OwnLedger, None),
        ]
    );
    // The CSV carries both keys, counts and intervals.
    let csv = answer_key_csv(&rows, &cfg);
    let pooled_line = csv
        .lines()
        .find(|l| l.starts_with("miniwob_reward,pooled,outcome,"))
        .unwrap();
    assert!(
        pooled_line.starts_with("miniwob_reward,pooled,outcome,5,2,4,3,2,0.4000,"),
        "{pooled_line}"
    );
    assert!(csv
        .lines()
        .any(|l| l.starts_with("own_ledger,pooled,outcome,4,4,1,1,1,1.0000,")));
    // No external-suite trial, no section.
    assert!(answer_key(&trials[5..9], &verdicts, &["outcome".to_string()]).is_empty());
}

#[test]
fn caught_means_agreeing_with_the_ledger() {
    let mut not_happened = row("a");
    not_happened.truth_achieved = false;
    // A feedback fault: the click worked, the tool lied.
    let mut happened = row("b");
    happened.truth_achieved = true;
    let mut not_fired = row("c");
    not_fired.fired = Some(false);
    let trials = vec![not_happened, happened, not_fired];
    let verdicts = vec![
        verdict("a", "pixel", "no_change"),
        verdict("b", "pixel", "no_change"),
        verdict("c", "pixel", "no_change"),
        verdict("a", "outcome", "fail"),
        verdict("b", "outcome", "success"),
        verdict("c", "outcome", "success"),
    ];
    let policies = vec!["pixel".to_string(), "outcome".to_string()];
    let rows = detection(&trials, &verdicts, &policies);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].policy, "pixel");
    assert_eq!(
        (
            rows[0].fired,
            rows[0].caught,
            rows[0].missed,
            rows[0].alarms
        ),
        (2, 1, 1, 2)
    );
    assert_eq!(
        (
            rows[1].fired,
            rows[1].caught,
            rows[1].missed,
            rows[1].alarms
        ),
        (2, 2, 0, 1)
    );
    let f = firing(&trials);
    assert_eq!((f[0].faulty_trials, f[0].fired, f[0].not_fired), (3, 2, 1));
}

#[test]
fn false_alarms_count_only_confirmed_outcomes() {
    let mut ok = row("w1");
    ok.condition = Condition::Working;
    ok.fired = None;
    ok.truth_achieved = true;
    let mut broken = row("w2");
    broken.condition = Condition::Working;
    broken.fired = None;
    broken.truth_achieved = false;
    let verdicts = vec![
        verdict("w1", "generic", "no_change"),
        verdict("w2", "generic", "no_change"),
    ];
    let rows = false_alarms(&[ok, broken], &verdicts, &["generic".to_string()]);
    assert_eq!(
        (
            rows[0].n_working,
            rows[0].false_alarms,
            rows[0].outcome_failed
        ),
        (2, 1, 1)
    );
    assert_eq!(
        false_alarms_csv(&rows, &AnalysisConfig::for_run(1)),
        "task,policy,n_working,false_alarms,ci_low,ci_high,ci_method\ngrid,generic,2,1,0.2065,1.0000,wilson\n"
    );
}

/// A fired faulty trial of `fault` on `task` with the given stored layer and stage.
pub(crate) fn faulty(
    key: &str,
    fault: &str,
    stage: &str,
    layer: Option<&str>,
    task: &str,
) -> TrialRow {
    let mut t = row(key);
    t.fault = Some(fault.parse().unwrap());
    t.stage = Some(stage.parse().unwrap());
    t.layer = layer.map(|l| l.parse().unwrap());
    t.task = task.parse().unwrap();
    t
}

#[test]
fn rows_are_ordered_by_layer_fault_task_and_policy() {
    let trials = vec![
        faulty("b", "tool.wrong_feedback", "feedback", Some("tool"), "form"),
        faulty("d", "dom.stale_element", "execute", Some("dom"), "select"),
        faulty("e", "dom.stale_element", "execute", Some("dom"), "form"),
        faulty("f", "dom.stale_element", "execute", Some("dom"), "search"),
        // A version-1 row: no layer stored, the stage says `tool`.
        faulty("g", "parse.token_leak", "parse", None, "search"),
        faulty("h", "execute.unscaled_coordinates", "execute", None, "grid"),
        faulty(
            "i",
            "transport.slow_response",
            "observe",
            Some("transport"),
            "form",
        ),
        faulty("j", "dom.duplicate_label", "execute", Some("dom"), "grid"),
    ];
    let mut verdicts = Vec::new();
    for t in &trials {
        // Arrival order is the reverse of the run's policy order.
        verdicts.push(verdict(&t.trial_key, "outcome", "fail"));
        verdicts.push(verdict(&t.trial_key, "unverified", "success"));
    }
    let policies = vec!["unverified".to_string(), "outcome".to_string()];
    let expected = [
        ("transport", "transport.slow_response", "form"),
        ("dom", "dom.duplicate_label", "grid"),
        ("dom", "dom.stale_element", "search"),
        ("dom", "dom.stale_element", "form"),
        ("dom", "dom.stale_element", "select"),
        ("execution", "execute.unscaled_coordinates", "grid"),
        ("tool", "parse.token_leak", "search"),
        ("tool", "tool.wrong_feedback", "form"),
    ];
    let rows = detection(&trials, &verdicts, &policies);
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.layer.name(),
                r.fault.id(),
                r.task.name(),
                r.policy.as_str(),
            )
        })
        .collect();
    let want: Vec<_> = expected
        .iter()
        .flat_map(|&(l, f, t)| [(l, f, t, "unverified"), (l, f, t, "outcome")])
        .collect();
    assert_eq!(got, want);
    let fired: Vec<_> = firing(&trials)
        .iter()
        .map(|r| (r.layer.to_string(), r.fault.to_string(), r.task.to_string()))
        .collect();
    let want: Vec<_> = expected
        .iter()
        .map(|&(l, f, t)| (l.to_string(), f.to_string(), t.to_string()))
        .collect();
    assert_eq!(fired, want);
}

#[test]
fn a_trial_without_a_stored_layer_takes_its_fault_s_layer() {
    let mut t = row("v1");
    t.layer = None;
    // The four reference faults of version 1: their stage's reference layer.
    for (fault, layer) in [
        (Fault::TokenLeak, Layer::Tool),
        (Fault::IframeNoChange, Layer::Tool),
        (Fault::CaptureBeforeTooltip, Layer::Tool),
        (Fault::UnscaledCoordinates, Layer::Execution),
    ] {
        t.fault = Some(fault);
        assert_eq!(t.fault_layer(), Some(layer), "{fault}");
    }
    // A stored layer wins; a working trial has none.
    t.layer = Some(Layer::SelfReport);
    assert_eq!(t.fault_layer(), Some(Layer::SelfReport));
    (t.fault, t.layer) = (None, None);
    assert_eq!(t.fault_layer(), None);
}

#[test]
fn detection_csv_keeps_its_columns_and_appends_the_layer() {
    let mut v1 = row("a");
    v1.layer = None;
    let trials = vec![v1];
    let verdicts = vec![verdict("a", "outcome", "fail")];
    let rows = detection(&trials, &verdicts, &["outcome".to_string()]);
    assert_eq!(
        detection_csv(&rows, &AnalysisConfig::for_run(1)),
        "fault,stage,task,policy,fired,caught,missed,alarms,ci_low,ci_high,ci_method,layer\n\
         execute.unscaled_coordinates,execute,grid,outcome,1,1,0,1,0.2065,1.0000,wilson,execution\n"
    );
}

#[test]
fn firing_collects_the_distinct_reasons_a_fault_did_not_fire() {
    let mut trials = Vec::new();
    for (key, fired, reason) in [
        ("a", true, None),
        ("b", false, Some("the page sent no save request")),
        ("c", false, Some("the page sent no save request")),
        ("d", false, Some("another reason")),
        ("e", false, None),
    ] {
        let mut t = faulty(
            key,
            "transport.slow_response",
            "observe",
            Some("transport"),
            "form",
        );
        t.fired = Some(fired);
        t.not_fired_reason = reason.map(str::to_string);
        trials.push(t);
    }
    let f = firing(&trials);
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].faulty_trials, f[0].fired, f[0].not_fired), (5, 1, 4));
    assert_eq!(
        f[0].not_fired_reasons,
        vec!["another reason", "the page sent no save request"]
    );
    assert_eq!(f[0].not_fired_unexplained, 1);
}

#[test]
fn layers_pool_faults_and_tasks_with_task_layout_clusters() {
    // Layer dom: two faults on grid and form, layouts 0 and 1 of each task; the same
    // layout index on two tasks is two pages, so four clusters.
    let mut trials = Vec::new();
    let mut verdicts = Vec::new();
    for (key, fault, task, layout, outcome_caught) in [
        ("g0a", "dom.stale_element", "grid", 0, true),
        ("g0b", "dom.duplicate_label", "grid", 0, true),
        ("g1a", "dom.stale_element", "grid", 1, false),
        ("g1b", "dom.duplicate_label", "grid", 1, false),
        ("f0a", "dom.stale_element", "form", 0, true),
        ("f0b", "dom.duplicate_label", "form", 0, true),
        ("f1a", "dom.stale_element", "form", 1, true),
    ] {
        let mut t = faulty(key, fault, "execute", Some("dom"), task);
        t.layout_index = layout;
        t.truth_achieved = false;
        trials.push(t);
        let v = if outcome_caught { "fail" } else { "success" };
        verdicts.push(verdict(key, "outcome", v));
        verdicts.push(verdict(key, "unverified", "success"));
    }
    // Neither a fault that did not fire nor a working trial counts, whatever their
    // verdicts say.
    let mut quiet = faulty("q", "dom.shadow_root", "execute", Some("dom"), "select");
    quiet.fired = Some(false);
    trials.push(quiet);
    verdicts.push(verdict("q", "outcome", "fail"));
    let mut working = faulty("w", "dom.stale_element", "execute", Some("dom"), "grid");
    (working.condition, working.fired) = (Condition::Working, None);
    trials.push(working);
    verdicts.push(verdict("w", "outcome", "fail"));
    // A second layer, from a version-1 row.
    let mut v1 = faulty("t", "parse.token_leak", "parse", None, "search");
    v1.truth_achieved = false;
    trials.push(v1);
    verdicts.push(verdict("t", "outcome", "fail"));

    let policies = vec!["unverified".to_string(), "outcome".to_string()];
    let cfg = AnalysisConfig::for_run(1);
    let rows = layers(&trials, &verdicts, &policies, &cfg);
    let keys: Vec<_> = rows
        .iter()
        .map(|r| (r.layer.name(), r.policy.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("dom", "unverified"),
            ("dom", "outcome"),
            ("tool", "outcome")
        ]
    );
    let dom = &rows[1];
    assert_eq!((dom.faults, dom.tasks, dom.fired, dom.caught), (2, 2, 7, 5));
    // The interval is clustered_wilson on exactly these clusters, in key order:
    // (form, 0), (form, 1), (grid, 0), (grid, 1).
    let expected = clustered_wilson(
        &ClusteredSample::from_binary(vec![
            vec![true, true],
            vec![true],
            vec![true, true],
            vec![false, false],
        ])
        .unwrap(),
        cfg.level,
    )
    .unwrap();
    let got = dom.rate.as_ref().unwrap();
    assert_eq!(*got, expected);
    assert_eq!(got.estimate.clusters, Some(4));
    assert!(got.n_effective >= 4.0 && got.n_effective < 7.0);
    // Wider than a Wilson interval that took the 7 trials as independent.
    let naive = cfg.proportion(5, 7).unwrap();
    assert!(got.estimate.lower < naive.lower && got.estimate.upper > naive.upper);
    // Unverified says success on every trial whose outcome failed: caught nothing.
    assert_eq!((rows[0].fired, rows[0].caught), (7, 0));

    let csv = layers_csv(&rows);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "layer,policy,faults,tasks,fired,caught,rate,ci_low,ci_high,ci_method,clusters,n_effective,design_effect,note"
    );
    assert_eq!(
        lines.nth(1).unwrap(),
        format!(
            "dom,outcome,2,2,7,5,0.7143,{},{},wilson-clustered,4,{},{},",
            fmt4(expected.estimate.lower),
            fmt4(expected.estimate.upper),
            fmt4(expected.n_effective),
            fmt4(expected.design_effect),
        )
    );
    // Unanimous outcomes: the design effect falls back to its cap and the note (with
    // a comma in it) is quoted.
    assert!(csv.lines().nth(1).unwrap().ends_with(&format!(
        ",wilson-clustered,4,4.0000,1.7500,{}",
        csv_field(crate::stats::NOTE_CONSTANT_OUTCOMES)
    )));
    assert!(csv_field(crate::stats::NOTE_CONSTANT_OUTCOMES).starts_with('"'));
    // One trial, one cluster of size 1: plain Wilson, nothing assumed, no note.
    assert_eq!(
        lines.next().unwrap(),
        "tool,outcome,1,1,1,1,1.0000,0.2065,1.0000,wilson-clustered,1,1.0000,1.0000,"
    );
    assert_eq!(lines.next(), None);
}

#[test]
fn the_catalogue_is_a_fault_by_policy_matrix_of_caught_over_fired() {
    let mut trials = Vec::new();
    let mut verdicts = Vec::new();
    for (key, fault, layer, task, fired, truth, outcome) in [
        // Fires on both tasks; outcome catches all but one, unverified none.
        (
            "a",
            "dom.stale_element",
            "dom",
            "select",
            true,
            false,
            "fail",
        ),
        ("b", "dom.stale_element", "dom", "form", true, false, "fail"),
        (
            "c",
            "dom.stale_element",
            "dom",
            "form",
            true,
            false,
            "success",
        ),
        // Did not fire: in the faulty trials, in no caught/fired count.
        (
            "d",
            "dom.stale_element",
            "dom",
            "form",
            false,
            false,
            "fail",
        ),
        // Never fired at all.
        (
            "e",
            "transport.slow_response",
            "transport",
            "form",
            false,
            true,
            "fail",
        ),
    ] {
        let mut t = faulty(key, fault, "execute", Some(layer), task);
        (t.fired, t.truth_achieved) = (Some(fired), truth);
        trials.push(t);
        verdicts.push(verdict(key, "unverified", "success"));
        verdicts.push(verdict(key, "outcome", outcome));
    }
    let policies = vec!["unverified".to_string(), "outcome".to_string()];
    let rows = catalogue(
        &firing(&trials),
        &detection(&trials, &verdicts, &policies),
        &policies,
    );
    assert_eq!(
        rows,
        vec![
            CatalogueRow {
                layer: Layer::Transport,
                fault: Fault::SlowResponse,
                tasks: vec![TaskKind::Form],
                faulty_trials: 1,
                fired: 0,
                by_policy: vec![(0, 0), (0, 0)],
            },
            CatalogueRow {
                layer: Layer::Dom,
                fault: Fault::StaleElement,
                tasks: vec![TaskKind::Form, TaskKind::Select],
                faulty_trials: 4,
                fired: 3,
                by_policy: vec![(0, 3), (2, 3)],
            },
        ]
    );
}

#[test]
fn csv_fields_are_quoted_when_needed() {
    assert_eq!(csv_field("a,b"), "\"a,b\"");
    assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_eq!(csv_field("plain"), "plain");
}

/// A detection trial of `task` on `layout`: working, or faulty and fired (or not).
fn judged(
    key: &str,
    task: TaskKind,
    layout: u32,
    condition: Condition,
    fired: bool,
    achieved: bool,
) -> TrialRow {
    let mut t = keyed(key, task, achieved);
    t.layout_index = layout;
    t.condition = condition;
    if condition == Condition::Working {
        (t.fault, t.stage, t.fired, t.layer) = (None, None, None, None);
    } else {
        t.fired = Some(fired);
    }
    t
}

#[test]
fn verifier_cards_count_each_error_over_its_own_denominator() {
    use Condition::{Faulty, Working};
    use TaskKind::{Form, Grid};
    let trials = vec![
        judged("wg0", Grid, 0, Working, true, true),
        judged("fg0a", Grid, 0, Faulty, true, false),
        // A feedback fault: the outcome happened, the tool lied.
        judged("fg0b", Grid, 0, Faulty, true, true),
        judged("wg1", Grid, 1, Working, true, true),
        judged("fg1a", Grid, 1, Faulty, true, false),
        // Did not fire: in no count, whatever its verdicts.
        judged("qg1", Grid, 1, Faulty, false, false),
        // A working trial whose outcome the ledger did not confirm.
        judged("wf0", Form, 0, Working, true, false),
        judged("ff0a", Form, 0, Faulty, true, false),
    ];
    let mut verdicts = Vec::new();
    for (key, outcome, pixel) in [
        ("wg0", "success", Some("fail")),
        ("fg0a", "fail", Some("fail")),
        ("fg0b", "no_change", Some("fail")),
        ("wg1", "fail", Some("fail")),
        ("fg1a", "success", Some("fail")),
        ("qg1", "success", Some("success")),
        // Pixel could not judge this trial (an infrastructure error): no verdict.
        ("wf0", "success", None),
        ("ff0a", "success", Some("fail")),
    ] {
        verdicts.push(verdict(key, "outcome", outcome));
        if let Some(p) = pixel {
            verdicts.push(verdict(key, "pixel", p));
        }
    }
    let policies = vec!["outcome".to_string(), "pixel".to_string()];
    // An external policy that judged nothing still gets its card.
    let external = vec!["plugin".to_string()];
    let cfg = AnalysisConfig::for_run(1);
    let cards = verifier_cards(&trials, &verdicts, &policies, &external, &cfg);
    let order: Vec<(&str, Option<TaskKind>)> =
        cards.iter().map(|r| (r.policy.as_str(), r.task)).collect();
    assert_eq!(
        order,
        [
            ("outcome", Some(Grid)),
            ("outcome", Some(Form)),
            ("outcome", None),
            ("pixel", Some(Grid)),
            ("pixel", Some(Form)),
            ("pixel", None),
            ("plugin", Some(Grid)),
            ("plugin", Some(Form)),
            ("plugin", None),
        ]
    );
    let rate = |c: &CardRate| (c.events, c.n);
    let point = |c: &CardRate| c.rate.as_ref().unwrap().estimate.point;

    // Outcome, pooled. Ledger failed: fg0a, fg1a, wf0, ff0a, of which fg1a, wf0 and ff0a
    // were called Success (FPR 3/4). Ledger succeeded: wg0, fg0b, wg1, of which fg0b and
    // wg1 were not (FNR 2/3). Success verdicts: wg0, fg1a, wf0, ff0a, one confirmed
    // (precision 1/4); recall 1/3.
    let pooled = &cards[2];
    assert_eq!((pooled.fired, pooled.working), (4, 3));
    assert_eq!(
        (
            pooled.true_positives,
            pooled.false_positives,
            pooled.false_negatives,
            pooled.true_negatives
        ),
        (1, 3, 2, 1)
    );
    assert_eq!(rate(&pooled.false_positive_rate), (3, 4));
    assert_eq!(rate(&pooled.false_negative_rate), (2, 3));
    assert_eq!(rate(&pooled.precision), (1, 4));
    assert_eq!(rate(&pooled.recall), (1, 3));
    // The four rates differ, so exchanging any two (FPR and FNR, precision and recall)
    // breaks the checks above and these.
    assert!((point(&pooled.false_positive_rate) - 0.75).abs() < 1e-12);
    assert!((point(&pooled.false_negative_rate) - 2.0 / 3.0).abs() < 1e-12);
    assert!((point(&pooled.precision) - 0.25).abs() < 1e-12);
    assert!((point(&pooled.recall) - 1.0 / 3.0).abs() < 1e-12);
    // Pooled, the clusters are the (task, layout) pages, in key order: FPR's are
    // (form, 0) = wf0, ff0a; (grid, 0) = fg0a; (grid, 1) = fg1a.
    let fpr_sample =
        ClusteredSample::from_binary(vec![vec![true, true], vec![false], vec![true]]).unwrap();
    assert_eq!(
        pooled.false_positive_rate.rate,
        Some(clustered_wilson(&fpr_sample, cfg.level).unwrap())
    );

    // Outcome on grid: FPR 1/2 (fg1a), FNR 2/3 (fg0b, wg1), precision 1/2, recall 1/3,
    // with the layouts as clusters: FNR's are layout 0 = wg0, fg0b and layout 1 = wg1.
    let grid = &cards[0];
    assert_eq!(rate(&grid.false_positive_rate), (1, 2));
    assert_eq!(rate(&grid.false_negative_rate), (2, 3));
    assert_eq!(rate(&grid.precision), (1, 2));
    assert_eq!(rate(&grid.recall), (1, 3));
    let fnr_sample = ClusteredSample::from_binary(vec![vec![false, true], vec![true]]).unwrap();
    assert_eq!(
        grid.false_negative_rate.rate,
        Some(clustered_wilson(&fnr_sample, cfg.level).unwrap())
    );

    // Outcome on form: no outcome happened, so neither FNR nor recall has anything to
    // estimate (n = 0, no estimate, not a 0).
    let form = &cards[1];
    assert_eq!(rate(&form.false_positive_rate), (2, 2));
    assert_eq!(rate(&form.precision), (0, 2));
    assert_eq!(rate(&form.false_negative_rate), (0, 0));
    assert_eq!(rate(&form.recall), (0, 0));
    assert!(form.false_negative_rate.rate.is_none() && form.recall.rate.is_none());

    // Pixel: the trial it could not judge is in none of its counts.
    let pixel = &cards[5];
    assert_eq!((pixel.fired, pixel.working), (4, 2));
    assert_eq!(rate(&pixel.false_positive_rate), (0, 3));
    assert_eq!(rate(&pixel.false_negative_rate), (3, 3));
    assert_eq!(rate(&pixel.precision), (0, 0));
    assert!(pixel.precision.rate.is_none());
    assert_eq!((cards[4].fired, cards[4].working), (1, 0));
    // The plugin judged nothing: every rate has n = 0 and no estimate.
    for r in &cards[6..] {
        assert_eq!((r.fired, r.working), (0, 0));
        for c in [
            &r.false_positive_rate,
            &r.false_negative_rate,
            &r.precision,
            &r.recall,
        ] {
            assert_eq!((c.n, &c.rate), (0, &None));
        }
    }
    // Every estimate has a width.
    for r in &cards {
        for c in [
            &r.false_positive_rate,
            &r.false_negative_rate,
            &r.precision,
            &r.recall,
        ] {
            if let Some(p) = &c.rate {
                assert_eq!(p.estimate.n as u64, c.n);
                assert!(p.estimate.upper - p.estimate.lower > 0.0, "{r:?}");
            }
        }
    }

    // The cards derive from the trials the detection and false-alarm tables count: per
    // policy and task, the same fired and working trials, and the errors are the
    // detection table's misses plus the false alarms, plus the working trials whose
    // outcome failed called Success (wf0 under outcome, which the false-alarm table
    // leaves out).
    let detection = detection(&trials, &verdicts, &policies);
    let alarms = false_alarms(&trials, &verdicts, &policies);
    for r in cards.iter().filter(|r| r.policy != "plugin") {
        let in_scope =
            |task: TaskKind, policy: &str| policy == r.policy && r.task.is_none_or(|t| t == task);
        let d = detection.iter().filter(|d| in_scope(d.task, &d.policy));
        let (fired, missed) = d.fold((0, 0), |(f, m), d| (f + d.fired, m + d.missed));
        let a = alarms.iter().filter(|a| in_scope(a.task, &a.policy));
        let (working, false_alarms) =
            a.fold((0, 0), |(w, n), a| (w + a.n_working, n + a.false_alarms));
        let failed_called_success = u64::from(r.policy == "outcome" && r.task != Some(Grid));
        assert_eq!((r.fired, r.working), (fired, working), "{r:?}");
        assert_eq!(
            r.false_positives + r.false_negatives,
            missed + false_alarms + failed_called_success,
            "{r:?}"
        );
    }

    // The CSV: an n = 0 rate's fields are empty, never 0.
    let csv = verifier_cards_csv(&cards);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "policy,task,fired,working,true_positives,false_positives,false_negatives,true_negatives,\
         fpr_n,fpr,fpr_ci_low,fpr_ci_high,fpr_clusters,fpr_n_effective,\
         fnr_n,fnr,fnr_ci_low,fnr_ci_high,fnr_clusters,fnr_n_effective,\
         precision_n,precision,precision_ci_low,precision_ci_high,precision_clusters,precision_n_effective,\
         recall_n,recall,recall_ci_low,recall_ci_high,recall_clusters,recall_n_effective,\
         ci_method,level"
    );
    let form_line = lines.find(|l| l.starts_with("outcome,form,")).unwrap();
    let fpr = form.false_positive_rate.rate.as_ref().unwrap();
    assert_eq!(
        form_line,
        format!(
            "outcome,form,1,1,0,2,0,0,2,1.0000,{},1.0000,1,{},0,,,,,,2,0.0000,0.0000,{},1,{},0,,,,,,wilson-clustered,0.95",
            fmt4(fpr.estimate.lower),
            fmt4(fpr.n_effective),
            fmt4(form.precision.rate.as_ref().unwrap().estimate.upper),
            fmt4(form.precision.rate.as_ref().unwrap().n_effective),
        )
    );
    assert!(csv.ends_with("\nplugin,pooled,0,0,0,0,0,0,0,,,,,,0,,,,,,0,,,,,,0,,,,,,,\n"));
}
