//! The command line's contract: clear one-line errors and exit codes.

mod common;

use common::faultline;
use std::collections::BTreeSet;
use std::process::Command;

/// `faultline run --config CFG --out OUT`.
fn run_config(cfg: &std::path::Path, out: &std::path::Path) -> (i32, String, String) {
    faultline(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn bad_config_is_a_usage_error_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("exp.toml");
    std::fs::write(&cfg, "seed = 3\n\npolicies = [\"outcome\", \"pixle\"]\n").unwrap();
    let out = dir.path().join("out");
    let (code, _, stderr) = run_config(&cfg, &out);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one-line cause: {stderr}");
    assert!(
        stderr.contains("exp.toml:3: policies: unknown policy `pixle`"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written for a rejected config");
}

#[test]
fn malformed_decision_file_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let dec = dir.path().join("d.jsonl");
    std::fs::write(&dec, "{\"schema\": 1}\n").unwrap();
    let cfg = dir.path().join("exp.toml");
    std::fs::write(
        &cfg,
        format!("decisions = {:?}\nlayouts = 1\n", dec.to_str().unwrap()),
    )
    .unwrap();
    let out = dir.path().join("out");
    let (code, _, stderr) = run_config(&cfg, &out);
    assert_ne!(code, 0);
    assert!(stderr.contains("d.jsonl:1: missing field"), "{stderr}");
}

#[test]
fn resume_without_out_is_refused() {
    let (code, _, stderr) = faultline(&["run", "--resume"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--resume needs --out"), "{stderr}");
}

#[test]
fn help_documents_every_subcommand() {
    let (code, stdout, _) = faultline(&["--help"]);
    assert_eq!(code, 0);
    for cmd in ["run", "serve", "record", "report"] {
        assert!(stdout.contains(cmd), "{stdout}");
    }
    let (_, run_help, _) = faultline(&["run", "--help"]);
    for flag in [
        "--config",
        "--out",
        "--seed",
        "--layouts",
        "--jobs",
        "--resume",
    ] {
        assert!(run_help.contains(flag), "{run_help}");
    }
}

#[test]
fn list_faults_prints_the_whole_catalogue_as_a_table_and_as_json() {
    let (code, stdout, _) = faultline(&["list", "faults"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("id "), "{stdout}");
    for f in faultline_faults::Fault::ALL {
        assert!(stdout.contains(f.id()), "{} missing", f.id());
    }
    let (code, json, _) = faultline(&["list", "faults", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let entries = v.as_array().unwrap();
    assert_eq!(entries.len(), faultline_faults::Fault::ALL.len());
    for key in [
        "id",
        "layer",
        "stage",
        "mechanism",
        "tasks",
        "description",
        "witness",
        "implies",
        "source",
    ] {
        assert!(entries.iter().all(|e| e.get(key).is_some()), "{key}");
    }
    // Every source is an object tagged by its kind, with that kind's fields filled.
    for e in entries {
        let source = e["source"].as_object().expect("source is an object");
        let fields: &[&str] = match source["kind"].as_str().expect("source has a kind") {
            "report" => &["title", "url"],
            "paper" => &["title", "section"],
            "standard" => &["name", "section"],
            "reference_experiment" => &["section"],
            "designed_here" => &["reason"],
            other => panic!("{}: unknown source kind {other}", e["id"]),
        };
        for field in fields {
            let text = source.get(*field).and_then(|v| v.as_str()).unwrap_or("");
            assert!(!text.is_empty(), "{}: source {field} empty", e["id"]);
        }
        if let Some(url) = source.get("url") {
            assert!(url.as_str().unwrap().starts_with("https://"), "{}", e["id"]);
        }
    }
    let reference: std::collections::BTreeSet<&str> = entries
        .iter()
        .filter(|e| e["source"]["kind"] == "reference_experiment")
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let stage: std::collections::BTreeSet<&str> = faultline_faults::Fault::STAGE
        .iter()
        .map(|f| f.id())
        .collect();
    assert_eq!(reference, stage);
    let (code, _, stderr) = faultline(&["list", "fautls"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn a_bad_fault_selector_is_a_usage_error_with_close_matches() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (code, _, stderr) = faultline(&[
        "run",
        "--faults",
        "overlay.cookie_baner",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--faults: unknown fault `overlay.cookie_baner`"),
        "{stderr}"
    );
    assert!(stderr.contains("`overlay.cookie_banner`"), "{stderr}");
    assert!(!out.exists(), "nothing is written for a rejected selector");
}

#[test]
fn regression_resume_refuses_an_empty_or_foreign_database_and_leaves_it_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let db = out.join("results.sqlite");
    let out_arg = out.to_str().unwrap();

    std::fs::write(&db, b"").unwrap();
    let (code, _, stderr) = faultline(&["run", "--resume", "--out", out_arg]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("empty file (0 bytes)"), "{stderr}");
    assert_eq!(std::fs::read(&db).unwrap(), b"", "left as it was");

    std::fs::write(&db, b"not a database at all, just text").unwrap();
    let (code, _, stderr) = faultline(&["run", "--resume", "--out", out_arg]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("results.sqlite"), "{stderr}");
    assert_eq!(
        std::fs::read(&db).unwrap(),
        b"not a database at all, just text"
    );
}

#[test]
fn regression_a_missing_browser_leaves_no_results_database_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "--out", out.to_str().unwrap()])
        .env("FAULTLINE_CHROMIUM", dir.path().join("no-such-browser"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(
        !out.join("results.sqlite").exists(),
        "a rerun with the browser fixed must not be told the directory already holds results"
    );
}

/// The report files under `dir` named in `names` (a file or `plots/<file>`), with bytes.
fn report_files(dir: &std::path::Path, names: &BTreeSet<String>) -> Vec<(String, Vec<u8>)> {
    names
        .iter()
        .filter_map(|n| std::fs::read(dir.join(n)).ok().map(|b| (n.clone(), b)))
        .collect()
}

/// Every report file name (top level and under `plots/`) in a reference report directory.
fn report_names(dir: &std::path::Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (sub, prefix) in [(dir.to_path_buf(), ""), (dir.join("plots"), "plots/")] {
        for e in std::fs::read_dir(sub).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_file() && !name.starts_with('.') {
                names.insert(format!("{prefix}{name}"));
            }
        }
    }
    names
}

/// Regression (a kill while the report was written left old and new tables mixed: each
/// file was atomic, the set was not). `faultline report` is SIGKILLed at spread-out
/// moments while it replaces a report written at one confidence level with one at
/// another (every interval differs); after each kill the report is exactly one of the
/// two sets: the previous one, or (when the kill fell between the swap's renames) the
/// new one once the interrupted swap is finished.
#[test]
fn regression_a_report_killed_while_written_is_the_old_set_or_the_new_never_a_mix() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("small.toml");
    std::fs::write(
        &cfg,
        "tasks = [\"grid\", \"chart\"]\nlayouts = 3\npolicies = [\"unverified\", \"outcome\"]\n[recovery]\nenabled = false\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let (code, _, stderr) = run_config(&cfg, &run);
    assert_eq!(code, 0, "{stderr}");
    let db = run.join("results.sqlite");
    let db_arg = db.to_str().unwrap();
    let level = |l: &str, out: &std::path::Path| {
        let (code, _, stderr) = faultline(&[
            "report",
            db_arg,
            "--level",
            l,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{stderr}");
    };
    // The two reference sets, each written undisturbed into a fresh directory.
    let refs = [dir.path().join("ref-95"), dir.path().join("ref-80")];
    level("0.95", &refs[0]);
    level("0.80", &refs[1]);
    let names: BTreeSet<String> = report_names(&refs[0])
        .union(&report_names(&refs[1]))
        .cloned()
        .collect();
    let sets = [
        report_files(&refs[0], &names),
        report_files(&refs[1], &names),
    ];
    assert_ne!(sets[0], sets[1], "the two levels give different reports");

    // How long an undisturbed report takes here, to spread the kills over it.
    let out = dir.path().join("out");
    let t = std::time::Instant::now();
    level("0.95", &out);
    let took = t.elapsed();
    let mut current = 0; // which reference set `out` holds
    let (mut killed, mut rolled_forward) = (0, 0);
    for i in 0..12u32 {
        let next = 1 - current;
        let mut child = Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["report", db_arg, "--out", out.to_str().unwrap(), "--level"])
            .arg(["0.95", "0.80"][next])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(took.mul_f64(f64::from(i) / 10.0));
        // SAFETY: kill only signals the child this test started.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
        let status = child.wait().unwrap();
        if status.signal() == Some(libc::SIGKILL) {
            killed += 1;
            let marker = out.join(".report.new/.complete").exists();
            if !marker {
                // Killed before its swap (the previous set), or after it had finished.
                let now = report_files(&out, &names);
                assert!(
                    now == sets[current] || now == sets[next],
                    "kill {i}: with no swap under way the report must be one whole set"
                );
                if now == sets[next] {
                    current = next;
                }
            }
            faultline_analysis::report::swap::recover(&out).unwrap();
            if marker {
                rolled_forward += 1;
                current = next;
            }
        } else {
            current = next;
        }
        assert_eq!(
            report_files(&out, &names),
            sets[current],
            "kill {i}: the report is not exactly one whole set"
        );
        assert!(!out.join(".report.new").exists());
    }
    assert!(
        killed >= 6,
        "most attempts were killed mid-report: {killed}"
    );
    eprintln!("{killed} kills, {rolled_forward} rolled forward");
}

#[test]
fn regression_import_refuses_absurd_points_layouts_and_image_sizes_naming_file_line_and_field() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/trajectories/anthropic.jsonl");
    let good = std::fs::read_to_string(example).unwrap();
    let good = good.lines().next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, bad, expected) in [
        (
            "point.jsonl",
            r#"{"layout_index": 1, "image": [960, 640], "reply": {"action": "left_click", "coordinate": [1e300, 5]}}"#,
            "2: reply.coordinate: expected a point with coordinates from 0 to 100000, found (1e300, 5)",
        ),
        (
            "layout.jsonl",
            r#"{"layout_index": 4294967295, "image": [960, 640], "reply": {"action": "left_click", "coordinate": [1, 5]}}"#,
            "2: layout_index: expected a whole number from 0 to 9999",
        ),
        (
            "image.jsonl",
            r#"{"layout_index": 1, "image": [4294967295, 640], "reply": {"action": "left_click", "coordinate": [1, 5]}}"#,
            "2: image: expected [width, height], two whole numbers from 1 to 16384",
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, format!("{good}\n{bad}\n")).unwrap();
        let out = dir.path().join(format!("out-{name}"));
        let (code, _, stderr) = faultline(&[
            "import",
            "--format",
            "anthropic",
            file.to_str().unwrap(),
            "--task",
            "grid",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one-line cause: {stderr}");
        assert!(
            stderr.contains(&format!("{}:{expected}", file.display())),
            "{name}: {stderr}"
        );
        assert!(!out.exists(), "{name}: nothing is written for a rejected file");
    }
    // The default image size for every line is bounded too.
    let file = dir.path().join("ok.jsonl");
    std::fs::write(&file, format!("{good}\n")).unwrap();
    let (code, _, stderr) = faultline(&[
        "import",
        "--format",
        "anthropic",
        file.to_str().unwrap(),
        "--task",
        "grid",
        "--image",
        "100000x640",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--image: expected WxH with both from 1 to 16384"),
        "{stderr}"
    );
}

/// The gate fails closed, on the committed CI baseline (no browser needed): a candidate
/// that lost three of its four policies fails (it used to pass with a warning), unless
/// the rules allow them missing; a floor on a policy neither run has and a baseline that
/// holds a trial twice are bad input.
#[test]
fn regression_the_gate_fails_closed_on_missing_policies_bad_rules_and_duplicate_items() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let ci = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ci");
    let (baseline, rules) = (ci.join("baseline.json"), ci.join("rules.toml"));
    let text = std::fs::read_to_string(&baseline).unwrap();
    let full: serde_json::Value = serde_json::from_str(&text).unwrap();

    // Unchanged: the example rules select cells of the baseline, and pass.
    let (code, md, stderr) =
        faultline(&["gate", &s(&baseline), &s(&baseline), "--rules", &s(&rules)]);
    assert_eq!(code, 0, "{md}{stderr}");

    // Only `unverified` left.
    let mut only = full.clone();
    only["policies"] = serde_json::json!(["unverified"]);
    for t in only["trials"].as_array_mut().unwrap() {
        t["verdicts"]
            .as_object_mut()
            .unwrap()
            .retain(|p, _| p == "unverified");
    }
    only["episodes"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e["policy"] == "unverified");
    let candidate = dir.path().join("unverified-only.json");
    std::fs::write(&candidate, only.to_string()).unwrap();
    let junit = dir.path().join("junit.xml");
    let (code, md, stderr) = faultline(&[
        "gate",
        &s(&baseline),
        &s(&candidate),
        "--rules",
        &s(&rules),
        "--junit",
        &s(&junit),
    ]);
    assert_eq!(code, 1, "{md}{stderr}");
    assert!(
        md.contains("cells missing from the candidate, 2 bounds not met"),
        "{md}"
    );
    assert!(
        stderr.contains("cells of `outcome` missing from the candidate (policy_missing)"),
        "{stderr}"
    );
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("<failure type=\"missing\""));
    let allow = dir.path().join("allow.toml");
    std::fs::write(
        &allow,
        "allow_missing = [\"generic\", \"pixel\", \"outcome\"]\n",
    )
    .unwrap();
    let (code, md, stderr) =
        faultline(&["gate", &s(&baseline), &s(&candidate), "--rules", &s(&allow)]);
    assert_eq!(code, 0, "{md}{stderr}");

    // A floor on a policy neither run has.
    let typo = dir.path().join("typo.toml");
    std::fs::write(
        &typo,
        "[[floor]]\nmetric = \"detection\"\npolicy = \"outcom\"\nmin = 0.95\n",
    )
    .unwrap();
    let (code, _, stderr) =
        faultline(&["gate", &s(&baseline), &s(&baseline), "--rules", &s(&typo)]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one-line cause: {stderr}");
    assert!(
        stderr.contains("typo.toml:3: floor.policy: `outcom` is no policy of a detection cell"),
        "{stderr}"
    );

    // A baseline holding a trial twice.
    let mut twice = full.clone();
    let first = twice["trials"][0].clone();
    twice["trials"].as_array_mut().unwrap().push(first.clone());
    let doubled = dir.path().join("doubled.json");
    std::fs::write(&doubled, twice.to_string()).unwrap();
    let (code, _, stderr) = faultline(&["gate", &s(&doubled), &s(&baseline)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "doubled.json: trial `{}` appears twice",
            first["key"].as_str().unwrap()
        )),
        "{stderr}"
    );
}

/// Regression (with renames slowed, a kill during the report's swap left a mixed set, or
/// no `plots/`, that `view`, `gate` and `costs` read as it was until the next `report` or
/// `run`). A new report set is staged and its swap stopped half way, after the old
/// `plots/` has moved aside and before the new one moved in (the swap's own steps, the
/// kill simulated); each reader then finishes the swap before it reads: it succeeds and
/// the directory holds exactly the new set.
#[test]
fn regression_readers_finish_a_report_swap_killed_between_renames() {
    use faultline_analysis::report::swap;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("small.toml");
    std::fs::write(
        &cfg,
        "tasks = [\"grid\"]\nlayouts = 2\npolicies = [\"unverified\", \"outcome\"]\n[recovery]\nenabled = false\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let (code, _, stderr) = run_config(&cfg, &run);
    assert_eq!(code, 0, "{stderr}");
    let db = run.join("results.sqlite");
    let db_arg = db.to_str().unwrap();
    // The new set: the report at another level, written undisturbed elsewhere.
    let new = dir.path().join("new");
    let (code, _, stderr) = faultline(&[
        "report",
        db_arg,
        "--level",
        "0.80",
        "--out",
        new.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let entries: Vec<String> = std::fs::read_to_string(new.join(swap::MANIFEST))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let plots_at = entries.iter().position(|e| e == "plots").unwrap();
    let names = report_names(&new);
    let new_set = report_files(&new, &names);
    let run_arg = run.to_str().unwrap();
    let readers: [&[&str]; 3] = [
        &["view", run_arg],
        &["gate", run_arg, run_arg],
        &["costs", run_arg],
    ];
    for reader in readers {
        // The old set back in place, then the new one staged and its swap killed.
        let (code, _, stderr) = faultline(&["report", db_arg]);
        assert_eq!(code, 0, "{stderr}");
        let staging = swap::Staging::begin(&run).unwrap();
        for e in &entries {
            let (from, to) = (new.join(e), staging.dir().join(e));
            if from.is_dir() {
                std::fs::create_dir(&to).unwrap();
                for f in std::fs::read_dir(&from).unwrap().flatten() {
                    std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
                }
            } else {
                std::fs::copy(&from, &to).unwrap();
            }
        }
        // Every entry before `plots` renamed, and the old `plots/` moved aside.
        staging.commit_killed_after(plots_at + 1).unwrap();
        assert!(!run.join("plots").exists(), "the kill left no plots/");
        assert_ne!(
            report_files(&run, &names),
            new_set,
            "the kill left a mixed set"
        );

        let (code, _, stderr) = faultline(reader);
        assert_eq!(code, 0, "{reader:?}: {stderr}");
        let now = report_files(&run, &names);
        let differ: Vec<&String> = names
            .iter()
            .filter(|n| now.iter().find(|f| &f.0 == *n) != new_set.iter().find(|f| &f.0 == *n))
            .collect();
        assert!(
            differ.is_empty(),
            "{reader:?} did not finish the swap before reading: {differ:?}"
        );
        assert!(!run.join(swap::STAGING).exists(), "{reader:?}");
    }
}
