//! Per-stage cost accounting on real runs: every stored trial and episode has its stage
//! costs, the stages inside an item sum to at most its stored wall time, each phase run
//! stores its cost, a resumed run adds nothing for items already stored, and merged
//! shards keep every shard's costs.

mod common;

use faultline::config::{self, Overrides};
use faultline::experiment::jobs::{Jobs, Phase};
use faultline::experiment::shard::Shard;
use faultline::experiment::RunRequest;
use faultline_analysis::costs::Stage;
use faultline_analysis::db::{ResultsDb, StageCostRow};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One task, the reference faults, two layouts, a small recovery phase.
const CONFIG: &str = r#"
seed = 3
tasks = ["grid"]
policies = ["unverified", "outcome"]
decisions = "auto"
faults = ["reference"]
layouts = 2
[recovery]
enabled = true
layouts = 1
policies = ["outcome"]
runs = 1
agent = "scripted"
"#;

async fn run(out: &Path, shard: Option<Shard>, resume: bool) {
    let text = config::ConfigText {
        name: "costs.toml".into(),
        text: CONFIG.into(),
    };
    let overrides = Overrides::default();
    let config = config::resolve(&text, &overrides).unwrap();
    faultline::experiment::run(RunRequest {
        out: out.to_path_buf(),
        resume,
        config,
        config_text: text,
        overrides,
        max_trials: None,
        max_episodes: None,
        progress: false,
        shard,
    })
    .await
    .expect("run succeeds");
}

/// Checks a run's database: one set of cost rows per stored item and none for anything
/// else, known stage names, the stages inside an item within its wall time, a phase
/// cost row per phase that ran. Returns the stage rows.
fn check(db_path: &Path) -> Vec<StageCostRow> {
    let db = ResultsDb::open_read_only(db_path).unwrap();
    let mut walls: BTreeMap<String, f64> = BTreeMap::new();
    for t in db.trials().unwrap() {
        walls.insert(t.trial_key, t.duration_ms);
    }
    let episodes = db.episodes().unwrap();
    assert!(!episodes.is_empty(), "the recovery phase ran");
    for e in episodes {
        walls.insert(e.episode_key, e.duration_ms);
    }
    let stages = db.stage_costs().unwrap();
    let mut by_item: BTreeMap<&str, Vec<&StageCostRow>> = BTreeMap::new();
    for s in &stages {
        by_item.entry(&s.item_key).or_default().push(s);
    }
    let stored: BTreeSet<&str> = walls.keys().map(String::as_str).collect();
    let costed: BTreeSet<&str> = by_item.keys().copied().collect();
    assert_eq!(costed, stored, "cost rows for exactly the stored items");
    for (key, rows) in &by_item {
        let names: BTreeSet<&str> = rows.iter().map(|r| r.stage.name()).collect();
        assert_eq!(names.len(), rows.len(), "{key}: one row per stage");
        for must in [
            "setup_ahead",
            "navigation",
            "capture",
            "dom",
            "scoring",
            "storage",
        ] {
            assert!(names.contains(must), "{key}: no {must} stage in {names:?}");
        }
        let mut within = 0.0;
        for r in rows {
            let stage = r.stage;
            assert!(r.wall_ms >= 0.0 && r.cpu_ms >= 0.0, "{key}: {r:?}");
            if stage.within_attempt() {
                within += r.wall_ms;
            }
        }
        let wall = walls[*key];
        assert!(
            within > 0.0 && within <= wall + 1e-6,
            "{key}: the stages inside the item sum to {within} ms, its wall is {wall} ms"
        );
    }
    // Detection trials are judged by policies; episodes by the one recovery policy.
    assert!(by_item
        .iter()
        .filter(|(k, _)| k.starts_with("detection/"))
        .all(|(_, rows)| rows.iter().any(|r| r.stage == Stage::Policies)));
    let phases = db.phase_costs().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p.phase.name()).collect();
    assert_eq!(names, ["detection", "recovery"], "one row per phase run");
    for (p, phase) in phases.iter().zip([Phase::Detection, Phase::Recovery]) {
        assert!(p.items > 0 && p.wall_ms > 0.0, "{p:?}");
        // No `jobs` in the config: each phase ran with its own default.
        let jobs = Jobs::per_phase().of(phase) as u64;
        assert_eq!((p.jobs, p.isolation.as_str()), (jobs, "reused_context"));
        assert!(p.cpu_ours_ms > 0.0 && p.cpu_browser_ms > 0.0, "{p:?}");
        assert!(
            p.peak_rss_ours_kib > 0 && p.peak_rss_browser_kib > 0,
            "{p:?}"
        );
    }
    stages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stored_item_has_its_stage_costs_and_merged_shards_keep_them() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    run(&whole, None, false).await;
    let db_path = whole.join("results.sqlite");
    let stages = check(&db_path);

    // Resuming a finished run runs nothing and stores no cost.
    run(&whole, None, true).await;
    let db = ResultsDb::open_read_only(&db_path).unwrap();
    assert_eq!(db.stage_costs().unwrap(), stages);
    assert_eq!(db.phase_costs().unwrap().len(), 2);
    drop(db);

    // `faultline costs` prints the breakdown from the database alone.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["costs", whole.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "items/s",
        "CPU per item",
        "peak RSS",
        "isolation reused_context",
        "sum of the stages",
        "navigation",
        "storage",
    ] {
        assert!(text.contains(want), "no `{want}` in\n{text}");
    }

    // Two shards, merged: every shard's stage and phase costs, none lost or doubled.
    let sharded = tmp.path().join("sharded");
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut shard_stages = Vec::new();
    let mut shard_phases = 0;
    for index in 1..=2 {
        let shard = Shard { index, count: 2 };
        // Through the library, `out` is the shard's own directory.
        let dir = sharded.join(shard.dir_name());
        run(&dir, Some(shard), false).await;
        let db = ResultsDb::open_read_only(&dir.join("results.sqlite")).unwrap();
        shard_stages.extend(db.stage_costs().unwrap());
        shard_phases += db.phase_costs().unwrap().len();
        dirs.push(dir);
    }
    let merged = tmp.path().join("merged");
    faultline::experiment::shard::merge(&dirs, &merged).unwrap();
    let merged_stages = check_merged(&merged.join("results.sqlite"), shard_phases);
    // The database's order: by item, then by the stage's stored name.
    shard_stages.sort_by(|a, b| (&a.item_key, a.stage.name()).cmp(&(&b.item_key, b.stage.name())));
    assert_eq!(merged_stages, shard_stages);
    let keys = |rows: &[StageCostRow]| -> BTreeSet<String> {
        rows.iter().map(|r| r.item_key.clone()).collect()
    };
    assert_eq!(
        keys(&merged_stages),
        keys(&stages),
        "the same items as unsharded"
    );
}

/// The merged database passes [`check`] except for the phase rows: one per shard's phase.
fn check_merged(path: &Path, shard_phases: usize) -> Vec<StageCostRow> {
    let db = ResultsDb::open_read_only(path).unwrap();
    let phases = db.phase_costs().unwrap();
    assert_eq!(phases.len(), shard_phases, "every shard's phase rows");
    let stages = db.stage_costs().unwrap();
    let stored = db.trials().unwrap().len() + db.episodes().unwrap().len();
    let items: BTreeSet<&str> = stages.iter().map(|s| s.item_key.as_str()).collect();
    assert_eq!(items.len(), stored, "cost rows for every merged item");
    stages
}
