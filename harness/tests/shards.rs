//! Sharded runs and the CI gate, through the command line exactly as CI and schedulers
//! call it: shards merged equal an unsharded run byte for byte (1, 3 and 7 shards, one
//! shard killed and run again), bad shard sets are refused, and the gate passes an
//! unchanged rerun, fails a weakened policy, refuses incomparable runs and bad input.

mod common;
use common::{faultline, tables};

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// Two tasks, two layouts, the reference faults, a small recovery phase.
const CONFIG: &str = r#"
tasks = ["grid", "frame"]
policies = ["unverified", "outcome"]
decisions = "auto"
faults = ["reference"]
layouts = 2
jobs = 2
[recovery]
enabled = true
layouts = 2
policies = ["unverified", "outcome"]
# The agent is deterministic and the reference faults draw nothing from the seed: every
# episode runs once, and every shard must plan it so.
runs = 3
agent = "scripted"
"#;

fn ok(args: &[&str]) -> String {
    let (code, stdout, stderr) = faultline(args);
    assert_eq!(code, 0, "faultline {args:?}\n{stdout}\n{stderr}");
    stdout
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn spawn_shard(cfg: &Path, out: &Path, shard: &str) -> Child {
    common::spawn_shard(cfg, out, shard, std::process::Stdio::null())
}

/// Runs shards `1/n` to `n/n`, at most two processes at a time; returns their directories.
fn run_shards(cfg: &Path, out: &Path, n: u32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut running: Vec<(String, Child)> = Vec::new();
    for i in 1..=n {
        let shard = format!("{i}/{n}");
        running.push((shard.clone(), spawn_shard(cfg, out, &shard)));
        dirs.push(out.join(format!("shard-{i}-of-{n}")));
        if running.len() == 2 || i == n {
            for (shard, mut child) in running.drain(..) {
                assert!(child.wait().unwrap().success(), "shard {shard} failed");
            }
        }
    }
    dirs
}

fn merge(dirs: &[PathBuf], out: &Path) -> (i32, String, String) {
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|d| s(d).to_string()));
    args.extend(["--out".to_string(), s(out).to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    faultline(&args)
}

#[test]
fn shards_merge_into_the_unsharded_run_and_the_gate_judges_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let cfg = root.join("ci.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let whole = root.join("whole");
    let stdout = ok(&["run", "--config", s(&cfg), "--out", s(&whole)]);
    assert!(stdout.contains("detection:"), "{stdout}");
    let reference = tables(&whole);
    let report = std::fs::read_to_string(whole.join("report.md")).unwrap();
    assert!(
        report.contains("agent(s): trusting: deterministic, 1 run per item."),
        "{report}"
    );
    let runs: Vec<String> = {
        let c = rusqlite::Connection::open(whole.join("results.sqlite")).unwrap();
        let mut q = c
            .prepare("SELECT DISTINCT run FROM episodes ORDER BY run")
            .unwrap();
        let rows = q.query_map([], |r| r.get::<_, i64>(0)).unwrap();
        rows.map(|r| r.unwrap().to_string()).collect()
    };
    assert_eq!(runs, ["0"], "one run per item");

    // 1, 3 and 7 shards; in the 3-shard run, shard 2 is killed mid-way and run again.
    for n in [1u32, 3, 7] {
        let out = root.join(format!("shards{n}"));
        if n == 3 {
            let mut child = spawn_shard(&cfg, &out, "2/3");
            let db = out.join("shard-2-of-3").join("results.sqlite");
            let started = Instant::now();
            loop {
                let stored = rusqlite::Connection::open(&db)
                    .and_then(|c| {
                        c.query_row("SELECT COUNT(*) FROM trials", [], |r| r.get::<_, i64>(0))
                    })
                    .unwrap_or(0);
                if stored >= 1 || started.elapsed() > Duration::from_secs(120) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
        }
        let dirs = run_shards(&cfg, &out, n);
        let merged = root.join(format!("merged{n}"));
        let (code, stdout, stderr) = merge(&dirs, &merged);
        assert_eq!(code, 0, "{stdout}{stderr}");
        assert!(
            stdout.starts_with(&format!("merged {n} shards")),
            "{stdout}"
        );
        for ((name, want), (_, got)) in reference.iter().zip(tables(&merged)) {
            assert_eq!(
                &got, want,
                "{n} shards: {name} differs from the unsharded run"
            );
        }
    }

    // Running a finished shard again stores nothing new.
    let again = ok(&[
        "run",
        "--config",
        s(&cfg),
        "--out",
        s(&root.join("shards3")),
        "--shard",
        "1/3",
    ]);
    assert!(again.contains(" 0 trials run"), "{again}");

    // Bad shard sets are refused, naming the shard or the item.
    let dirs: Vec<PathBuf> = (1..=3)
        .map(|i| root.join("shards3").join(format!("shard-{i}-of-3")))
        .collect();
    let (code, _, stderr) = merge(
        &[dirs[0].clone(), dirs[0].clone(), dirs[1].clone()],
        &root.join("m1"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("shard 1/3 given twice"), "{stderr}");
    let (code, _, stderr) = merge(&dirs[..2], &root.join("m2"));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("shard 3/3 missing"), "{stderr}");
    let (code, _, stderr) = merge(
        &[
            dirs[0].clone(),
            dirs[1].clone(),
            root.join("shards7/shard-3-of-7"),
        ],
        &root.join("m3"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("shard count differs"), "{stderr}");
    // An item lost from a shard (as if the shard had not finished).
    let torn = root.join("torn");
    std::fs::create_dir_all(&torn).unwrap();
    let torn_db = torn.join("results.sqlite");
    std::fs::copy(dirs[2].join("results.sqlite"), &torn_db).unwrap();
    let lost: String = {
        let c = rusqlite::Connection::open(&torn_db).unwrap();
        let key: String = c
            .query_row(
                "SELECT trial_key FROM trials ORDER BY trial_key LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        c.execute("DELETE FROM verdicts WHERE trial_key = ?1", [&key])
            .unwrap();
        c.execute("DELETE FROM trials WHERE trial_key = ?1", [&key])
            .unwrap();
        key
    };
    let (code, _, stderr) = merge(
        &[dirs[0].clone(), dirs[1].clone(), torn.clone()],
        &root.join("m4"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("item `{lost}` missing from shard 3/3")),
        "{stderr}"
    );

    // The gate: an unchanged rerun passes, against the run and against its baseline file.
    let (code, md, stderr) = faultline(&["gate", s(&whole), s(&root.join("merged3"))]);
    assert_eq!(code, 0, "{md}{stderr}");
    assert!(md.starts_with("## faultline gate: PASS"), "{md}");
    let baseline = root.join("baseline.json");
    ok(&["baseline", "export", s(&whole), "--out", s(&baseline)]);
    let (junit, summary) = (root.join("junit.xml"), root.join("summary.md"));
    let (code, md, _) = faultline(&[
        "gate",
        s(&baseline),
        s(&root.join("merged7")),
        "--junit",
        s(&junit),
        "--markdown",
        s(&summary),
        "--json",
        s(&root.join("gate.json")),
    ]);
    assert_eq!(code, 0, "{md}");
    assert_eq!(std::fs::read_to_string(&summary).unwrap(), md);
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("<testsuite name=\"faultline.gate.detection\""));

    // A weakened candidate: `outcome` now believes every tool message (it ignores what it
    // sees, like `unverified`). Two layouts are too few for any test: the margin decides.
    let weak = root.join("weak");
    std::fs::create_dir_all(&weak).unwrap();
    std::fs::copy(
        root.join("merged3/results.sqlite"),
        weak.join("results.sqlite"),
    )
    .unwrap();
    rusqlite::Connection::open(weak.join("results.sqlite"))
        .unwrap()
        .execute(
            "UPDATE verdicts SET verdict = (SELECT v.verdict FROM verdicts v WHERE v.trial_key = verdicts.trial_key AND v.policy = 'unverified') WHERE policy = 'outcome'",
            [],
        )
        .unwrap();
    let rules = root.join("rules.toml");
    std::fs::write(&rules, "significance = \"none\"\n").unwrap();
    let (code, md, stderr) = faultline(&[
        "gate",
        s(&baseline),
        s(&weak),
        "--rules",
        s(&rules),
        "--junit",
        s(&junit),
    ]);
    assert_eq!(code, 1, "{md}{stderr}");
    assert!(md.starts_with("## faultline gate: FAIL"), "{md}");
    assert!(
        md.contains("| detection | execute.unscaled_coordinates | grid | outcome |"),
        "{md}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("name=\"execute.unscaled_coordinates / grid / outcome\">\n      <failure type=\"regression\""), "{xml}");
    assert!(
        stderr.contains("gate failed: detection execute.unscaled_coordinates / grid / outcome"),
        "{stderr}"
    );
    println!("{md}");

    // Incomparable runs exit 3; corrupt input exits 2.
    let other = root.join("other.json");
    std::fs::write(
        &other,
        std::fs::read_to_string(&baseline)
            .unwrap()
            .replacen("\"layouts\": 2", "\"layouts\": 3", 1),
    )
    .unwrap();
    let (code, md, stderr) = faultline(&["gate", s(&other), s(&whole)]);
    assert_eq!(code, 3, "{md}{stderr}");
    assert!(
        stderr.contains("not comparable: layouts differ (baseline 3, candidate 2)"),
        "{stderr}"
    );
    let corrupt = root.join("corrupt.json");
    std::fs::write(
        &corrupt,
        "{\"format\": \"faultline-baseline\", \"version\": 1, \"iden",
    )
    .unwrap();
    let (code, _, stderr) = faultline(&["gate", s(&corrupt), s(&whole)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("corrupt.json"), "{stderr}");
    let (code, _, stderr) = faultline(&["gate", s(&baseline), s(&whole), "--rules", s(&cfg)]);
    assert_eq!(code, 2, "{stderr}");
}

/// The gate on a real regression, not an edited database: a team's own verifier (the
/// example plugin) is "simplified" to compare the top document only, as `generic` does.
/// On the frame task it stops seeing the row selected inside the iframe: the candidate
/// misses every fired `feedback.iframe_no_change` and raises a false alarm on every
/// working trial, eight discordant layouts each, so McNemar's test confirms both at the
/// default rules and the gate exits 1 naming the two cells.
#[test]
fn the_gate_fails_a_verifier_that_stopped_looking_inside_frames() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/plugins/verify_changed.py")
        .canonicalize()
        .unwrap();
    let config = |extra: &str| {
        format!(
            "tasks = [\"frame\"]\npolicies = [\"unverified\", \"changed\"]\nfaults = [\"reference\"]\nlayouts = 8\njobs = 4\n[recovery]\nenabled = false\n[[policy]]\nname = \"changed\"\ncommand = [\"python3\", \"{}\"{extra}]\n",
            script.display()
        )
    };
    let run = |name: &str, extra: &str| {
        let cfg = root.join(format!("{name}.toml"));
        std::fs::write(&cfg, config(extra)).unwrap();
        let out = root.join(name);
        ok(&["run", "--config", s(&cfg), "--out", s(&out)]);
        out
    };
    let baseline = run("baseline", "");
    let candidate = run("candidate", ", \"--top-document-only\"");
    let junit = root.join("junit.xml");
    let (code, md, stderr) =
        faultline(&["gate", s(&baseline), s(&candidate), "--junit", s(&junit)]);
    assert_eq!(code, 1, "{md}{stderr}");
    assert!(
        md.starts_with("## faultline gate: FAIL: 2 regressions"),
        "{md}"
    );
    let regressions = md.split("### Regressions (2)").nth(1).unwrap();
    assert!(
        regressions.contains(
            "| detection | feedback.iframe_no_change | frame | changed |  | 8/8 (100.0%) | 0/8 (0.0%) | -100.0 pts |"
        ),
        "{md}"
    );
    assert!(
        regressions.contains(
            "| false_alarms |  | frame | changed |  | 0/8 (0.0%) | 8/8 (100.0%) | +100.0 pts |"
        ),
        "{md}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<failure").count(), 2, "{xml}");
    println!("{md}");
    // The same verifier, unchanged, passes against itself.
    let (code, md, _) = faultline(&["gate", s(&baseline), s(&baseline)]);
    assert_eq!(code, 0, "{md}");
    assert!(md.starts_with("## faultline gate: PASS"), "{md}");
}
