//! Shared helpers for integration tests: a real fixture server and a real Chromium, the
//! `faultline` binary, the deterministic tables of a run, folder copies and folder reads.

#![allow(dead_code)]

use faultline::config::{self, ExperimentConfig, Overrides};
use faultline::experiment::{Harness, RunRequest, RunSummary};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The default experiment resolved with small overrides.
pub fn config(layouts: u32, jobs: usize) -> ExperimentConfig {
    config::resolve(
        &config::load_text(None).unwrap(),
        &Overrides {
            seed: None,
            layouts: Some(layouts),
            jobs: Some(jobs),
            faults: None,
            isolation: None,
        },
    )
    .unwrap()
}

pub async fn harness() -> Harness {
    harness_with_jobs(2).await
}

/// A harness whose page pool keeps `jobs` fresh pages ready.
pub async fn harness_with_jobs(jobs: usize) -> Harness {
    Harness::start(&config(1, jobs))
        .await
        .expect("fixture server and Chromium start")
}

/// The default experiment with a small recovery phase: 2 layouts, 2 policies, 1 run.
pub const SMALL_RECOVERY: &str = r#"
seed = 1
tasks = ["search", "grid", "frame", "chart"]
policies = ["unverified", "generic", "pixel", "outcome"]
decisions = "auto"
faults = ["reference"]
[recovery]
enabled = true
layouts = 2
policies = ["unverified", "outcome"]
runs = 1
agent = "scripted"
"#;

pub async fn run_into(
    out: &Path,
    layouts: u32,
    resume: bool,
    max_trials: Option<usize>,
) -> RunSummary {
    run_limited(out, layouts, resume, max_trials, None).await
}

/// A run of [`SMALL_RECOVERY`] that may stop early (trials, then episodes).
pub async fn run_limited(
    out: &Path,
    layouts: u32,
    resume: bool,
    max_trials: Option<usize>,
    max_episodes: Option<usize>,
) -> RunSummary {
    let text = config::ConfigText {
        name: "small-recovery.toml".into(),
        text: SMALL_RECOVERY.into(),
    };
    let overrides = Overrides {
        seed: None,
        layouts: Some(layouts),
        jobs: Some(2),
        faults: None,
        isolation: None,
    };
    let config = config::resolve(&text, &overrides).unwrap();
    faultline::experiment::run(RunRequest {
        out: out.to_path_buf(),
        resume,
        config,
        config_text: text,
        overrides,
        max_trials,
        max_episodes,
        progress: false,
        shard: None,
    })
    .await
    .expect("run succeeds")
}

/// The deterministic tables of a run, compared byte for byte between runs that must agree
/// (sharded vs unsharded, a disturbed run vs an undisturbed one).
pub const TABLES: [&str; 9] = [
    "detection.csv",
    "layers.csv",
    "false_alarms.csv",
    "comparisons.csv",
    "verifier_cards.csv",
    "recovery.csv",
    "recovery_summary.csv",
    "detection_recovery.csv",
    "recovery_comparisons.csv",
];

/// Each of [`TABLES`] in `dir`, by name.
pub fn tables(dir: &Path) -> Vec<(String, String)> {
    TABLES
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join(f))
                .unwrap_or_else(|e| panic!("{}: {e}", dir.join(f).display()));
            (f.to_string(), text)
        })
        .collect()
}

/// `faultline ARGS`, run to its end: the exit code (-1 when killed by a signal), stdout
/// and stderr.
pub fn faultline(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `faultline run --config CFG --out OUT --shard SHARD` started in the background, its
/// stdout discarded and its stderr as given (piped only when the caller reads it:
/// `wait_with_output` does; a bare `wait` on a piped stderr could fill the pipe).
pub fn spawn_shard(cfg: &Path, out: &Path, shard: &str, stderr: Stdio) -> Child {
    let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args([
            "run",
            "--config",
            &path(cfg),
            "--out",
            &path(out),
            "--shard",
            shard,
        ])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("the binary starts")
}

/// Copies the folder `from` to `to`, subfolders included (a run directory, its
/// screenshots, a workspace).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir`, subfolders included, by its path relative to `dir`, with its
/// bytes (to compare two folders, or to search every file).
pub fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}
pub mod external;
pub mod processes;
