use super::*;
use crate::db::manifest::RecoveryDesign;
use crate::db::tests::{row, verdict};
use crate::db::{GateIdentity, Manifest, ResultsDb};
use faultline_faults::Fault;
use faultline_tasks::{InfraErrorKind, PluginFailure, TaskKind, Verdict};
use std::collections::BTreeMap;

const FRAME_FAULT: &str = "feedback.iframe_no_change";

/// The record of a run of `layouts` layouts, as the harness writes it.
fn manifest(layouts: u32) -> Manifest {
    Manifest {
        chromium_version: "120.0".into(),
        config_as_passed: None,
        config_resolved: serde_json::json!({ "seed": 1, "timing": { "settle": "fixed" } }),
        decisions: "committed".into(),
        decisions_sha256: Some("abc".into()),
        faultline_version: "0.1.0".into(),
        faults: vec![Fault::UnscaledCoordinates, Fault::IframeNoChange],
        git_commit: "c0ffee".into(),
        layouts,
        merged_shards: None,
        policies: vec!["unverified".into(), "outcome".into()],
        recovery: Some(RecoveryDesign {
            agents: vec!["scripted".into()],
            budget: 3,
            deterministic: Vec::new(),
            faults: vec![Fault::IframeNoChange],
            layouts: 2,
            max_steps: 8,
            policies: vec!["outcome".into()],
            runs: 1,
        }),
        root_seed: 1,
        settle: Some("fixed".into()),
        shard: None,
        tasks: vec![TaskKind::Grid, TaskKind::Frame],
    }
}

fn identity(layouts: u32) -> GateIdentity {
    GateIdentity::of(&manifest(layouts))
}

/// A run of `layouts` layouts: per layout a fired grid fault (the click landed wrong), a
/// fired frame fault (the tool lies: the click worked), a working trial of each task, and
/// an episode per policy. `outcome` catches everything and never alarms unless `weak`,
/// when it believes the tool inside frames (the frame fault is missed); `unverified`
/// believes the tool always.
fn snapshot(layouts: u32, weak: bool) -> Snapshot {
    let mut trials = Vec::new();
    let mut episodes = Vec::new();
    for layout in 0..layouts {
        let v = |pairs: &[(&str, Verdict)]| {
            pairs
                .iter()
                .map(|(p, v)| (p.to_string(), *v))
                .collect::<BTreeMap<_, _>>()
        };
        trials.push(TrialOutcome {
            key: format!("detection/grid/{layout:03}/execute.unscaled_coordinates"),
            task: "grid".into(),
            fault: Some("execute.unscaled_coordinates".into()),
            layout,
            fired: Some(true),
            truth: false,
            verdicts: v(&[("unverified", Verdict::Success), ("outcome", Verdict::Fail)]),
        });
        trials.push(TrialOutcome {
            key: format!("detection/frame/{layout:03}/{FRAME_FAULT}"),
            task: "frame".into(),
            fault: Some(FRAME_FAULT.into()),
            layout,
            fired: Some(true),
            truth: true,
            verdicts: v(&[
                ("unverified", Verdict::NoChange),
                (
                    "outcome",
                    if weak {
                        Verdict::NoChange
                    } else {
                        Verdict::Success
                    },
                ),
            ]),
        });
        for task in ["grid", "frame"] {
            trials.push(TrialOutcome {
                key: format!("detection/{task}/{layout:03}/working"),
                task: task.into(),
                fault: None,
                layout,
                fired: None,
                truth: true,
                verdicts: v(&[
                    ("unverified", Verdict::Success),
                    ("outcome", Verdict::Success),
                ]),
            });
        }
        episodes.push(EpisodeOutcome {
            key: format!("recovery/frame/{FRAME_FAULT}/outcome/scripted/r0/{layout:03}"),
            task: "frame".into(),
            fault: FRAME_FAULT.into(),
            policy: "outcome".into(),
            agent: "scripted".into(),
            layout,
            fired: true,
            success: !weak || layout % 4 == 0,
        });
    }
    Snapshot {
        format: snapshot::BASELINE_FORMAT.into(),
        version: snapshot::BASELINE_VERSION,
        identity: identity(layouts),
        policies: vec!["unverified".into(), "outcome".into()],
        trials,
        episodes,
        infra_errors: Vec::new(),
        external: false,
    }
}

