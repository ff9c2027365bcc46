//! The scheduler recipes under `examples/` run as written: the shell text of the GitHub
//! Actions workflow's steps, the Kubernetes Jobs' container commands and the Slurm batch
//! scripts is taken from the files and executed here, N processes at a time, with the
//! environment each scheduler would give (matrix index, completion index, array task
//! id). Each recipe's merged run must equal an unsharded run of the same config table
//! for table, and its gate against the committed baseline must pass.
//!
//! What stands in for the scheduler: the test plays the part of GitHub's artifact
//! upload/download (copying each shard job's directory into the gate job's), of the
//! kubelet (running each index's command with `sh -c`) and of `sbatch` (a small shell
//! shim on PATH that runs an array's tasks as local processes and a dependent job after
//! them only when all succeeded). The command lines themselves are the recipes'.

mod common;
use common::{copy_dir, processes, tables};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn recipe(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A job's working directory: `examples/` of the repository, and `bin/faultline`.
fn workspace(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(repo().join("examples"), dir.join("examples")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_faultline"), dir.join("bin/faultline")).unwrap();
    dir
}

/// The block scalars (`key: |` or `- |`) of a YAML file, in order, dedented; the
/// workflow's and the Jobs' shell text lives in them.
fn block_scalars(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if !line.trim_end().ends_with('|') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let mut body = Vec::new();
        while i < lines.len() {
            let l = lines[i];
            let ind = l.len() - l.trim_start().len();
            if !l.trim().is_empty() && ind <= indent {
                break;
            }
            body.push(l);
            i += 1;
        }
        let cut = body
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        let text: Vec<&str> = body.iter().map(|l| l.get(cut..).unwrap_or("")).collect();
        blocks.push(text.join("\n").trim_end().to_string() + "\n");
    }
    blocks
}

/// The single block scalar of `yaml` that mentions `needle`.
fn block_with(yaml: &str, needle: &str) -> String {
    let found: Vec<String> = block_scalars(yaml)
        .into_iter()
        .filter(|b| b.contains(needle))
        .collect();
    assert_eq!(found.len(), 1, "one block with `{needle}`: {found:?}");
    found.into_iter().next().unwrap()
}

/// `name: NAME` / `value: "V"` pairs of a Kubernetes container's `env`.
fn k8s_env(yaml: &str) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let mut name = None;
    for l in yaml.lines().map(str::trim) {
        if let Some(n) = l.strip_prefix("- name: ") {
            name = Some(n.to_string());
        } else if let (Some(v), Some(n)) = (l.strip_prefix("value: "), name.take()) {
            env.insert(n, v.trim_matches('"').to_string());
        }
    }
    env
}

/// A YAML scalar `key: value` (the first one).
fn scalar(yaml: &str, key: &str) -> String {
    yaml.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no `{key}:`"))
        .trim()
        .to_string()
}

fn shell(program: &str, script_or_file: &str, cwd: &Path, env: &[(&str, String)]) -> Command {
    let mut c = Command::new(program);
    c.arg(if program == "sh" { "-c" } else { "--" })
        .arg(script_or_file)
        .current_dir(cwd)
        .env(
            "PATH",
            format!(
                "{}:{}",
                cwd.join("bin").display(),
                std::env::var("PATH").unwrap()
            ),
        )
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    for k in [
        "FAULTLINE_SHARD",
        "FAULTLINE_SHARD_COUNT",
        "JOB_COMPLETION_INDEX",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "CI_NODE_INDEX",
        "CI_NODE_TOTAL",
    ] {
        if !env.iter().any(|(e, _)| *e == k) {
            c.env_remove(k);
        }
    }
    c
}

fn check(what: &str, out: Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{text}",
        out.status
    );
    text
}

/// Starts every command at once (the scheduler's parallel shards) and waits for all.
fn all(what: &str, commands: Vec<Command>) {
    let children: Vec<_> = commands.into_iter().map(|mut c| c.output_async()).collect();
    for (i, child) in children.into_iter().enumerate() {
        check(&format!("{what} #{i}"), child.wait_with_output().unwrap());
    }
}

trait Spawn {
    fn output_async(&mut self) -> std::process::Child;
}

impl Spawn for Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

fn assert_same_tables(what: &str, reference: &[(String, String)], merged: &Path) {
    for ((name, want), (_, got)) in reference.iter().zip(tables(merged)) {
        assert_eq!(&got, want, "{what}: {name} differs from the unsharded run");
    }
}

