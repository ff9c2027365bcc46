use super::*;
use faultline_faults::{Fault, Layer, Stage};
use faultline_tasks::{
    Condition, InfraErrorKind, Phase, PluginFailure, StopReason, TaskKind, Verdict,
};
use rusqlite::Connection;
use std::path::Path;

pub(crate) fn verdict(key: &str, policy: &str, verdict: &str) -> VerdictRow {
    VerdictRow {
        trial_key: key.into(),
        policy: policy.into(),
        verdict: verdict.parse().unwrap(),
        message: String::new(),
    }
}

pub(crate) fn row(key: &str) -> TrialRow {
    TrialRow {
        trial_key: key.into(),
        experiment: faultline_tasks::Phase::Detection,
        task: TaskKind::Grid,
        layout_index: 1,
        layout_seed: u64::MAX,
        trial_seed: 7,
        condition: Condition::Faulty,
        fault: Some(Fault::UnscaledCoordinates),
        stage: Some(Stage::Execute),
        fired: Some(true),
        witness: Some("{}".into()),
        decision_source: "oracle".into(),
        reply: "click(1, 2)".into(),
        actions: "[]".into(),
        executed: "[]".into(),
        tool_message: "Clicked.".into(),
        observation_text: String::new(),
        before_png: None,
        after_png: None,
        evidence: "{}".into(),
        truth_achieved: false,
        truth_detail: "clicked blank".into(),
        ledger: "{}".into(),
        duration_ms: 1.0,
        layer: Some(Layer::Execution),
        not_fired_reason: None,
    }
}

pub(crate) fn episode(key: &str) -> EpisodeRow {
    EpisodeRow {
        episode_key: key.into(),
        task: TaskKind::Frame,
        fault: Fault::IframeNoChange,
        stage: Stage::Feedback,
        layer: Layer::Tool,
        policy: "unverified".into(),
        agent: "scripted".into(),
        run: 0,
        layout_index: 3,
        layout_seed: u64::MAX - 1,
        episode_seed: 11,
        fired: true,
        success: true,
        truth_detail: "selected Order 7".into(),
        browser_actions: 1,
        steps: 3,
        stop_reason: StopReason::Stopped,
        detected_at_first_step: false,
        first_verdict: Some(Verdict::NoChange),
        error: None,
        model_calls: 0,
        prompt_tokens: None,
        completion_tokens: None,
        ledger: "{}".into(),
        duration_ms: 2.0,
    }
}

pub(crate) fn step(key: &str, step: u32) -> EpisodeStepRow {
    EpisodeStepRow {
        episode_key: key.into(),
        step,
        source: if step == 0 { "decision" } else { "agent" }.into(),
        reply: "click(1, 2)".into(),
        parse_error: None,
        actions: "[]".into(),
        executed: "[]".into(),
        browser_actions: 1,
        tool_message: "No change detected.".into(),
        verdict: Some(Verdict::NoChange),
        policy_message: Some("No change detected.".into()),
        observation_text: Some("Orders".into()),
        screenshot: Some(format!("shots/e-{step}.png")),
        witness: None,
        truth_achieved: true,
        truth_detail: "selected Order 7".into(),
        ledger_events: "[]".into(),
        usage: None,
    }
}

#[test]
fn episodes_round_trip_with_their_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    let steps = vec![step("e", 0), step("e", 1)];
    db.insert_episode(&episode("e"), &steps).unwrap();
    assert!(db.insert_episode(&episode("e"), &steps).is_err());
    drop(db);
    let db = ResultsDb::open_read_only(&path).unwrap();
    assert_eq!(db.episodes().unwrap(), vec![episode("e")]);
    assert_eq!(db.episode_steps("e").unwrap(), steps);
    assert_eq!(
        db.finished_episode_keys()
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        vec!["e".to_string()]
    );
    assert_eq!(db.count("episode_steps").unwrap(), 2);
}