#[test]
fn an_unchanged_rerun_passes() {
    let (a, b) = (snapshot(12, false), snapshot(12, false));
    let r = gate(&a, &b, ("base", "cand"), &Rules::default(), false).unwrap();
    assert_eq!(r.comparability.refused, None);
    assert!(!r.failed());
    // 2 detection cells x 2 policies, 2 false-alarm cells x 2 policies, 1 recovery cell.
    assert_eq!(r.cells.len(), 9);
    assert!(r.cells.iter().all(|c| c.status == Status::Unchanged));
    // No change at all: every bootstrap resample is 0, so each cell carries Tango's score
    // interval instead, which is never zero-width for n > 0.
    for c in &r.cells {
        let (lo, hi) = (c.ci_low.unwrap(), c.ci_high.unwrap());
        assert!(lo < 0.0 && hi > 0.0, "{}: [{lo}, {hi}]", c.name());
        assert_eq!(c.interval_method.as_deref(), Some("tango-paired"));
        assert_eq!(c.test_method.as_deref(), Some("mcnemar-exact"));
    }
    let md = render::markdown(&r);
    assert!(
        md.starts_with("## faultline gate: PASS: no regression in 9 cells"),
        "{md}"
    );
}

#[test]
fn a_weakened_policy_fails_and_names_the_regressed_rows() {
    let (a, b) = (snapshot(12, false), snapshot(12, true));
    let r = gate(&a, &b, ("base", "cand"), &Rules::default(), false).unwrap();
    assert!(r.failed());
    let reg: Vec<String> = r
        .regressions()
        .map(|c| format!("{} {}", c.metric, c.name()))
        .collect();
    assert_eq!(
        reg,
        [
            format!("detection {FRAME_FAULT} / frame / outcome"),
            format!("recovery {FRAME_FAULT} / frame / outcome / scripted"),
        ]
    );
    // Regressions come first, with both rates, the difference and its interval.
    let d = &r.cells[0];
    assert_eq!((d.baseline_count, d.candidate_count, d.n), (12, 0, 12));
    assert_eq!((d.worse, d.better), (12, 0));
    assert!(d.mcnemar_p < 0.001);
    assert!(d.ci_high.unwrap() <= 0.0);
    let md = render::markdown(&r);
    assert!(
        md.starts_with("## faultline gate: FAIL: 2 regressions, 0 bounds not met"),
        "{md}"
    );
    let regressions = md.split("### Regressions (2)").nth(1).unwrap();
    assert!(regressions.contains(&format!(
        "| detection | {FRAME_FAULT} | frame | outcome |  | 12/12 (100.0%) | 0/12 (0.0%) | -100.0 pts |"
    )), "{md}");
    let junit = render::junit(&r);
    let failures = junit_failures(&junit);
    assert_eq!(
        failures,
        [
            format!("faultline.gate.detection::{FRAME_FAULT} / frame / outcome"),
            format!("faultline.gate.recovery::{FRAME_FAULT} / frame / outcome / scripted"),
        ]
    );
    assert!(junit.contains("baseline 12/12 (100.0%) -&gt; candidate 0/12 (0.0%)"));
    // The candidate's rise is the baseline's improvement when the roles swap.
    let back = gate(&b, &a, ("cand", "base"), &Rules::default(), false).unwrap();
    assert!(!back.failed());
    assert_eq!(back.improvements().count(), 2);
}

/// Checks the common JUnit structure (testsuites > testsuite > testcase > failure |
/// skipped | system-out, with the counting attributes agreeing) and returns the failing
/// cases as `classname::name`.
fn junit_failures(xml: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let count = |n: roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<usize>().unwrap();
    let mut failed = Vec::new();
    let (mut tests, mut failures) = (0, 0);
    for suite in root.children().filter(|n| n.is_element()) {
        assert_eq!(suite.tag_name().name(), "testsuite");
        assert!(suite.attribute("name").is_some());
        let cases: Vec<_> = suite.children().filter(|n| n.is_element()).collect();
        assert_eq!(count(suite, "tests"), cases.len());
        let mut suite_failures = 0;
        for case in cases {
            assert_eq!(case.tag_name().name(), "testcase");
            let (class, name) = (
                case.attribute("classname").unwrap(),
                case.attribute("name").unwrap(),
            );
            for child in case.children().filter(|n| n.is_element()) {
                match child.tag_name().name() {
                    "failure" => {
                        assert!(child.attribute("message").is_some_and(|m| !m.is_empty()));
                        assert!(child.attribute("type").is_some());
                        suite_failures += 1;
                        failed.push(format!("{class}::{name}"));
                    }
                    "skipped" | "system-out" => {}
                    other => panic!("unexpected <{other}> in a testcase"),
                }
            }
        }
        assert_eq!(count(suite, "failures"), suite_failures);
        tests += count(suite, "tests");
        failures += suite_failures;
    }
    assert_eq!(
        (count(root, "tests"), count(root, "failures")),
        (tests, failures)
    );
    failed
}

