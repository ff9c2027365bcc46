//! `faultline list`: lists the fault catalogue, tasks, policies or agents.

use super::ListArgs;
use crate::error::usage;
use anyhow::{anyhow, Result};
use faultline_tasks::TaskKind;
use std::io::Write as _;

pub(super) fn list(args: ListArgs) -> Result<()> {
    use faultline_faults::Fault;
    let mut out = std::io::stdout().lock();
    match args.what.as_str() {
        "faults" => {
            let mut faults: Vec<Fault> = Fault::ALL.to_vec();
            faults.sort_by_key(|f| (f.layer().rank(), Fault::ALL.iter().position(|g| g == f)));
            if args.json {
                let specs: Vec<&faultline_faults::FaultSpec> =
                    faults.iter().map(|f| f.spec()).collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&specs)?)?;
                return Ok(());
            }
            let rows: Vec<[String; 6]> = faults
                .iter()
                .map(|f| {
                    let s = f.spec();
                    [
                        s.id.to_string(),
                        s.layer.to_string(),
                        s.stage.to_string(),
                        s.mechanism.to_string(),
                        s.tasks
                            .iter()
                            .map(|t| t.name())
                            .collect::<Vec<_>>()
                            .join(","),
                        s.description.to_string(),
                    ]
                })
                .collect();
            let header = ["id", "layer", "stage", "mechanism", "tasks", "description"];
            let width = |i: usize| {
                rows.iter()
                    .map(|r| r[i].len())
                    .chain([header[i].len()])
                    .max()
                    .unwrap_or(0)
            };
            let widths: Vec<usize> = (0..5).map(width).collect();
            let line = |cells: [&str; 6]| {
                let mut l = String::new();
                for (i, c) in cells.iter().enumerate().take(5) {
                    l.push_str(&format!("{c:<w$}  ", w = widths[i]));
                }
                l.push_str(cells[5]);
                l
            };
            writeln!(out, "{}", line(header))?;
            for r in &rows {
                writeln!(out, "{}", line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]]))?;
            }
            writeln!(
                out,
                "\n{} faults in {} layers; select them with ids, globs (overlay.*), layer:NAME, stage:NAME, reference or all.",
                faults.len(),
                faultline_faults::Layer::ALL.len()
            )?;
        }
        "tasks" => {
            for t in TaskKind::ALL {
                let l = faultline_tasks::Layout::for_root(
                    faultline_tasks::seed::DEFAULT_ROOT_SEED,
                    t,
                    0,
                );
                writeln!(out, "{:<8} {}", t.name(), l.instruction().text)?;
            }
        }
        "policies" => {
            for p in faultline_policies::Registry::default().names() {
                writeln!(out, "{p}")?;
            }
        }
        "agents" => {
            for a in crate::agent::Registry::default().names() {
                writeln!(out, "{a}")?;
            }
        }
        other => {
            return Err(usage(anyhow!(
                "list: unknown list `{other}` (expected faults, tasks, policies or agents)"
            )))
        }
    }
    Ok(())
}