#[test]
fn a_bad_step_rolls_back_the_whole_episode() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = ResultsDb::open(&dir.path().join("r.sqlite")).unwrap();
    // A second step 0: the step's primary key fails after the episode row went in.
    assert!(db
        .insert_episode(&episode("e"), &[step("e", 0), step("e", 0)])
        .is_err());
    assert_eq!(db.count("episodes").unwrap(), 0);
    assert_eq!(db.count("episode_steps").unwrap(), 0);
}

#[test]
fn costs_are_stored_apart_from_results() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = ResultsDb::open(&dir.path().join("r.sqlite")).unwrap();
    db.insert_trial(&row("t"), &[]).unwrap();
    let before = db.trials().unwrap();
    let cost = |stage: &str, wall_ms: f64| StageCostRow {
        item_key: "t".into(),
        stage: stage.parse().unwrap(),
        wall_ms,
        cpu_ms: 1.5,
    };
    db.insert_stage_costs(&[cost("capture", 40.0), cost("settle", 120.0)])
        .unwrap();
    // Storing the costs again (a retried store) replaces them.
    db.insert_stage_costs(&[cost("capture", 41.0)]).unwrap();
    let phase = PhaseCostRow {
        phase: Phase::Detection,
        started_at: "1764777600.000".into(),
        items: 1,
        jobs: 2,
        isolation: "fresh_context".into(),
        wall_ms: 500.0,
        cpu_ours_ms: 20.0,
        cpu_browser_ms: 300.0,
        peak_rss_ours_kib: 30_000,
        peak_rss_browser_kib: 400_000,
    };
    db.insert_phase_cost(&phase).unwrap();
    assert_eq!(
        db.stage_costs().unwrap(),
        vec![cost("capture", 41.0), cost("settle", 120.0)]
    );
    assert_eq!(db.phase_costs().unwrap(), vec![phase]);
    // The results read back exactly as before: costs live in their own tables.
    assert_eq!(db.trials().unwrap(), before);
    // The typed columns are stored by their names, as when they were plain text.
    let stored = |sql: &str| -> Vec<String> {
        let mut stmt = db.conn.prepare(sql).unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    };
    assert_eq!(
        stored("SELECT stage FROM stage_costs ORDER BY stage"),
        ["capture", "settle"]
    );
    assert_eq!(stored("SELECT phase FROM phase_costs"), ["detection"]);
    // The tables refuse a name the vocabulary does not know.
    for sql in [
        "UPDATE stage_costs SET stage = 'lunch' WHERE stage = 'settle'",
        "UPDATE phase_costs SET phase = 'lunch'",
    ] {
        let e = db.conn.execute(sql, []).unwrap_err().to_string();
        assert!(e.contains("CHECK constraint failed"), "{sql}: {e}");
    }
}

/// A database written by schema version 1 (the detection-only release).
fn version_1_database(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO meta VALUES ('schema_version', '1');
         CREATE TABLE trials (trial_key TEXT PRIMARY KEY, experiment TEXT NOT NULL, task TEXT NOT NULL, layout_index INTEGER NOT NULL, layout_seed TEXT NOT NULL, trial_seed TEXT NOT NULL, condition TEXT NOT NULL, fault TEXT, stage TEXT, fired INTEGER, witness TEXT, decision_source TEXT NOT NULL, reply TEXT NOT NULL, actions TEXT NOT NULL, executed TEXT NOT NULL, tool_message TEXT NOT NULL, observation_text TEXT NOT NULL, before_png TEXT, after_png TEXT, evidence TEXT NOT NULL, truth_achieved INTEGER NOT NULL, truth_detail TEXT NOT NULL, ledger TEXT NOT NULL, duration_ms REAL NOT NULL);
         CREATE TABLE verdicts (trial_key TEXT NOT NULL, policy TEXT NOT NULL, verdict TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY (trial_key, policy));
         INSERT INTO trials VALUES ('detection/grid/000/faulty', 'detection', 'grid', 0, '5', '6', 'faulty', 'execute.unscaled_coordinates', 'execute', 1, '{}', 'oracle', 'click(1, 2)', '[]', '[]', 'Clicked.', '', NULL, NULL, '{}', 0, 'clicked blank space', '{}', 1.0);",
    )
    .unwrap();
}