#[test]
fn small_drops_within_the_margin_or_unconfirmed_are_not_regressions() {
    let a = snapshot(12, false);
    let mut b = snapshot(12, false);
    // Two of twelve frame trials missed: -16.7 points, but McNemar p = 0.5.
    for t in b
        .trials
        .iter_mut()
        .filter(|t| t.fault.as_deref() == Some(FRAME_FAULT))
        .take(2)
    {
        t.verdicts.insert("outcome".into(), Verdict::Fail);
    }
    let r = gate(&a, &b, ("a", "b"), &Rules::default(), false).unwrap();
    assert!(!r.failed());
    // With no test, the margin alone decides.
    let rules = Rules::parse("r.toml", "significance = \"none\"").unwrap();
    let r = gate(&a, &b, ("a", "b"), &rules, false).unwrap();
    assert_eq!(r.regressions().count(), 1);
    let rules = Rules::parse(
        "r.toml",
        "significance = \"none\"\n[detection]\nmargin = 0.2",
    )
    .unwrap();
    assert!(!gate(&a, &b, ("a", "b"), &rules, false).unwrap().failed());
}

#[test]
fn rising_false_alarms_regress() {
    let a = snapshot(12, false);
    let mut b = snapshot(12, false);
    for t in b
        .trials
        .iter_mut()
        .filter(|t| t.key.starts_with("detection/grid") && t.fault.is_none())
    {
        t.verdicts.insert("outcome".into(), Verdict::NoChange);
    }
    let r = gate(&a, &b, ("a", "b"), &Rules::default(), false).unwrap();
    let reg: Vec<_> = r.regressions().map(|c| (c.metric, c.name())).collect();
    assert_eq!(reg, [(Metric::FalseAlarms, "grid / outcome".to_string())]);
}

/// An external harness's run: `probes` unscaled-coordinates probe trials on the grid, the
/// first `defects` of them showing the defect (fired), all judged by `harness`.
fn external(probes: u32, defects: u32) -> Snapshot {
    let mut s = snapshot(probes, false);
    s.external = true;
    s.policies = vec!["harness".into()];
    s.episodes.clear();
    s.trials = (0..probes)
        .map(|layout| TrialOutcome {
            key: format!("detection/grid/{layout:03}/execute.unscaled_coordinates"),
            task: "grid".into(),
            fault: Some("execute.unscaled_coordinates".into()),
            layout,
            fired: Some(layout < defects),
            truth: layout >= defects,
            verdicts: BTreeMap::from([("harness".to_string(), Verdict::Success)]),
        })
        .collect();
    s
}

#[test]
fn an_external_harness_that_gains_a_defect_regresses_its_defects_cell() {
    let r = gate(
        &external(8, 0),
        &external(8, 8),
        ("a", "b"),
        &Rules::default(),
        false,
    )
    .unwrap();
    let reg: Vec<_> = r.regressions().map(|c| (c.metric, c.name())).collect();
    assert_eq!(
        reg,
        [(
            Metric::Defects,
            "execute.unscaled_coordinates / grid / harness".to_string()
        )]
    );
    // Unchanged, it passes; a built-in run has no defects cells at all.
    let same = gate(
        &external(8, 0),
        &external(8, 0),
        ("a", "b"),
        &Rules::default(),
        false,
    )
    .unwrap();
    assert_eq!(same.regressions().count(), 0);
    let builtin = gate(
        &snapshot(8, false),
        &snapshot(8, false),
        ("a", "b"),
        &Rules::default(),
        false,
    )
    .unwrap();
    assert!(builtin.cells.iter().all(|c| c.metric != Metric::Defects));
}

