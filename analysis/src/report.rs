//! Regenerates every output of a run from its database alone: the CSV tables and
//! `report.md`. Same database in, byte-identical files out.

use crate::db::ResultsDb;
use crate::tables::{self, DetectionRow, FalseAlarmRow, FiringRow};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The files a report run wrote.
#[derive(Debug, Clone)]
pub struct ReportFiles {
    pub detection_csv: PathBuf,
    pub false_alarms_csv: PathBuf,
    pub report_md: PathBuf,
}

/// The policy order recorded with the run (falls back to the built-in order).
pub fn run_policies(db: &ResultsDb) -> Result<Vec<String>> {
    Ok(match db.meta("policies")? {
        Some(json) => serde_json::from_str(&json).context("meta.policies is not a JSON list")?,
        None => ["unverified", "generic", "pixel", "outcome"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    })
}

/// Writes `detection.csv`, `false_alarms.csv` and `report.md` into `out`.
pub fn write_all(db: &ResultsDb, out: &Path) -> Result<ReportFiles> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let trials = db.trials()?;
    let verdicts = db.verdicts()?;
    let policies = run_policies(db)?;
    let detection = tables::detection(&trials, &verdicts, &policies);
    let false_alarms = tables::false_alarms(&trials, &verdicts, &policies);
    let firing = tables::firing(&trials);

    let files = ReportFiles {
        detection_csv: out.join("detection.csv"),
        false_alarms_csv: out.join("false_alarms.csv"),
        report_md: out.join("report.md"),
    };
    write(&files.detection_csv, &tables::detection_csv(&detection))?;
    write(
        &files.false_alarms_csv,
        &tables::false_alarms_csv(&false_alarms),
    )?;
    let manifest = db.meta("manifest")?;
    write(
        &files.report_md,
        &markdown(manifest.as_deref(), &firing, &detection, &false_alarms)?,
    )?;
    Ok(files)
}

fn write(path: &Path, text: &str) -> Result<()> {
    // Write to a temporary file and rename, so a reader never sees half a table.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn pct(num: u64, den: u64) -> String {
    if den == 0 {
        "–".into()
    } else {
        format!("{:.1}%", 100.0 * num as f64 / den as f64)
    }
}

fn markdown(
    manifest: Option<&str>,
    firing: &[FiringRow],
    detection: &[DetectionRow],
    false_alarms: &[FalseAlarmRow],
) -> Result<String> {
    let mut md = String::new();
    md.push_str("# faultline report\n\n");
    if let Some(m) = manifest {
        let v: serde_json::Value = serde_json::from_str(m).context("meta.manifest is not JSON")?;
        md.push_str("## Run\n\n| field | value |\n|---|---|\n");
        for key in [
            "faultline_version",
            "git_commit",
            "chromium_version",
            "root_seed",
            "layouts",
            "tasks",
            "policies",
            "decisions",
        ] {
            if let Some(x) = v.get(key) {
                let s = match x {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let _ = writeln!(md, "| {key} | `{}` |", s.replace('|', "\\|"));
            }
        }
        md.push('\n');
    }

    md.push_str("## Fault firing\n\n");
    md.push_str("Each faulty trial either fired its fault (a witness was stored) or did not; trials whose fault did not fire are excluded from the detection table below.\n\n");
    md.push_str("| fault | stage | task | faulty trials | fired | not fired |\n|---|---|---|---:|---:|---:|\n");
    for r in firing {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.fault, r.stage, r.task, r.faulty_trials, r.fired, r.not_fired
        );
    }
    md.push('\n');

    md.push_str("## Detection\n\n");
    md.push_str("How to read it: *caught* counts fired faulty trials on which the policy's verdict agreed with the ledger (not Success when the intended outcome failed; Success when it happened despite a lying tool message); *alarms* counts verdicts other than Success whatever the truth.\n\n");
    md.push_str("| fault | task | policy | n (fired) | caught | missed | caught rate | alarms |\n|---|---|---|---:|---:|---:|---:|---:|\n");
    for r in detection {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            r.fault,
            r.task,
            r.policy,
            r.fired,
            r.caught,
            r.missed,
            pct(r.caught, r.fired),
            r.alarms
        );
    }
    md.push('\n');

    md.push_str("## False alarms\n\n");
    md.push_str("How to read it: on working trials (no fault) whose outcome the ledger confirms, a false alarm is any verdict other than Success; *outcome failed* counts working trials the ledger did not confirm, which are not counted as false alarms.\n\n");
    md.push_str("| task | policy | n (working) | false alarms | rate | outcome failed |\n|---|---|---:|---:|---:|---:|\n");
    for r in false_alarms {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            r.task,
            r.policy,
            r.n_working,
            r.false_alarms,
            pct(r.false_alarms, r.n_working - r.outcome_failed),
            r.outcome_failed
        );
    }
    Ok(md)
}
