//! The information barrier, checked on the dependency graph: the policies crate cannot
//! reach the fixture sites (where ledgers live), the harness, a browser driver, a
//! database or any HTTP stack.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

#[test]
fn policies_crate_has_no_path_to_the_ledger() {
    // `--no-deps` lists the workspace crates with their declared dependencies; a path
    // to the ledger would have to go through one of them.
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let deps: BTreeMap<String, Vec<String>> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["dependencies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    // Normal dependencies only: dev- and build-dependencies never reach
                    // the policy code that runs.
                    .filter(|d| d["kind"].is_null())
                    .map(|d| d["name"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    assert!(
        deps.contains_key("faultline-sites"),
        "the walk sees the whole workspace"
    );
    let mut reached = BTreeSet::new();
    let mut stack = vec!["faultline-policies".to_string()];
    while let Some(name) = stack.pop() {
        if reached.insert(name.clone()) {
            // External crates have no entry; workspace crates are walked further.
            stack.extend(deps.get(&name).into_iter().flatten().cloned());
        }
    }
    for forbidden in [
        "faultline-sites",
        "faultline",
        "faultline-analysis",
        "chromiumoxide",
        "reqwest",
        "hyper",
        "axum",
        "tokio",
        "rusqlite",
    ] {
        assert!(
            !reached.contains(forbidden),
            "faultline-policies reaches {forbidden}: {reached:?}"
        );
    }
    assert!(
        reached.contains("faultline-tasks") && reached.contains("image"),
        "{reached:?}"
    );
}