#[test]
fn version_1_databases_are_read_as_is_and_migrated_for_writing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.sqlite");
    version_1_database(&path);
    let ro = ResultsDb::open_read_only(&path).unwrap();
    let trials = ro.trials().unwrap();
    assert_eq!(trials.len(), 1);
    assert_eq!((trials[0].layer, trials[0].layout_seed), (None, 5));
    // The reference fault's own layer stands in for the one version 1 did not store.
    assert_eq!(trials[0].fault_layer(), Some(Layer::Execution));
    assert!(ro.episodes().unwrap().is_empty());
    assert!(ro.stage_costs().unwrap().is_empty());
    assert!(ro.phase_costs().unwrap().is_empty());
    drop(ro);
    // Opening for writing migrates in place and keeps every stored trial.
    let mut db = ResultsDb::open(&path).unwrap();
    assert_eq!(
        db.meta("schema_version").unwrap().as_deref(),
        Some(SCHEMA_VERSION.to_string().as_str())
    );
    assert!(db.infra_errors().unwrap().is_empty());
    assert_eq!(db.trials().unwrap().len(), 1);
    db.insert_episode(&episode("e"), &[step("e", 0)]).unwrap();
    db.insert_trial(&row("new"), &[]).unwrap();
    let new = db
        .trials()
        .unwrap()
        .into_iter()
        .find(|t| t.trial_key == "new");
    assert_eq!(new.unwrap().layer, Some(Layer::Execution));
}

#[test]
fn trials_round_trip_and_keys_are_unique() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    let v = VerdictRow {
        trial_key: "a".into(),
        policy: "outcome".into(),
        verdict: Verdict::Fail,
        message: "m".into(),
    };
    db.insert_trial(&row("a"), std::slice::from_ref(&v))
        .unwrap();
    // A duplicate key fails and leaves the first copy (and its verdicts) intact.
    assert!(db
        .insert_trial(&row("a"), std::slice::from_ref(&v))
        .is_err());
    drop(db);
    let db = ResultsDb::open_read_only(&path).unwrap();
    assert_eq!(db.trials().unwrap(), vec![row("a")]);
    assert_eq!(db.verdicts().unwrap(), vec![v]);
    assert_eq!(db.count("trials").unwrap(), 1);
}

#[test]
fn a_failed_verdict_insert_rolls_back_the_trial() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = ResultsDb::open(&dir.path().join("r.sqlite")).unwrap();
    // Two verdicts of one policy: the verdict's primary key fails after the trial went in.
    let v = verdict("b", "outcome", "fail");
    assert!(db.insert_trial(&row("b"), &[v.clone(), v]).is_err());
    assert_eq!(db.count("trials").unwrap(), 0);
}

#[test]
fn an_unknown_stored_name_is_an_error_naming_table_key_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    db.insert_trial(&row("a"), &[verdict("a", "outcome", "fail")])
        .unwrap();
    db.insert_episode(&episode("e"), &[step("e", 0)]).unwrap();
    db.conn
        .execute_batch(
            "UPDATE trials SET layer = 'quantum'; UPDATE episodes SET fault = 'zz.mystery'; UPDATE episodes SET first_verdict = 'none';",
        )
        .unwrap();
    let e = db.trials().unwrap_err().to_string();
    assert!(
        e.starts_with("trials `a`: column `layer` holds `quantum`: unknown layer"),
        "{e}"
    );
    let e = db.episodes().unwrap_err().to_string();
    assert!(
        e.starts_with("episodes `e`: column `fault` holds `zz.mystery`"),
        "{e}"
    );
    db.conn
        .execute_batch("UPDATE episodes SET fault = 'feedback.iframe_no_change'")
        .unwrap();
    // `none` is the stored form of no first verdict.
    assert_eq!(db.episodes().unwrap()[0].first_verdict, None);
}