#[test]
fn incomparable_runs_are_refused_with_one_line() {
    let a = snapshot(12, false);
    let b = snapshot(10, false);
    let r = gate(&a, &b, ("a", "b"), &Rules::default(), false).unwrap();
    assert_eq!(
        r.comparability.refused.as_deref(),
        Some("layouts differ (baseline 12, candidate 10)")
    );
    assert!(r.cells.is_empty());
    assert!(render::markdown(&r).starts_with("## faultline gate: NOT COMPARABLE: layouts differ"));
    assert_eq!(
        junit_failures(&render::junit(&r)),
        ["faultline.gate::comparable"]
    );
    // The brave may compare anyway: the shared items are paired.
    let forced = gate(&a, &b, ("a", "b"), &Rules::default(), true).unwrap();
    assert!(!forced.cells.is_empty());
    // Same design, a missing item: named.
    let mut c = snapshot(12, false);
    c.trials.retain(|t| t.key != "detection/grid/003/working");
    let r = gate(&a, &c, ("a", "b"), &Rules::default(), false).unwrap();
    assert_eq!(
        r.comparability.refused.as_deref(),
        Some("trial items differ: `detection/grid/003/working` is in the baseline only (48 vs 47 items)")
    );
    // A different decision set, or Chromium (a warning only).
    let mut d = snapshot(12, false);
    d.identity.decisions = serde_json::json!("def");
    assert!(gate(&a, &d, ("a", "b"), &Rules::default(), false)
        .unwrap()
        .comparability
        .refused
        .unwrap()
        .starts_with("decisions differ"));
    let mut e = snapshot(12, false);
    e.identity.chromium_version = Some("121.0".into());
    let r = gate(&a, &e, ("a", "b"), &Rules::default(), false).unwrap();
    assert_eq!(r.comparability.refused, None);
    assert_eq!(
        r.comparability.warnings,
        ["Chromium versions differ (baseline 120.0, candidate 121.0)"]
    );
}

#[test]
fn floors_bound_the_candidates_pooled_rate() {
    let rules = Rules::parse(
        "r.toml",
        "[[floor]]\nmetric = \"detection\"\npolicy = \"outcome\"\nmin = 0.95\n\n[[floor]]\nmetric = \"false_alarms\"\nmax = 0.0\n",
    )
    .unwrap();
    let a = snapshot(12, false);
    let r = gate(&a, &a, ("a", "b"), &rules, false).unwrap();
    assert!(r.floors.iter().all(|f| f.passed), "{:?}", r.floors);
    let r = gate(&a, &snapshot(12, true), ("a", "b"), &rules, false).unwrap();
    let failed: Vec<_> = r
        .failed_floors()
        .map(|f| (f.name(), f.count, f.n))
        .collect();
    assert_eq!(
        failed,
        [("detection policy=outcome >= 0.95".to_string(), 12, 24)]
    );
    assert!(render::markdown(&r)
        .contains("| detection policy=outcome >= 0.95 | 12/24 (50.0%) | **not met** |"));
}

#[test]
fn bad_rules_are_refused_with_their_reason() {
    for (text, want) in [
        ("[detection]\nmargin = 2", "margin must be in [0, 1)"),
        ("nonsense = 1", "not valid gate rules"),
        ("[[floor]]\nmetric = \"detection\"", "needs min or max"),
        ("significance = \"vibes\"", "not valid gate rules"),
        (
            "allow_missing = [\"pixel\", \" \"]",
            "r.toml:1: allow_missing: an empty entry",
        ),
        (
            "[recovery]\nallow_missing = [\"pixel\"]",
            "not valid gate rules",
        ),
    ] {
        let e = format!("{:#}", Rules::parse("r.toml", text).unwrap_err());
        assert!(e.starts_with("r.toml:") && e.contains(want), "{text}: {e}");
    }
}