#[test]
fn scheduler_recipes_run_as_written_and_merge_into_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();

    // The reference: the recipes' config run whole, as `Use it in CI` shows.
    let whole = workspace(root, "whole");
    check(
        "unsharded run",
        shell(
            "sh",
            "faultline run --config examples/ci/ci.toml --out run",
            &whole,
            &[],
        )
        .output()
        .unwrap(),
    );
    let reference = tables(&whole.join("run"));

    // GitHub Actions: a matrix of shard jobs, then the gate job on their artifacts.
    let gha = recipe("examples/ci/github-actions.yml");
    let shard_step = block_with(&gha, "--shard auto");
    let gate_step = block_with(&gha, "faultline gate");
    let matrix: Vec<u32> = scalar(&gha, "shard")
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let total = scalar(&gha, "CI_NODE_TOTAL");
    assert_eq!(
        total,
        matrix.len().to_string(),
        "CI_NODE_TOTAL = matrix size"
    );
    let jobs: Vec<PathBuf> = matrix
        .iter()
        .map(|i| workspace(root, &format!("gha-shard-{i}")))
        .collect();
    all(
        "GitHub shard job",
        matrix
            .iter()
            .zip(&jobs)
            .map(|(i, dir)| {
                shell(
                    "sh",
                    &shard_step,
                    dir,
                    &[
                        ("CI_NODE_INDEX", i.to_string()),
                        ("CI_NODE_TOTAL", total.clone()),
                    ],
                )
            })
            .collect(),
    );
    // upload-artifact `shards/` per job, download-artifact with merge-multiple.
    let gate_job = workspace(root, "gha-gate");
    for dir in &jobs {
        for entry in std::fs::read_dir(dir.join("shards")).unwrap() {
            let entry = entry.unwrap();
            copy_dir(
                &entry.path(),
                &gate_job.join("shards").join(entry.file_name()),
            );
        }
    }
    let summary = root.join("step-summary.md");
    let out = check(
        "GitHub gate job",
        shell(
            "sh",
            &gate_step,
            &gate_job,
            &[("GITHUB_STEP_SUMMARY", summary.display().to_string())],
        )
        .output()
        .unwrap(),
    );
    assert!(
        out.contains(&format!("merged {} shards", matrix.len())),
        "{out}"
    );
    assert_same_tables("GitHub Actions", &reference, &gate_job.join("run"));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("## faultline gate: PASS"), "{md}");
    let junit = std::fs::read_to_string(gate_job.join("junit.xml")).unwrap();
    assert!(junit.contains("<testsuites"), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");

    // Kubernetes: the Indexed Job's pods (one per completion index), then the merge Job.
    let job = recipe("examples/k8s/shards-job.yaml");
    let completions: u32 = scalar(&job, "completions").parse().unwrap();
    let env = k8s_env(&job);
    assert_eq!(
        env["FAULTLINE_SHARD_COUNT"],
        completions.to_string(),
        "FAULTLINE_SHARD_COUNT = completions"
    );
    let pod_command = block_with(&job, "faultline run");
    let k8s = workspace(root, "k8s");
    // The volume mounted at /results; here a directory of the test's.
    let results = root.join("k8s-volume");
    let pod_env = |index: u32| -> Vec<(&'static str, String)> {
        vec![
            ("JOB_COMPLETION_INDEX", index.to_string()),
            (
                "FAULTLINE_SHARD_COUNT",
                env["FAULTLINE_SHARD_COUNT"].clone(),
            ),
            ("CONFIG", env["CONFIG"].clone()),
            ("RESULTS", results.display().to_string()),
        ]
    };
    // A pod replaced mid-shard (index 1 killed, then run again) must not duplicate items.
    let mut replaced = shell("sh", &pod_command, &k8s, &pod_env(1)).output_async();
    let shard_db = results.join(format!("shard-2-of-{completions}/results.sqlite"));
    let started = std::time::Instant::now();
    while stored_trials(&shard_db) < 1 && started.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    kill_tree(&mut replaced);
    all(
        "Kubernetes pod",
        (0..completions)
            .map(|i| shell("sh", &pod_command, &k8s, &pod_env(i)))
            .collect(),
    );
    let merge = recipe("examples/k8s/merge-job.yaml");
    let merge_env = k8s_env(&merge);
    assert_eq!(merge_env["SHARDS"], completions.to_string());
    check(
        "Kubernetes merge Job",
        shell(
            "sh",
            &block_with(&merge, "faultline merge"),
            &k8s,
            &[
                ("SHARDS", merge_env["SHARDS"].clone()),
                ("RESULTS", results.display().to_string()),
            ],
        )
        .output()
        .unwrap(),
    );
    assert_same_tables("Kubernetes", &reference, &results.join("merged"));
    let gate_md = std::fs::read_to_string(results.join("gate.md")).unwrap();
    assert!(gate_md.starts_with("## faultline gate: PASS"), "{gate_md}");

    // Slurm: submit.sh as written, with `sbatch` running the array tasks as local
    // processes and the dependent merge job after them.
    let slurm = workspace(root, "slurm");
    std::fs::write(slurm.join("bin/sbatch"), SBATCH_SHIM).unwrap();
    let mut perms = std::fs::metadata(slurm.join("bin/sbatch"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(slurm.join("bin/sbatch"), perms).unwrap();
    let out = check(
        "Slurm submit.sh",
        shell(
            "bash",
            "examples/slurm/submit.sh",
            &slurm,
            &[
                ("SHARDS", "3".to_string()),
                ("TMPDIR", root.display().to_string()),
            ],
        )
        .output()
        .unwrap(),
    );
    assert!(out.contains("merged 3 shards"), "{out}");
    assert_same_tables("Slurm", &reference, &slurm.join("results/cluster/merged"));
    let gate_md = std::fs::read_to_string(slurm.join("results/cluster/gate.md")).unwrap();
    assert!(gate_md.starts_with("## faultline gate: PASS"), "{gate_md}");
}

/// Enough of `sbatch` for submit.sh: `--parsable`, `--array=A-B` (every task started at
/// once, as local processes with Slurm's array variables), `--dependency=afterok:ID`
/// (runs only when every task of ID exited 0) and `--export=ALL`. Jobs run to completion
/// before `sbatch` returns, which only makes the dependency trivially satisfied in time.
const SBATCH_SHIM: &str = r#"#!/bin/bash
set -euo pipefail
array="" dep="" parsable=0
while [ $# -gt 1 ]; do
  case "$1" in
    --parsable) parsable=1 ;;
    --array=*) array=${1#--array=} ;;
    --dependency=afterok:*) dep=${1#--dependency=afterok:} ;;
    --export=ALL) ;;
    *) echo "sbatch shim: unsupported option $1" >&2; exit 2 ;;
  esac
  shift
