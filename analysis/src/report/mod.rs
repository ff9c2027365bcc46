//! Regenerates every output of a run from its database alone: the CSV tables, the plots
//! and `report.md`. Same database and analysis config in, byte-identical files out.
//!
//! The analysis is computed once ([`compute::Analysis`]); then each writer behind the
//! [`Report`] trait formats it into its files ([`csv::Csv`], [`plots::Plots`],
//! [`markdown::Markdown`]), and [`Reports`] runs them in order. [`write_all`] is the entry
//! point: load, compute, write into a staging directory, then swap the set in
//! ([`swap`]: a kill never leaves old and new tables mixed).

pub mod compute;
pub mod csv;
pub mod markdown;
pub mod plots;
pub mod swap;

pub use crate::config::{default_config, run_policies};
pub use compute::{Analysis, Stored};

use crate::config::AnalysisConfig;
use crate::db::ResultsDb;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The files a report run wrote.
#[derive(Debug, Clone, Default)]
pub struct ReportFiles {
    /// `detection.csv`: caught, missed and alarms per fault, task and policy.
    pub detection_csv: PathBuf,
    /// Detection per catalogue layer and policy.
    pub layers_csv: PathBuf,
    /// `false_alarms.csv`: false alarms on confirmed working trials per task and policy.
    pub false_alarms_csv: PathBuf,
    /// `comparisons.csv`: the paired policy comparisons on detection.
    pub comparisons_csv: PathBuf,
    /// `verifier_cards.csv`: each policy's false-positive and false-negative rates,
    /// precision and recall of Success, per task and pooled.
    pub verifier_cards_csv: PathBuf,
    /// `report.md`: the report itself.
    pub report_md: PathBuf,
    /// Every plot written (SVG and PNG), in writing order.
    pub plots: Vec<PathBuf>,
    /// The recovery tables; `None` when the run has no episodes (none were written).
    pub recovery: Option<RecoveryFiles>,
    /// `answer_key.csv`: each policy against MiniWoB++'s reward and against faultline's
    /// own ledgers; `None` when the run has no external-suite trial (none was written).
    pub answer_key_csv: Option<PathBuf>,
}

/// The recovery experiment's tables.
#[derive(Debug, Clone)]
pub struct RecoveryFiles {
    /// One row per episode.
    pub recovery_csv: PathBuf,
    /// Success rate per task x fault x policy x agent.
    pub summary_csv: PathBuf,
    /// Detection x recovery cross-table.
    pub detection_recovery_csv: PathBuf,
    /// Paired policy comparisons on recovery success.
    pub comparisons_csv: PathBuf,
    /// The recovery gain of `outcome` over `unverified`, per task and pooled, per agent.
    pub gain_csv: PathBuf,
}

/// One writer of the report: formats the computed [`Analysis`] into files under `out` and
/// records what it wrote in `files`. Writers never compute; two runs on the same analysis
/// write the same bytes.
pub trait Report {
    /// Writes this writer's files for `analysis` under `out` and adds their paths to `files`.
    fn write(&self, analysis: &Analysis<'_>, out: &Path, files: &mut ReportFiles) -> Result<()>;
}

/// Writers run in order.
pub struct Reports(pub Vec<Box<dyn Report>>);

impl Default for Reports {
    /// Plots, then the CSV tables, then `report.md`.
    fn default() -> Reports {
        Reports(vec![
            Box::new(plots::Plots),
            Box::new(csv::Csv),
            Box::new(markdown::Markdown),
        ])
    }
}

impl Report for Reports {
    fn write(&self, analysis: &Analysis<'_>, out: &Path, files: &mut ReportFiles) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|r| r.write(analysis, out, files))
    }
}

/// Writes every table, plot and `report.md` into `out`. `screenshots` is the directory
/// the trials' screenshot paths are relative to (the run directory).
pub fn write_all(
    db: &ResultsDb,
    out: &Path,
    screenshots: &Path,
    cfg: &AnalysisConfig,
) -> Result<ReportFiles> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let stored = Stored::load(db)?;
    let analysis = Analysis::compute(&stored, screenshots, cfg);
    // Written aside, then swapped in as a whole (see `swap`).
    let staging = swap::Staging::begin(out)?;
    let mut files = ReportFiles::default();
    Reports::default().write(&analysis, staging.dir(), &mut files)?;
    let placed = staging.commit()?;
    Ok(files.placed(&placed))
}