#[test]
fn a_database_and_its_exported_baseline_are_the_same_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    db.set_manifest(&manifest(2)).unwrap();
    db.set_meta("policies", r#"["outcome"]"#).unwrap();
    db.insert_trial(
        &row("detection/grid/001/execute.unscaled_coordinates"),
        &[verdict(
            "detection/grid/001/execute.unscaled_coordinates",
            "outcome",
            "fail",
        )],
    )
    .unwrap();
    drop(db);
    let from_dir = load_input(dir.path()).unwrap();
    assert_eq!(load_input(&path).unwrap(), from_dir);
    // The identity is the run record's gate rule, read typed.
    assert_eq!(from_dir.identity, GateIdentity::of(&manifest(2)));
    assert_eq!(from_dir.trials.len(), 1);
    assert_eq!(from_dir.trials[0].caught("outcome"), Some(true));
    let json = dir.path().join("baseline.json");
    std::fs::write(&json, from_dir.to_json()).unwrap();
    assert_eq!(load_input(&json).unwrap(), from_dir);
    // Corrupt inputs are errors naming the file.
    for (name, bytes) in [
        ("torn.json", &from_dir.to_json().as_bytes()[..40]),
        ("other.json", b"{\"format\": \"something\"}".as_slice()),
        (
            "future.json",
            b"{\"format\": \"faultline-baseline\", \"version\": 9}".as_slice(),
        ),
        ("garbage.sqlite", b"SQLite format 3\0garbage".as_slice()),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let e = format!("{:#}", load_input(&p).unwrap_err());
        assert!(e.contains(name), "{e}");
    }
    assert!(load_input(&dir.path().join("absent")).is_err());
}

/// `snapshot` without `policy`'s verdicts, as if it had not been run.
fn without_verdicts_of(mut s: Snapshot, policy: &str) -> Snapshot {
    for t in &mut s.trials {
        t.verdicts.remove(policy);
    }
    s.episodes.retain(|e| e.policy != policy);
    s
}

#[test]
fn regression_a_candidate_without_a_baseline_policy_fails_unless_allowed() {
    let a = snapshot(12, false);
    let mut b = without_verdicts_of(snapshot(12, false), "unverified");
    b.policies.retain(|p| p != "unverified");
    let r = gate(&a, &b, ("a", "b"), &Rules::default(), false).unwrap();
    assert!(r.failed());
    assert_eq!(r.regressions().count(), 0);
    let missing: Vec<(Metric, String)> = r.missing().map(|c| (c.metric, c.name())).collect();
    assert_eq!(
        missing,
        [
            (
                Metric::Detection,
                "execute.unscaled_coordinates / grid / unverified".to_string()
            ),
            (
                Metric::Detection,
                format!("{FRAME_FAULT} / frame / unverified")
            ),
            (Metric::FalseAlarms, "frame / unverified".to_string()),
            (Metric::FalseAlarms, "grid / unverified".to_string()),
        ]
    );
    let m = r.cells[0].missing.as_ref().unwrap();
    assert_eq!(m.reason, MissingReason::PolicyMissing);
    assert_eq!(m.baseline_items, 12);
    // Every output names the failure kind.
    let md = render::markdown(&r);
    assert!(
        md.starts_with(
            "## faultline gate: FAIL: 0 regressions, 4 cells missing from the candidate, 0 bounds not met"
        ),
        "{md}"
    );
    assert!(md.contains("### Missing from the candidate (4)"), "{md}");
    assert!(md.contains("| detection | execute.unscaled_coordinates | grid | unverified |  | 12 | policy_missing | the candidate did not run policy `unverified` |"), "{md}");
    let junit = render::junit(&r);
    assert_eq!(junit_failures(&junit).len(), 4);
    assert!(junit.contains("<failure type=\"missing\" message=\"detection execute.unscaled_coordinates / grid / unverified: missing from the candidate (policy_missing)"), "{junit}");
    let json: serde_json::Value = serde_json::from_str(&render::json(&r)).unwrap();
    assert_eq!(json["cells"][0]["status"], "missing");
    assert_eq!(json["cells"][0]["missing"]["reason"], "policy_missing");

    // Named in the rules, by policy or cell by cell, the missing cells pass.
    let rules = Rules::parse("r.toml", "allow_missing = [\"unverified\"]\n").unwrap();
    let r = gate(&a, &b, ("a", "b"), &rules, false).unwrap();
    assert!(!r.failed());
    assert_eq!(r.allowed_missing().count(), 4);
    assert!(render::markdown(&r).starts_with(
        "## faultline gate: PASS: no regression in 5 cells (0 improved, 4 missing cells allowed)"
    ));
    let skipped = render::junit(&r);
    assert!(skipped.contains("skipped=\"4\""), "{skipped}");
    let rules = Rules::parse(
        "r.toml",
        "allow_missing = [\"grid / unverified\", \"frame/unverified\", \"execute.unscaled_coordinates / grid / unverified\"]\n",
    )
    .unwrap();
    let r = gate(&a, &b, ("a", "b"), &rules, false).unwrap();
    let still: Vec<String> = r.missing().map(|c| c.name()).collect();
    assert_eq!(still, [format!("{FRAME_FAULT} / frame / unverified")]);
}

