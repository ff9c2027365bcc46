//! The information barrier, checked on the dependency graph: the policies crate cannot
//! reach the fixture sites (where ledgers live), the harness, or any HTTP client.

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

#[test]
fn policies_crate_has_no_path_to_the_ledger() {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let deps: HashMap<&str, Vec<&str>> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap(),
                n["deps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    // Normal (non-dev, non-build) dependencies only.
                    .filter(|d| d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null()))
                    .map(|d| d["pkg"].as_str().unwrap())
                    .collect(),
            )
        })
        .collect();
    let root = names
        .iter()
        .find(|(_, n)| **n == "faultline-policies")
        .map(|(id, _)| *id)
        .expect("policies crate in the workspace");
    let mut seen = BTreeSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        if seen.insert(names[id]) {
            stack.extend(deps.get(id).into_iter().flatten().copied());
        }
    }
    for forbidden in ["faultline-sites", "faultline", "chromiumoxide", "reqwest", "hyper", "axum", "rusqlite"] {
        assert!(!seen.contains(forbidden), "faultline-policies reaches {forbidden}: {seen:?}");
    }
    // Sanity: the walk did find the real dependencies.
    assert!(seen.contains("faultline-tasks") && seen.contains("image"));
}