#[test]
fn infra_errors_are_stored_with_their_trial_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    let e = InfraErrorRow {
        item_key: "a".into(),
        policy: "mine".into(),
        kind: PluginFailure::Crash.into(),
        reason: "exited with status 3".into(),
        stderr_tail: "Traceback".into(),
        attempt: 1,
    };
    db.insert_trial_with_infra(
        &row("a"),
        &[verdict("a", "outcome", "fail")],
        std::slice::from_ref(&e),
    )
    .unwrap();
    // Another failure of the same (item, policy) is numbered after the first.
    db.insert_infra_errors(std::slice::from_ref(&e)).unwrap();
    drop(db);
    let db = ResultsDb::open_read_only(&path).unwrap();
    let rows = db.infra_errors().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0], e);
    assert_eq!(rows[1].attempt, 2);
    assert_eq!(db.count("infra_errors").unwrap(), 2);
    // A version-1 database opened read-only has no such table and no errors.
    let v1 = dir.path().join("v1.sqlite");
    version_1_database(&v1);
    let ro = ResultsDb::open_read_only(&v1).unwrap();
    assert!(ro.infra_errors().unwrap().is_empty());
}

#[test]
fn every_infrastructure_error_kind_is_stored_by_name_and_an_unknown_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = ResultsDb::open(&dir.path().join("r.sqlite")).unwrap();
    let rows: Vec<InfraErrorRow> = InfraErrorKind::ALL
        .into_iter()
        .map(|kind| InfraErrorRow {
            item_key: format!("detection/grid/000/{kind}"),
            policy: "mine".into(),
            kind,
            reason: String::new(),
            stderr_tail: String::new(),
            attempt: 1,
        })
        .collect();
    db.insert_infra_errors(&rows).unwrap();
    // The column holds the kind's name, the text it held when it was a string.
    let stored: Vec<(String, String)> = db
        .conn
        .prepare("SELECT item_key, kind FROM infra_errors")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(stored.len(), InfraErrorKind::ALL.len());
    for (key, kind) in stored {
        assert_eq!(key, format!("detection/grid/000/{kind}"));
    }
    let mut read = db.infra_errors().unwrap();
    read.sort_by_key(|r| r.kind);
    assert_eq!(read, rows);
    let spawn = InfraErrorKind::from(PluginFailure::Spawn);
    db.conn
        .execute_batch(&format!(
            "UPDATE infra_errors SET kind = 'segfault' WHERE item_key = 'detection/grid/000/{spawn}'"
        ))
        .unwrap();
    let e = db.infra_errors().unwrap_err().to_string();
    let want = format!(
        "infra_errors `detection/grid/000/{spawn}, policy mine`: column `kind` holds `segfault`: unknown infrastructure error kind `segfault`"
    );
    assert!(e.starts_with(&want), "{e}");
}

