//! The command line's contract: clear one-line errors and exit codes.

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

fn faultline(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
    ] {
        assert!(entries.iter().all(|e| e.get(key).is_some()), "{key}");
    }
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