done
script=$1
state=${TMPDIR:-/tmp}/sbatch-shim-$PPID
mkdir -p "$state"
id=$(( $(ls "$state" | wc -l) + 1000 ))
if [ -n "$dep" ] && [ "$(cat "$state/$dep")" != ok ]; then
  echo "sbatch shim: dependency $dep did not succeed" >&2; exit 1
fi
if [ -n "$array" ]; then
  lo=${array%-*} hi=${array#*-} pids=()
  for t in $(seq "$lo" "$hi"); do
    SLURM_ARRAY_JOB_ID=$id SLURM_ARRAY_TASK_ID=$t SLURM_ARRAY_TASK_MIN=$lo \
      SLURM_ARRAY_TASK_MAX=$hi SLURM_ARRAY_TASK_COUNT=$((hi - lo + 1)) \
      bash "$script" >&2 & pids+=($!)
  done
  status=ok
  for p in "${pids[@]}"; do wait "$p" || status=failed; done
else
  status=ok
  bash "$script" || status=failed
fi
echo "$status" > "$state/$id"
if [ $parsable = 1 ]; then echo "$id"; else echo "Submitted batch job $id"; fi
[ "$status" = ok ]
"#;

fn stored_trials(db: &Path) -> i64 {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row("SELECT COUNT(*) FROM trials", [], |r| r.get(0)))
        .unwrap_or(0)
}

/// SIGKILLs the shell and its faultline child (what losing a pod does) and returns once
/// they have ended; faultline's Chromium dies with its parent.
///
/// `pkill` returns when the signal is sent, not when the process is gone, and a killed
/// faultline is not this test's child, so nothing reaps it for us. Until its last thread
/// has exited it still holds the run directory's lock, and a replacement started in that
/// window is refused as a second writer: the race that once failed this test on a loaded
/// machine. Waiting for every thread to be dead or a zombie closes it, since the kernel
/// closes a process's files before it becomes a zombie.
fn kill_tree(child: &mut std::process::Child) {
    let pid = child.id().to_string();
    let children = Command::new("pgrep").args(["-P", &pid]).output().unwrap();
    let children: Vec<u32> = String::from_utf8_lossy(&children.stdout)
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    let _ = Command::new("pkill").args(["-KILL", "-P", &pid]).status();
    let _ = child.kill();
    let _ = child.wait();
    let started = std::time::Instant::now();
    while !children.iter().all(|&pid| processes::ended(pid)) {
        assert!(
            started.elapsed().as_secs() < 60,
            "killed processes {children:?} still running after 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