#[test]
fn rows_are_copied_table_by_table_and_never_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    let mut shard = ResultsDb::open(&a).unwrap();
    shard
        .insert_trial(&row("t1"), &[verdict("t1", "outcome", "fail")])
        .unwrap();
    shard
        .insert_episode(&episode("e"), &[step("e", 0), step("e", 1)])
        .unwrap();
    // A table this code does not name (as a later schema might add) is copied too.
    shard
        .conn
        .execute_batch("CREATE TABLE extra (k TEXT PRIMARY KEY, v INTEGER); INSERT INTO extra VALUES ('x', 1);")
        .unwrap();
    drop(shard);
    let mut merged = ResultsDb::open(&b).unwrap();
    // Missing from this schema: refused, nothing copied.
    let e = merged.copy_rows_from(&a).unwrap_err().to_string();
    assert!(e.contains("table `extra` is not in this schema"), "{e}");
    assert_eq!(merged.count("trials").unwrap(), 0);
    merged
        .conn
        .execute_batch("CREATE TABLE extra (k TEXT PRIMARY KEY, v INTEGER)")
        .unwrap();
    let copied = merged.copy_rows_from(&a).unwrap();
    assert_eq!(
        copied,
        [
            ("trials".to_string(), 1),
            ("verdicts".to_string(), 1),
            ("episodes".to_string(), 1),
            ("episode_steps".to_string(), 2),
            ("stage_costs".to_string(), 0),
            ("phase_costs".to_string(), 0),
            ("infra_errors".to_string(), 0),
            ("extra".to_string(), 1)
        ]
    );
    assert_eq!(merged.trials().unwrap(), vec![row("t1")]);
    assert!(
        merged.copy_rows_from(&a).is_err(),
        "a second copy is refused"
    );
    assert_eq!(merged.count("trials").unwrap(), 1);
}

#[test]
fn refuses_other_schema_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let db = ResultsDb::open(&path).unwrap();
    db.set_meta("schema_version", "99").unwrap();
    drop(db);
    let e = ResultsDb::open(&path).err().unwrap().to_string();
    assert!(e.contains("schema_version is 99"), "{e}");
    let e = ResultsDb::open_read_only(&path).err().unwrap().to_string();
    assert!(e.contains("schema_version is 99"), "{e}");
}

/// Regression (a read-only run directory): `report` could not open a database whose
/// directory it cannot write (WAL mode wants to create the `-shm` index there:
/// SQLITE_READONLY_DIRECTORY). The directory is made read-only and the database opened
/// by an unprivileged user (this test re-runs itself as `nobody` through `setpriv`
/// when it runs as root, who ignores directory permissions).
#[test]
fn a_database_in_a_read_only_directory_opens_for_reading() {
    if let Ok(path) = std::env::var("FAULTLINE_TEST_READ_ONLY_DB") {
        let ro = ResultsDb::open_read_only(Path::new(&path)).unwrap();
        assert_eq!(ro.meta("manifest").unwrap().as_deref(), Some("kept"));
        return;
    }
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false);
    // As root the check runs as `nobody`, who must reach the file: the temp directory
    // the test recipe sets (`TMPDIR`, mode 0700) is closed to it, `/tmp` is not.
    let dir = if root {
        tempfile::Builder::new()
            .prefix("faultline-read-only-db-")
            .tempdir_in("/tmp")
            .unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let path = run.join("r.sqlite");
    let db = ResultsDb::open(&path).unwrap();
    db.set_meta("manifest", "kept").unwrap();
    drop(db);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o555)).unwrap();
    if !root {
        // An unprivileged user: the check runs here.
        let ro = ResultsDb::open_read_only(&path).unwrap();
        assert_eq!(ro.meta("manifest").unwrap().as_deref(), Some("kept"));
    } else {
        // A copy of this test binary where `nobody` can run it (the build directory
        // may sit under a home directory closed to other users).
        let me = dir.path().join("db-test");
        std::fs::copy(std::env::current_exe().unwrap(), &me).unwrap();
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&me)
            .args([
                "--exact",
                "db::tests::a_database_in_a_read_only_directory_opens_for_reading",
                "--test-threads=1",
            ])
            .env("FAULTLINE_TEST_READ_ONLY_DB", &path)
            .output()
            .expect("setpriv (util-linux) runs the check as an unprivileged user");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "as nobody: {text}"
        );
    }
    assert!(!run.join("r.sqlite-shm").exists(), "nothing was written");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Opened as immutable, SQLite reads the main file only: a killed run's `-wal` file
