//! The CSV writer: `detection.csv`, `layers.csv`, `false_alarms.csv`, `comparisons.csv`,
//! `verifier_cards.csv`, `answer_key.csv` when the run has external-suite trials and, when the run has
//! episodes, the five recovery tables.

use super::compute::Analysis;
use super::{write_file, RecoveryFiles, Report, ReportFiles};
use crate::{compare, recovery, tables};
use anyhow::Result;
use std::path::Path;

/// Writes every CSV table.
pub struct Csv;

impl Report for Csv {
    fn write(&self, a: &Analysis<'_>, out: &Path, files: &mut ReportFiles) -> Result<()> {
        let cfg = &a.cfg;
        files.detection_csv = out.join("detection.csv");
        files.layers_csv = out.join("layers.csv");
        files.false_alarms_csv = out.join("false_alarms.csv");
        files.comparisons_csv = out.join("comparisons.csv");
        write_file(
            &files.detection_csv,
            &tables::detection_csv(&a.detection, cfg),
        )?;
        write_file(&files.layers_csv, &tables::layers_csv(&a.layers))?;
        write_file(
            &files.false_alarms_csv,
            &tables::false_alarms_csv(&a.false_alarms, cfg),
        )?;
        write_file(
            &files.comparisons_csv,
            &compare::comparisons_csv(&a.comparisons, cfg),
        )?;
        files.verifier_cards_csv = out.join("verifier_cards.csv");
        write_file(
            &files.verifier_cards_csv,
            &tables::verifier_cards_csv(&a.verifier_cards),
        )?;
        files.answer_key_csv = None;
        if !a.answer_key.is_empty() {
            let path = out.join("answer_key.csv");
            write_file(&path, &tables::answer_key_csv(&a.answer_key, cfg))?;
            files.answer_key_csv = Some(path);
        }
        files.recovery = None;
        if let Some(r) = &a.recovery {
            let f = RecoveryFiles {
                recovery_csv: out.join("recovery.csv"),
                summary_csv: out.join("recovery_summary.csv"),
                detection_recovery_csv: out.join("detection_recovery.csv"),
                comparisons_csv: out.join("recovery_comparisons.csv"),
                gain_csv: out.join("recovery_gain.csv"),
            };
            write_file(&f.recovery_csv, &recovery::recovery_csv(&r.episodes))?;
            write_file(&f.summary_csv, &recovery::recovery_summary_csv(&r.cells))?;
            write_file(
                &f.detection_recovery_csv,
                &recovery::detection_recovery_csv(&r.cells),
            )?;
            write_file(
                &f.comparisons_csv,
                &recovery::recovery_comparisons_csv(&r.comparisons, cfg),
            )?;
            write_file(&f.gain_csv, &recovery::recovery_gain_csv(&r.gain, cfg))?;
            files.recovery = Some(f);
        }
        if let Some(infra) = &a.infra {
            write_file(
                &out.join("infra_errors.csv"),
                &crate::infra::infra_errors_csv(&infra.counts),
            )?;
            if !infra.harness.is_empty() {
                write_file(
                    &out.join("infra_retries.csv"),
                    &crate::infra::infra_retries_csv(&infra.harness),
                )?;
            }
        }
        Ok(())
    }
}