#[test]
fn regression_a_verifier_that_crashed_on_every_trial_fails_its_cells_and_floors() {
    // A floor the working verifier meets.
    let rules = Rules::parse(
        "r.toml",
        "[[floor]]\nmetric = \"detection\"\npolicy = \"outcome\"\nmin = 0.9\n",
    )
    .unwrap();
    let a = snapshot(12, false);
    assert!(!gate(&a, &a, ("a", "b"), &rules, false).unwrap().failed());
    // The candidate ran `outcome`, but every call crashed: no verdict, an infrastructure
    // error per trial (its recovery episodes were not stored, so it drops out of recovery).
    let mut b = without_verdicts_of(snapshot(12, false), "outcome");
    b.infra_errors = b
        .trials
        .iter()
        .map(|t| InfraError {
            key: t.key.clone(),
            policy: "outcome".into(),
            kind: PluginFailure::Crash.into(),
        })
        .collect();
    b.episodes
        .extend(a.episodes.iter().filter(|e| e.policy == "outcome").cloned());
    let r = gate(&a, &b, ("a", "b"), &rules, false).unwrap();
    assert!(r.failed());
    let missing: Vec<(String, MissingReason, String)> = r
        .missing()
        .map(|c| {
            let m = c.missing.clone().unwrap();
            (c.name(), m.reason, m.detail)
        })
        .collect();
    assert_eq!(missing.len(), 4, "{missing:?}");
    assert_eq!(
        missing[0],
        (
            "execute.unscaled_coordinates / grid / outcome".to_string(),
            MissingReason::InfraErrors,
            "all 12 candidate items are infrastructure errors of `outcome` (12 crash)".to_string()
        )
    );
    // The floor has no candidate item to stand on: not met.
    let failed: Vec<_> = r.failed_floors().map(|f| (f.name(), f.n)).collect();
    assert_eq!(failed, [("detection policy=outcome >= 0.9".to_string(), 0)]);
    let md = render::markdown(&r);
    assert!(
        md.contains("| detection policy=outcome >= 0.9 | no candidate items | **not met** |"),
        "{md}"
    );
    // Some items crashed, some not fired: still missing, each counted.
    let mut c = b.clone();
    c.infra_errors
        .retain(|e| !e.key.ends_with("/000/execute.unscaled_coordinates"));
    for t in c
        .trials
        .iter_mut()
        .filter(|t| t.key.ends_with("/000/execute.unscaled_coordinates"))
    {
        t.fired = Some(false);
        t.verdicts.insert("outcome".into(), Verdict::Fail);
    }
    let r = gate(&a, &c, ("a", "b"), &rules, false).unwrap();
    let m = r.cells[0].missing.clone().unwrap();
    assert_eq!(m.reason, MissingReason::Unpaired);
    assert_eq!(
        m.detail,
        "none of the 12 baseline items pairs in the candidate: 11 infrastructure errors (11 crash), 1 the fault did not fire"
    );
}