/// (rows the main file lacks) is refused by name rather than silently missed.
#[test]
fn a_killed_runs_wal_is_named_not_ignored_when_opened_immutable() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.sqlite");
    let db = ResultsDb::open(&live).unwrap();
    db.conn
        .pragma_update(None, "wal_autocheckpoint", 0)
        .unwrap();
    db.set_meta("manifest", "only in the wal").unwrap();
    // Copy the files while the writer still holds them: what a SIGKILL leaves.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(&live, copy.join("r.sqlite")).unwrap();
    std::fs::copy(wal_path(&live), copy.join("r.sqlite-wal")).unwrap();
    drop(db);
    let e = ResultsDb::connect_immutable(&copy.join("r.sqlite"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("r.sqlite-wal") && e.contains("killed"), "{e}");
    // Once folded in (a writable open), the immutable open reads every row.
    drop(ResultsDb::open(&copy.join("r.sqlite")).unwrap());
    let conn = ResultsDb::connect_immutable(&copy.join("r.sqlite")).unwrap();
    let v: String = conn
        .query_row("SELECT value FROM meta WHERE key = 'manifest'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(v, "only in the wal");
}

#[test]
fn regression_every_stop_reason_round_trips_through_the_database() {
    // Version 4 listed six stop reasons by hand; an episode that reached its time limit
    // could not be stored, and the whole run (and every resume) stopped there.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    for reason in StopReason::ALL {
        let key = format!("e/{reason}");
        let e = EpisodeRow {
            stop_reason: reason,
            ..episode(&key)
        };
        db.insert_episode(&e, &[step(&key, 0)])
            .unwrap_or_else(|err| panic!("storing stop reason {reason}: {err:#}"));
    }
    drop(db);
    let stored: Vec<StopReason> = ResultsDb::open_read_only(&path)
        .unwrap()
        .episodes()
        .unwrap()
        .into_iter()
        .map(|e| e.stop_reason)
        .collect();
    let mut expected = StopReason::ALL.to_vec();
    expected.sort_by_key(|r| format!("e/{r}"));
    assert_eq!(stored, expected);
}

/// The check version 4 wrote by hand, without `time_limit`.
const VERSION_4_STOP_REASONS: &str = "CHECK (stop_reason IN ('stopped', 'answered', 'parse_error', 'over_budget', 'step_cap', 'agent_error'))";

#[test]
fn regression_a_version_4_file_refusing_time_limit_is_rebuilt_with_its_rows_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    db.insert_episode(&episode("old"), &[step("old", 0), step("old", 1)])
        .unwrap();
    db.set_meta("manifest", "kept").unwrap();
    drop(db);
    // Turn the file into what version 4 wrote: its hand-written check, its version.
    let generated = format!(
        "CHECK (stop_reason IN ({}))",
        StopReason::ALL.map(|r| format!("'{r}'")).join(", ")
    );
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
    let changed = conn
        .execute(
            "UPDATE sqlite_master SET sql = replace(sql, ?1, ?2) WHERE name = 'episodes'",
            [generated.as_str(), VERSION_4_STOP_REASONS],
        )
        .unwrap();
    assert_eq!(changed, 1);
    conn.execute(
        "UPDATE meta SET value = '4' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    drop(conn);
    let conn = Connection::open(&path).unwrap();
    let refused = conn.execute("UPDATE episodes SET stop_reason = 'time_limit'", []);
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("CHECK constraint failed"),
        "the version-4 table refuses time_limit, as it did"
    );
    drop(conn);

    let mut db = ResultsDb::open(&path).unwrap();
    let late = EpisodeRow {
        stop_reason: StopReason::TimeLimit,
        ..episode("late")
    };
    db.insert_episode(&late, &[step("late", 0)]).unwrap();
    assert_eq!(db.meta("schema_version").unwrap().as_deref(), Some("5"));
    assert_eq!(db.meta("manifest").unwrap().as_deref(), Some("kept"));
    assert_eq!(db.episodes().unwrap(), vec![late, episode("old")]);
    assert_eq!(
        db.episode_steps("old").unwrap(),
        vec![step("old", 0), step("old", 1)]
    );
    // The transcript still refers to its table: a step of an unknown episode is refused.
    assert!(db
        .insert_episode(&episode("x"), &[step("nowhere", 0)])
        .is_err());
}