impl ReportFiles {
    /// The same files where the swap put them.
    fn placed(self, c: &swap::Committed) -> ReportFiles {
        ReportFiles {
            detection_csv: c.place(&self.detection_csv),
            layers_csv: c.place(&self.layers_csv),
            false_alarms_csv: c.place(&self.false_alarms_csv),
            comparisons_csv: c.place(&self.comparisons_csv),
            verifier_cards_csv: c.place(&self.verifier_cards_csv),
            report_md: c.place(&self.report_md),
            plots: self.plots.iter().map(|p| c.place(p)).collect(),
            recovery: self.recovery.map(|r| RecoveryFiles {
                recovery_csv: c.place(&r.recovery_csv),
                summary_csv: c.place(&r.summary_csv),
                detection_recovery_csv: c.place(&r.detection_recovery_csv),
                comparisons_csv: c.place(&r.comparisons_csv),
                gain_csv: c.place(&r.gain_csv),
            }),
            answer_key_csv: self.answer_key_csv.map(|p| c.place(&p)),
        }
    }
}

/// Writes `text` to `path` through a temporary file and a rename, so a reader never sees
/// half a table.
pub(crate) fn write_file(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::tests::{row, step, verdict};
    use crate::{compare, tables};

    const UNSCALED_NOT_FIRED: &str =
        "the image and the viewport have the same size (there is nothing to scale)";

    /// A detection-only database: four layouts of one fault, a working trial per layout,
    /// verdicts from every built-in policy.
    fn detection_only_db(path: &Path) -> ResultsDb {
        let mut db = ResultsDb::open(path).unwrap();
        for layout in 0..4u32 {
            for condition in ["faulty", "working"] {
                let key = format!("detection/grid/{layout:03}/{condition}");
                let mut t = row(&key);
                t.layout_index = layout;
                t.condition = condition.parse().unwrap();
                if condition == "working" {
                    (t.fault, t.stage, t.fired, t.layer) = (None, None, None, None);
                    t.truth_achieved = true;
                } else {
                    t.fired = Some(layout != 3);
                    t.not_fired_reason = (layout == 3).then(|| UNSCALED_NOT_FIRED.to_string());
                }
                let verdicts: Vec<_> = [
                    ("unverified", "success"),
                    ("generic", "no_change"),
                    ("pixel", if layout % 2 == 0 { "fail" } else { "success" }),
                    (
                        "outcome",
                        if condition == "faulty" {
                            "fail"
                        } else {
                            "success"
                        },
                    ),
                ]
                .into_iter()
                .map(|(p, v)| verdict(&key, p, v))
                .collect();
                db.insert_trial(&t, &verdicts).unwrap();
            }
        }
        db
    }

    /// Every file under `dir`, by relative path, with its bytes.
    fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
        let mut out = std::collections::BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                    out.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
        out
    }

    const POLICIES: [&str; 2] = ["unverified", "outcome"];

    /// A database of three catalogue layers, with the run's policies recorded: per task
    /// layout, `transport.slow_response` on form (the outcome holds; on layout 2 it does
    /// not fire unless `all_fired`), `dom.stale_element` on form and select and
    /// `dom.duplicate_label` on form (outcome catches them except on select layout 0, so
    /// form's layouts are clusters of two trials), `parse.token_leak` stored without a layer
    /// as a version-1 row would be, and a working trial per task.
    fn catalogue_db(path: &Path, all_fired: bool) -> ResultsDb {
        let mut db = ResultsDb::open(path).unwrap();
        db.set_meta("policies", &serde_json::to_string(&POLICIES).unwrap())
            .unwrap();
        for layout in 0..3u32 {
            let faulty = [
                (
                    "transport.slow_response",
                    "observe",
                    Some("transport"),
                    "form",
                    true,
                ),
                ("dom.stale_element", "execute", Some("dom"), "form", false),
                ("dom.duplicate_label", "execute", Some("dom"), "form", false),
                ("dom.stale_element", "execute", Some("dom"), "select", false),
                ("parse.token_leak", "parse", None, "search", false),
            ];
            for (fault, stage, layer, task, holds) in faulty {
                let key = format!("detection/{task}/{layout:03}/{fault}");
                let mut t = crate::tables::tests::faulty(&key, fault, stage, layer, task);
                (t.layout_index, t.truth_achieved) = (layout, holds);
                if fault == "transport.slow_response" && layout == 2 && !all_fired {
                    t.fired = Some(false);
                    t.not_fired_reason = Some("the page sent no save request".into());
                }
                let outcome_right = !(task == "select" && layout == 0);
                let outcome = if holds == outcome_right {
                    "success"
                } else {
                    "fail"
                };
                let verdicts = [
                    verdict(&key, "unverified", "success"),
                    verdict(&key, "outcome", outcome),
                ];
                db.insert_trial(&t, &verdicts).unwrap();
            }
            for task in ["search", "form", "select"] {
                let key = format!("detection/{task}/{layout:03}/working");
                let mut t = row(&key);
                (t.task, t.layout_index) = (task.parse().unwrap(), layout);
                t.condition = faultline_tasks::Condition::Working;
                (t.fault, t.stage, t.fired, t.layer) = (None, None, None, None);
                t.truth_achieved = true;
                let verdicts = POLICIES.map(|p| verdict(&key, p, "success"));
                db.insert_trial(&t, &verdicts).unwrap();
            }
        }
        db
    }

    #[test]
    fn the_report_covers_layers_the_catalogue_and_faults_that_did_not_fire() {
        let dir = tempfile::tempdir().unwrap();
        let db = catalogue_db(&dir.path().join("results.sqlite"), false);
        let cfg = AnalysisConfig::for_run(5);
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let files = write_all(&db, &a, dir.path(), &cfg).unwrap();
        write_all(&db, &b, dir.path(), &cfg).unwrap();
        let (ta, tb) = (tree(&a), tree(&b));
        assert_eq!(ta, tb, "a rebuild from the same database differs");
        assert_eq!(files.layers_csv, a.join("layers.csv"));
        for f in [
            "layers.csv",
            "plots/layer_heatmap.svg",
            "plots/layer_heatmap.png",
        ] {
            assert!(ta.contains_key(Path::new(f)), "{f} missing");
        }
        assert!(files.plots.contains(&a.join("plots/layer_heatmap.svg")));
        assert!(files.plots.contains(&a.join("plots/layer_heatmap.png")));
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();

        let layers = text(&files.layers_csv);
        let lines: Vec<&str> = layers.lines().collect();
        assert_eq!(lines[0], "layer,policy,faults,tasks,fired,caught,rate,ci_low,ci_high,ci_method,clusters,n_effective,design_effect,note");
        let keys: Vec<String> = lines[1..]
            .iter()
            .map(|l| l.split(',').take(6).collect::<Vec<_>>().join(","))
            .collect();
        assert_eq!(
            keys,
            [
                "transport,unverified,1,1,2,2",
                "transport,outcome,1,1,2,2",
                "dom,unverified,2,2,9,0",
                "dom,outcome,2,2,9,8",
                "tool,unverified,1,1,3,0",
                "tool,outcome,1,1,3,3",
            ]
        );
        // The dom rows pool two faults on two tasks' three layouts: nine trials in six
        // (task, layout) clusters.
        assert!(lines[4].contains(",wilson-clustered,6,"), "{}", lines[4]);
        // Unverified never catches: the design effect is undefined, n_eff = clusters.
        assert!(lines[3].contains(",wilson-clustered,6,6.0000,1.5000,\"all outcomes equal"));
        let detection = text(&files.detection_csv);
        assert!(detection.starts_with(
            "fault,stage,task,policy,fired,caught,missed,alarms,ci_low,ci_high,ci_method,layer\n\
             transport.slow_response,observe,form,unverified,2,2,0,0,"
        ));
        assert!(detection.contains(",wilson,tool\n"), "the v1 row's layer");

        let md = text(&files.report_md);
        let at = |needle: &str| {
            md.find(needle)
                .unwrap_or_else(|| panic!("no {needle:?} in\n{md}"))
        };
        assert!(at("## Fault firing") < at("## Detection\n"));
        assert!(at("## Detection\n") < at("## Detection by layer"));
        assert!(at("## Detection by layer") < at("## Catalogue"));
        assert!(at("## Catalogue") < at("## Faults that did not fire"));
        assert!(at("## Faults that did not fire") < at("## False alarms"));
        for needle in [
            "| layer | fault | stage | task | faulty trials | fired | not fired |",
            "| transport | `transport.slow_response` | observe | form | 3 | 2 | 1 |",
            "| tool | `parse.token_leak` | parse | search | 3 | 3 | 0 |",
            "**1 faulty trial(s) did not fire**",
            "(#faults-that-did-not-fire)",
            "| dom | outcome | 2 | 2 | 9 | 8 | 88.9% [",
            "| dom | unverified | 2 | 2 | 9 | 0 | 0.0% [0.0, 39.0] | 6 | 6.0† |",
            "† marks rows where DEFF could not be estimated",
            "| dom | `dom.duplicate_label` | form | 3 | 3 | 0/3 | 3/3 |",
            "![Detection by layer](plots/layer_heatmap.svg)",
            "| layer | fault | tasks | faulty trials | fired | unverified | outcome |\n|---|---|---|---:|---:|---:|---:|\n",
            "| transport | `transport.slow_response` | form | 3 | 2 | 2/2 | 2/2 |",
            "| dom | `dom.stale_element` | form, select | 6 | 6 | 0/6 | 5/6 |\n| tool |",
            "| tool | `parse.token_leak` | search | 3 | 3 | 0/3 | 3/3 |",
            "| transport | `transport.slow_response` | form | 1 | 3 | the page sent no save request |",
        ] {
            at(needle);
        }
        assert!(!md.contains("Every faulty trial's fault fired."));
        // The layer heatmap has a row per layer, in layer order.
        let svg = text(&a.join("plots/layer_heatmap.svg"));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let labels: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(str::trim))
            .filter(|t| ["transport", "dom", "tool"].contains(t))
            .collect();
        assert_eq!(labels, ["transport", "dom", "tool"]);
    }

    #[test]
    fn the_report_has_a_verifier_card_for_every_policy_of_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let db = catalogue_db(&dir.path().join("results.sqlite"), false);
        // An external policy that could judge nothing: its card is all n = 0.
        db.set_meta("external_policies", r#"["plugin"]"#).unwrap();
        let cfg = AnalysisConfig::for_run(5);
        let out = dir.path().join("out");
        let files = write_all(&db, &out, dir.path(), &cfg).unwrap();
        assert_eq!(files.verifier_cards_csv, out.join("verifier_cards.csv"));
        let csv = std::fs::read_to_string(&files.verifier_cards_csv).unwrap();
        let keys: Vec<String> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
            .collect();
        // Per policy in run order: search, form, select, pooled. Form has two fired
        // slow_response trials, three of each dom fault and a working trial per layout.
        assert_eq!(
            keys,
            [
                "unverified,search,3,3",
                "unverified,form,8,3",
                "unverified,select,3,3",
                "unverified,pooled,14,9",
                "outcome,search,3,3",
                "outcome,form,8,3",
                "outcome,select,3,3",
                "outcome,pooled,14,9",
                "plugin,search,0,0",
                "plugin,form,0,0",
                "plugin,select,0,0",
                "plugin,pooled,0,0",
            ]
        );
        // Unverified says Success on all 23 trials: the 12 fired dom and token-leak trials
        // failed (FPR 12/12), none of the 11 that held (2 slow responses, 9 working) was
        // missed; precision 11/23, recall 11/11.
        let unverified = csv
            .lines()
            .find(|l| l.starts_with("unverified,pooled,"))
            .unwrap();
        let cells: Vec<&str> = unverified.split(',').collect();
        assert_eq!(cells[4..10], ["11", "12", "0", "0", "12", "1.0000"]);
        assert_eq!(cells[14..16], ["11", "0.0000"]);
        assert_eq!(cells[20..22], ["23", "0.4783"]);
        assert_eq!(cells[26..28], ["11", "1.0000"]);
        // A rate at 0 or 1 still has an interval of some width.
        assert_ne!(cells[10], cells[11]);
        assert_ne!(cells[16], cells[17]);
        assert!(csv.ends_with("\nplugin,pooled,0,0,0,0,0,0,0,,,,,,0,,,,,,0,,,,,,0,,,,,,,\n"));

        let md = std::fs::read_to_string(&files.report_md).unwrap();
        let at = |needle: &str| {
            md.find(needle)
                .unwrap_or_else(|| panic!("no {needle:?} in\n{md}"))
        };
        assert!(at("## Pooled caught rate per policy") < at("## Verifier cards"));
        assert!(at("## Verifier cards") < at("## Plots"));
        at("| unverified | **pooled** | 14 | 9 | 12/12 100.0% [");
        at("| outcome | search | 3 | 3 | 0/3 0.0% [");
        // n = 0: no estimate, not 0%.
        at("| plugin | **pooled** | 0 | 0 | – | – | – | – |");
    }

    #[test]
    fn a_trial_whose_fault_did_not_fire_is_never_caught_or_missed() {
        let dir = tempfile::tempdir().unwrap();
        let fired = catalogue_db(&dir.path().join("fired.sqlite"), true);
        let quiet = catalogue_db(&dir.path().join("quiet.sqlite"), false);
        let policies: Vec<String> = POLICIES.map(String::from).to_vec();
        let cfg = AnalysisConfig::for_run(5);
        let tables_of = |db: &ResultsDb| {
            let (t, v) = (db.trials().unwrap(), db.verdicts().unwrap());
            (
                tables::detection(&t, &v, &policies),
                tables::layers(&t, &v, &policies, &cfg),
                compare::pooled_caught(&t, &v, &policies),
            )
        };
        let (det_all, layers_all, pooled_all) = tables_of(&fired);
        let (det, layers, pooled) = tables_of(&quiet);
        // One transport trial did not fire: one fewer fired trial per policy, and it is
        // neither caught nor missed.
        for (all, some) in det_all.iter().zip(&det).take(2) {
            assert_eq!(all.fault.id(), "transport.slow_response");
            assert_eq!((all.fired, all.caught, all.missed), (3, 3, 0));
            assert_eq!((some.fired, some.caught, some.missed), (2, 2, 0));
        }
        assert_eq!(det_all[2..], det[2..]);
        assert_eq!((layers_all[0].fired, layers[0].fired), (3, 2));
        assert_eq!((layers_all[0].caught, layers[0].caught), (3, 2));
        assert_eq!(layers_all[2..], layers[2..]);
        assert_eq!(pooled_all[0].se.n, pooled[0].se.n + 1);
        let firing = tables::firing(&quiet.trials().unwrap());
        let catalogue = tables::catalogue(&firing, &det, &policies);
        assert_eq!((catalogue[0].faulty_trials, catalogue[0].fired), (3, 2));
        assert_eq!(catalogue[0].by_policy, vec![(2, 2), (2, 2)]);
    }

    #[test]
    fn when_every_fault_fired_the_report_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let db = catalogue_db(&dir.path().join("results.sqlite"), true);
        let files = write_all(
            &db,
            &dir.path().join("out"),
            dir.path(),
            &AnalysisConfig::for_run(5),
        )
        .unwrap();
        let md = std::fs::read_to_string(&files.report_md).unwrap();
        assert!(
            md.contains("## Faults that did not fire\n\nEvery faulty trial's fault fired.\n\n## False alarms"),
            "{md}"
        );
        assert!(!md.contains("did not fire**"));
    }

    #[test]
    fn a_version_1_database_still_reports_with_reference_layers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO meta VALUES ('schema_version', '1');
             CREATE TABLE trials (trial_key TEXT PRIMARY KEY, experiment TEXT NOT NULL, task TEXT NOT NULL, layout_index INTEGER NOT NULL, layout_seed TEXT NOT NULL, trial_seed TEXT NOT NULL, condition TEXT NOT NULL, fault TEXT, stage TEXT, fired INTEGER, witness TEXT, decision_source TEXT NOT NULL, reply TEXT NOT NULL, actions TEXT NOT NULL, executed TEXT NOT NULL, tool_message TEXT NOT NULL, observation_text TEXT NOT NULL, before_png TEXT, after_png TEXT, evidence TEXT NOT NULL, truth_achieved INTEGER NOT NULL, truth_detail TEXT NOT NULL, ledger TEXT NOT NULL, duration_ms REAL NOT NULL);
             CREATE TABLE verdicts (trial_key TEXT NOT NULL, policy TEXT NOT NULL, verdict TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY (trial_key, policy));
             INSERT INTO trials VALUES ('g0', 'detection', 'grid', 0, '5', '6', 'faulty', 'execute.unscaled_coordinates', 'execute', 1, '{}', 'oracle', 'click(1, 2)', '[]', '[]', 'Clicked.', '', NULL, NULL, '{}', 0, 'clicked blank space', '{}', 1.0);
             INSERT INTO trials VALUES ('g1', 'detection', 'grid', 1, '5', '7', 'faulty', 'execute.unscaled_coordinates', 'execute', 0, NULL, 'oracle', 'click(1, 2)', '[]', '[]', 'Clicked.', '', NULL, NULL, '{}', 0, 'clicked blank space', '{}', 1.0);
             INSERT INTO trials VALUES ('s0', 'detection', 'search', 0, '5', '8', 'faulty', 'parse.token_leak', 'parse', 1, '{}', 'oracle', 'type(x)', '[]', '[]', 'Typed.', '', NULL, NULL, '{}', 0, 'wrong query', '{}', 1.0);
             INSERT INTO verdicts VALUES ('g0', 'outcome', 'fail', ''), ('g1', 'outcome', 'fail', ''), ('s0', 'outcome', 'success', '');",
        )
        .unwrap();
        drop(conn);
        let db = ResultsDb::open_read_only(&path).unwrap();
        let out = dir.path().join("out");
        let files = write_all(&db, &out, dir.path(), &AnalysisConfig::for_run(1)).unwrap();
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();
        let layers = text(&files.layers_csv);
        let keys: Vec<String> = layers
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(6).collect::<Vec<_>>().join(","))
            .collect();
        // Built-in policy order; only outcome judged. execution comes before tool.
        assert_eq!(keys, ["execution,outcome,1,1,1,1", "tool,outcome,1,1,1,0"]);
        let md = text(&files.report_md);
        for needle in [
            "| execution | `execute.unscaled_coordinates` | execute | grid | 2 | 1 | 1 |",
            "| execution | `execute.unscaled_coordinates` | grid | 1 | 2 | no reason stored |",
            "| tool | `parse.token_leak` | search | 1 | 1 | – | – | – | 0/1 |",
        ] {
            assert!(md.contains(needle), "no {needle:?} in\n{md}");
        }
        assert!(out.join("plots/layer_heatmap.png").is_file());
    }

    const RECOVERY_FILES: [&str; 7] = [
        "recovery.csv",
        "recovery_summary.csv",
        "detection_recovery.csv",
        "recovery_comparisons.csv",
        "recovery_gain.csv",
        "plots/recovery_bars.svg",
        "plots/recovery_bars.png",
    ];

    #[test]
    fn a_detection_only_run_writes_no_recovery_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = detection_only_db(&dir.path().join("results.sqlite"));
        let out = dir.path().join("report");
        let cfg = AnalysisConfig::for_run(3);
        let files = write_all(&db, &out, dir.path(), &cfg).unwrap();
        assert!(files.recovery.is_none());
        for f in RECOVERY_FILES {
            assert!(
                !out.join(f).exists(),
                "{f} written for a run without episodes"
            );
        }
        assert!(!files.plots.iter().any(|p| p.ends_with("recovery_bars.svg")));
        let md = std::fs::read_to_string(&files.report_md).unwrap();
        assert!(md.contains("## Pooled caught rate per policy"));
        assert!(!md.contains("Recovery"), "{md}");
        assert!(md.contains(&format!(
            "| execution | `execute.unscaled_coordinates` | grid | 1 | 4 | {UNSCALED_NOT_FIRED} |"
        )));
        assert!(md.contains("| execution | `execute.unscaled_coordinates` | grid | 4 | 3 | 0/3 | 3/3 | 2/3 | 3/3 |"), "{md}");
        assert!(std::fs::read_to_string(&files.layers_csv)
            .unwrap()
            .lines()
            .skip(1)
            .all(|l| l.starts_with("execution,")));
    }

    #[test]
    fn a_run_with_episodes_writes_the_recovery_tables_and_section_reproducibly() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = detection_only_db(&dir.path().join("results.sqlite"));
        for e in crate::recovery::tests::experiment() {
            db.insert_episode(&e, &[step(&e.episode_key, 0)]).unwrap();
        }
        let cfg = AnalysisConfig::for_run(3);
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let files = write_all(&db, &a, dir.path(), &cfg).unwrap();
        write_all(&db, &b, dir.path(), &cfg).unwrap();
        let (ta, tb) = (tree(&a), tree(&b));
        assert_eq!(ta.keys().collect::<Vec<_>>(), tb.keys().collect::<Vec<_>>());
        for (path, bytes) in &ta {
            assert!(
                tb[path] == *bytes,
                "{} differs between rebuilds",
                path.display()
            );
        }
        for f in RECOVERY_FILES {
            assert!(ta.contains_key(Path::new(f)), "{f} missing");
        }
        let r = files.recovery.expect("recovery files");
        assert_eq!(r.summary_csv, a.join("recovery_summary.csv"));
        assert!(files.plots.contains(&a.join("plots/recovery_bars.svg")));
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();
        assert_eq!(
            text(&r.recovery_csv).lines().count(),
            1 + crate::recovery::tests::experiment().len()
        );
        assert!(text(&r.summary_csv).starts_with(
            "task,fault,policy,agent,n,successes,rate,ci_low,ci_high,ci_method,clusters,n_effective,not_fired,"
        ));
        assert!(text(&r.detection_recovery_csv)
            .ends_with("frame,feedback.iframe_no_change,outcome,scripted,12,9,3,0,0\n"));
        assert!(text(&r.comparisons_csv).starts_with("scope,task,fault,agent,policy_a,policy_b,n,"));
        assert!(text(&r.gain_csv).starts_with(
            "scope,task,agent,n,clusters,success_unverified,success_outcome,gain,ci_low,"
        ));

        let md = text(&files.report_md);
        let at = |needle: &str| {
            md.find(needle)
                .unwrap_or_else(|| panic!("no {needle:?} in\n{md}"))
        };
        // After the detection sections, before the plots.
        assert!(at("## Pooled caught rate per policy") < at("## Recovery"));
        assert!(at("## Recovery") < at("## Plots"));
        for needle in [
            "### Success rate",
            "| frame | `feedback.iframe_no_change` | outcome | scripted | 12 | 9 | 75.0% [",
            "### Detection and recovery",
            "### How episodes ended",
            "| frame | outcome | scripted | 12 | 9 | 0 | 0 | 3 | 0 | 0 |",
            "### Paired comparisons on recovery",
            "| frame · `feedback.iframe_no_change` · scripted | outcome − unverified | 12 |",
            "| all tasks and faults · scripted | outcome − unverified | 12 |",
            "### Recovery gain of outcome over unverified",
            "| frame | scripted | 12 | 4 | 0.0000 | 0.7500 | +0.750 [",
            "| **all tasks** | scripted | 12 | 4 | 0.0000 | 0.7500 | +0.750 [",
            "![Recovery success rates](plots/recovery_bars.svg)",
            "26 episode(s): 24 with the fault fired, 2 not fired",
            "† marks cells",
        ] {
            at(needle);
        }
        // The detection part is the same as without episodes.
        let detection_only = dir.path().join("c");
        let plain_dir = tempfile::tempdir().unwrap();
        let plain = detection_only_db(&plain_dir.path().join("results.sqlite"));
        let plain_md = text(
            &write_all(&plain, &detection_only, dir.path(), &cfg)
                .unwrap()
                .report_md,
        );
        let cut = at("## Recovery");
        assert_eq!(md[..cut], plain_md[..cut]);
        assert_eq!(
            md[at("## Plots")..].replace("![Recovery", ""),
            plain_md[cut..]
        );
    }
}