#[test]
fn regression_a_rule_that_selects_no_cell_is_a_bad_rules_file() {
    let a = snapshot(12, false);
    for (text, want) in [
        (
            "level = 0.95\n\n[[floor]]\nmetric = \"detection\"\npolicy = \"nope\"\nmin = 0.9\n",
            "r.toml:5: floor.policy: `nope` is no policy of a detection cell of the baseline or candidate (expected one of: outcome, unverified)",
        ),
        (
            "[[floor]]\nmetric = \"false_alarms\"\nfault = \"parse.token_leak\"\nmax = 0.1\n",
            "r.toml:3: floor.fault: `parse.token_leak` is no fault of a false_alarms cell of the baseline or candidate (false_alarms cells have no fault)",
        ),
        (
            "[[floor]]\nmetric = \"recovery\"\nagent = \"trusting\"\nmin = 0.1\n",
            "r.toml:3: floor.agent: `trusting` is no agent of a recovery cell of the baseline or candidate (expected one of: scripted)",
        ),
        (
            "[[floor]]\nmetric = \"detection\"\ntask = \"grid\"\nfault = \"feedback.iframe_no_change\"\nmin = 0.9\n",
            "r.toml:2: floor: `detection task=grid fault=feedback.iframe_no_change >= 0.9` matches no cell of the baseline or candidate",
        ),
        (
            "allow_missing = [\n  \"outcome\",\n  \"outcom\",\n]\n",
            "r.toml:3: allow_missing: `outcom` matches no policy or cell of the baseline or candidate (expected a policy name, one of: outcome, unverified, or a cell name",
        ),
    ] {
        let rules = Rules::parse("r.toml", text).unwrap();
        let e = format!("{:#}", gate(&a, &a, ("a", "b"), &rules, false).unwrap_err());
        assert!(e.starts_with(want), "{text}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // A run without recovery has no recovery cell to bound.
    let mut b = snapshot(12, false);
    b.episodes.clear();
    let rules = Rules::parse("r.toml", "[[floor]]\nmetric = \"recovery\"\nmin = 0.5\n").unwrap();
    let e = format!("{:#}", gate(&b, &b, ("a", "b"), &rules, false).unwrap_err());
    assert!(
        e.starts_with("r.toml:2: floor.metric: neither run has a recovery cell"),
        "{e}"
    );
}

#[test]
fn regression_a_baseline_with_a_duplicated_item_is_refused() {
    let a = snapshot(2, false);
    let mut twice = a.clone();
    twice.trials.push(a.trials[1].clone());
    let e = format!(
        "{:#}",
        Snapshot::from_json("base.json", &twice.to_json()).unwrap_err()
    );
    assert_eq!(
        e,
        format!("base.json: trial `detection/frame/000/{FRAME_FAULT}` appears twice (a baseline holds each item once)")
    );
    let mut twice = a.clone();
    twice.episodes.push(a.episodes[0].clone());
    let e = format!(
        "{:#}",
        Snapshot::from_json("base.json", &twice.to_json()).unwrap_err()
    );
    assert!(e.starts_with("base.json: episode `recovery/frame/"), "{e}");
    // Without duplicates, the file reads back as written.
    assert_eq!(Snapshot::from_json("base.json", &a.to_json()).unwrap(), a);
}

#[test]
fn regression_a_databases_infrastructure_errors_reach_the_gate() {
    use crate::db::InfraErrorRow;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    db.set_manifest(&manifest(2)).unwrap();
    db.set_meta("policies", r#"["outcome", "changed"]"#)
        .unwrap();
    let infra = |key: &str, policy: &str, kind: PluginFailure| InfraErrorRow {
        item_key: key.into(),
        policy: policy.into(),
        kind: kind.into(),
        reason: "exited".into(),
        stderr_tail: String::new(),
        attempt: 1,
    };
    let key = "detection/grid/001/execute.unscaled_coordinates";
    // `changed` crashed, then timed out: never judged. A harness failure is not a policy's.
    db.insert_trial_with_infra(
        &row(key),
        &[verdict(key, "outcome", "fail")],
        &[
            infra(key, "changed", PluginFailure::Crash),
            infra(key, "changed", PluginFailure::Timeout),
            infra(key, "harness", PluginFailure::Crash),
        ],
    )
    .unwrap();
    // `outcome` crashed once, then judged: not an infrastructure error any more.
    let judged = "detection/grid/002/execute.unscaled_coordinates";
    db.insert_trial_with_infra(
        &row(judged),
        &[verdict(judged, "outcome", "fail")],
        &[infra(judged, "outcome", PluginFailure::Crash)],
    )
    .unwrap();
    drop(db);
    let s = load_input(&path).unwrap();
    assert_eq!(
        s.infra_errors,
        [InfraError {
            key: key.into(),
            policy: "changed".into(),
            kind: PluginFailure::Timeout.into()
        }]
    );
    // They travel in the baseline file.
    assert_eq!(Snapshot::from_json("b.json", &s.to_json()).unwrap(), s);
}

/// A baseline file stores an infrastructure error's kind by its name, as when the kind
/// was a string: a file written then reads back as the kind, and is written again byte
/// for byte.
#[test]
fn baseline_files_store_infrastructure_error_kinds_by_name() {
    let mut s = snapshot(2, false);
    s.infra_errors = vec![InfraError {
        key: "detection/grid/001/working".into(),
        policy: "outcome".into(),
        kind: PluginFailure::Timeout.into(),
    }];
    let text = s.to_json();
    let entry = "{\n      \"key\": \"detection/grid/001/working\",\n      \"policy\": \"outcome\",\n      \"kind\": \"timeout\"\n    }";
    assert!(text.contains(entry), "{text}");
    for kind in InfraErrorKind::ALL {
        let old = text.replace("\"kind\": \"timeout\"", &format!("\"kind\": \"{kind}\""));
        let read = Snapshot::from_json("old.json", &old).unwrap();
        assert_eq!(read.infra_errors[0].kind, kind);
        assert_eq!(read.to_json(), old);
    }
    let unknown = text.replace("\"kind\": \"timeout\"", "\"kind\": \"segfault\"");
    let e = format!(
        "{:#}",
        Snapshot::from_json("old.json", &unknown).unwrap_err()
    );
    assert!(e.contains("segfault"), "{e}");
}

/// The gate pairs runs by the run record's gate identity: a candidate whose manifest
/// differs from the baseline's only in what that rule leaves out (policies of the
/// recovery design, the build, the resolved config) or only reports (Chromium, settle
/// mode) is compared; one differing in what it includes is refused.
#[test]
fn regression_the_gate_compares_runs_by_the_run_records_gate_identity() {
    let baseline = snapshot(12, false);
    let with = |edit: fn(&mut Manifest)| {
        let mut m = manifest(12);
        edit(&mut m);
        Snapshot {
            identity: GateIdentity::of(&m),
            ..snapshot(12, false)
        }
    };
    let check = |candidate: &Snapshot| {
        gate(&baseline, candidate, ("a", "b"), &Rules::default(), false)
            .unwrap()
            .comparability
    };
    // Left out: no refusal, nothing to say.
    for edit in [
        (|m: &mut Manifest| m.recovery.as_mut().unwrap().policies.clear()) as fn(&mut Manifest),
        |m| m.git_commit = "other".into(),
        |m| m.faultline_version = "0.2.0".into(),
        |m| m.config_resolved = serde_json::json!({ "jobs": 8 }),
        |m| m.policies = vec!["outcome".into(), "unverified".into()],
    ] {
        let c = check(&with(edit));
        assert_eq!((c.refused, c.warnings), (None, Vec::<String>::new()));
    }
    // Carried and reported: the settle mode, the harness's timing.
    let c = check(&with(|m| m.settle = Some("stable".into())));
    assert_eq!(c.refused, None);
    assert_eq!(
        c.warnings,
        ["settle modes differ (baseline fixed, candidate stable)"]
    );
    // A baseline file written before the settle mode was recorded says nothing about it.
    let mut older = baseline.clone();
    older.identity.settle = None;
    let text = older.to_json();
    assert!(!text.contains("\"settle\""), "{text}");
    let older = Snapshot::from_json("old.json", &text).unwrap();
    let c = gate(
        &older,
        &with(|m| m.settle = Some("stable".into())),
        ("a", "b"),
        &Rules::default(),
        false,
    )
    .unwrap()
    .comparability;
    assert_eq!((c.refused, c.warnings), (None, Vec::<String>::new()));
    // Included: refused, naming the difference.
    for (edit, want) in [
        (
            (|m: &mut Manifest| m.root_seed = 2) as fn(&mut Manifest),
            "root seeds differ (baseline 1, candidate 2)",
        ),
        (
            |m| m.decisions_sha256 = Some("def".into()),
            "decisions differ (baseline \"abc\", candidate \"def\")",
        ),
        (
            |m| m.recovery.as_mut().unwrap().budget = 4,
            "recovery designs differ",
        ),
        (|m| m.tasks.reverse(), "tasks differ"),
    ] {
        let refused = check(&with(edit)).refused.unwrap();
        assert!(refused.starts_with(want), "{refused}");
    }
}