#[test]
fn regression_cost_tables_written_without_their_check_lists_are_rebuilt_with_their_rows_kept() {
    use crate::db::CostStage;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.sqlite");
    let mut db = ResultsDb::open(&path).unwrap();
    let cost = StageCostRow {
        item_key: "t".into(),
        stage: CostStage::Capture,
        wall_ms: 4.0,
        cpu_ms: 1.0,
    };
    db.insert_stage_costs(std::slice::from_ref(&cost)).unwrap();
    let phase = PhaseCostRow {
        phase: Phase::Recovery,
        started_at: "1.000".into(),
        items: 1,
        jobs: 1,
        isolation: "fresh_context".into(),
        wall_ms: 1.0,
        cpu_ours_ms: 1.0,
        cpu_browser_ms: 1.0,
        peak_rss_ours_kib: 1,
        peak_rss_browser_kib: 1,
    };
    db.insert_phase_cost(&phase).unwrap();
    drop(db);
    // Turn the cost tables into what the first version-5 release wrote: no CHECK lists.
    let stages = format!(
        " CHECK (stage IN ({}))",
        CostStage::ALL.map(|s| format!("'{s}'")).join(", ")
    );
    let phases = " CHECK (phase IN ('detection', 'recovery'))";
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
    for (table, check) in [("stage_costs", stages.as_str()), ("phase_costs", phases)] {
        let changed = conn
            .execute(
                "UPDATE sqlite_master SET sql = replace(sql, ?1, '') WHERE name = ?2",
                [check, table],
            )
            .unwrap();
        assert_eq!(changed, 1, "{table}");
    }
    drop(conn);
    // Such a table takes any name; read back, an unknown one is an error naming the
    // table, the row and the column.
    let conn = Connection::open(&path).unwrap();
    conn.execute("INSERT INTO stage_costs VALUES ('u', 'lunch', 1, 1)", [])
        .unwrap();
    conn.execute("UPDATE phase_costs SET phase = 'lunch'", [])
        .unwrap();
    drop(conn);
    let ro = ResultsDb::open_read_only(&path).unwrap();
    let e = format!("{:#}", ro.stage_costs().unwrap_err());
    assert!(
        e.contains("stage_costs `u`: column `stage` holds `lunch`: unknown cost stage `lunch`"),
        "{e}"
    );
    let e = format!("{:#}", ro.phase_costs().unwrap_err());
    assert!(
        e.contains("phase_costs `1.000`: column `phase` holds `lunch`: unknown phase `lunch` (expected one of: detection, recovery)"),
        "{e}"
    );
    drop(ro);
    let conn = Connection::open(&path).unwrap();
    conn.execute("DELETE FROM stage_costs WHERE item_key = 'u'", [])
        .unwrap();
    conn.execute("UPDATE phase_costs SET phase = 'recovery'", [])
        .unwrap();
    drop(conn);

    // Opened for writing: rebuilt, rows kept, the vocabulary's names enforced.
    let db = ResultsDb::open(&path).unwrap();
    assert_eq!(db.stage_costs().unwrap(), vec![cost]);
    assert_eq!(db.phase_costs().unwrap(), vec![phase]);
    for sql in [
        "INSERT INTO stage_costs VALUES ('u', 'lunch', 1, 1)",
        "INSERT INTO phase_costs VALUES ('lunch', '1', 1, 1, 'x', 1, 1, 1, 1, 1)",
    ] {
        let e = db.conn.execute(sql, []).unwrap_err().to_string();
        assert!(e.contains("CHECK constraint failed"), "{sql}: {e}");
    }
}
