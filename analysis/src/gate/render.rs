//! The gate's verdict as Markdown (a CI step summary or a pull-request comment), JUnit
//! XML (one test case per cell and per bound) and JSON. Same report in, same bytes out.
//! Each failure kind has its own name in every output: a `regression`, a cell `missing`
//! from the candidate (with its reason: `policy_missing`, `infra_errors` or `unpaired`),
//! a `bound` not met, runs `not_comparable`.

use super::{CellResult, FloorResult, GateReport, Status};
use crate::format::md_cell;
use std::fmt::Write as _;

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn points(x: f64) -> String {
    format!("{:+.1} pts", 100.0 * x)
}

fn interval(c: &CellResult) -> String {
    match (c.ci_low, c.ci_high) {
        (Some(lo), Some(hi)) => format!(
            "[{:+.1}, {:+.1}] {}",
            100.0 * lo,
            100.0 * hi,
            c.interval_method.as_deref().unwrap_or("")
        )
        .trim_end()
        .to_string(),
        _ => "n/a".into(),
    }
}

fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// `caught 18/20 (90.0%)` for one side of a cell.
fn side(count: usize, n: usize, rate: f64) -> String {
    format!("{count}/{n} ({})", pct(rate))
}

/// The numbers of one cell, in one line (JUnit failure messages, logs).
pub fn cell_line(c: &CellResult) -> String {
    format!(
        "{} {}: baseline {} -> candidate {}, difference {} (interval {}, {} p {}, {} worse / {} better items, margin {})",
        c.metric,
        c.name(),
        side(c.baseline_count, c.n, c.baseline_rate),
        side(c.candidate_count, c.n, c.candidate_rate),
        points(c.difference),
        interval(c),
        c.test_method.as_deref().unwrap_or("McNemar"),
        p_value(c.mcnemar_p),
        c.worse,
        c.better,
        points(c.margin).trim_start_matches('+'),
    )
}

/// What the candidate lacks of one missing cell, in one line (JUnit messages, logs).
pub fn missing_line(c: &CellResult) -> String {
    let (reason, detail, items) = c.missing.as_ref().map_or(("unpaired", "", 0), |m| {
        (m.reason.name(), m.detail.as_str(), m.baseline_items)
    });
    format!(
        "{} {}: missing from the candidate ({reason}): {detail} (baseline: {items} items)",
        c.metric,
        c.name(),
    )
}

fn missing_table(out: &mut String, cells: &[&CellResult]) {
    out.push_str("| metric | fault | task | policy | agent | baseline items | reason | what the candidate has |
");
    out.push_str(
        "|---|---|---|---|---|---:|---|---|
",
    );
    for c in cells {
        let m = c.missing.as_ref();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            c.metric,
            md_cell(c.fault.as_deref().unwrap_or("")),
            md_cell(&c.task),
            md_cell(&c.policy),
            md_cell(c.agent.as_deref().unwrap_or("")),
            m.map_or(0, |m| m.baseline_items),
            m.map_or("", |m| m.reason.name()),
            md_cell(m.map_or("", |m| m.detail.as_str())),
        );
    }
}

fn cell_table(out: &mut String, cells: &[&CellResult]) {
    out.push_str("| metric | fault | task | policy | agent | baseline | candidate | difference | interval | McNemar p |\n");
    out.push_str("|---|---|---|---|---|---:|---:|---:|---|---:|\n");
    for c in cells {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.metric,
            md_cell(c.fault.as_deref().unwrap_or("")),
            md_cell(&c.task),
            md_cell(&c.policy),
            md_cell(c.agent.as_deref().unwrap_or("")),
            side(c.baseline_count, c.n, c.baseline_rate),
            side(c.candidate_count, c.n, c.candidate_rate),
            points(c.difference),
            interval(c),
            p_value(c.mcnemar_p),
        );
    }
}

/// The Markdown summary: the verdict, the reasons, regressions and improvements first,
/// the bounds, then every other cell folded away.
pub fn markdown(r: &GateReport) -> String {
    let mut out = String::new();
    let regressions: Vec<&CellResult> = r.regressions().collect();
    let improvements: Vec<&CellResult> = r.improvements().collect();
    let failed_floors: Vec<&FloorResult> = r.failed_floors().collect();
    let missing: Vec<&CellResult> = r.missing().collect();
    let allowed: Vec<&CellResult> = r.allowed_missing().collect();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let verdict = if let Some(why) = &r.comparability.refused {
        format!("NOT COMPARABLE: {why}")
    } else if r.failed() {
        let missing_note = match missing.len() {
            0 => String::new(),
            n => format!(", {n} cell{} missing from the candidate", plural(n)),
        };
        format!(
            "FAIL: {} regression{}{missing_note}, {} bound{} not met",
            regressions.len(),
            plural(regressions.len()),
            failed_floors.len(),
            plural(failed_floors.len())
        )
    } else {
        let allowed_note = match allowed.len() {
            0 => String::new(),
            n => format!(", {n} missing cell{} allowed", plural(n)),
        };
        format!(
            "PASS: no regression in {} cells ({} improved{allowed_note})",
            r.cells.len() - allowed.len(),
            improvements.len()
        )
    };
    let _ = writeln!(out, "## faultline gate: {verdict}\n");
    let test = match r.rules.significance {
        super::Significance::Mcnemar => format!(
            "McNemar's test on the paired items (exact, or clustered when items share a layout) confirms it at level {}",
            r.rules.level.get()
        ),
        super::Significance::Bootstrap => format!(
            "its interval at level {} (the layout-cluster bootstrap's, or Tango's score interval when the bootstrap is degenerate) excludes zero",
            r.rules.level.get()
        ),
        super::Significance::None => "no paired test is asked for: the margin alone decides".into(),
    };
    let _ = writeln!(
        out,
        "Baseline `{}`, candidate `{}`. A cell regresses when it moves the wrong way by more than its margin (detection {}, false alarms {}, recovery {}) and {test}. Differences are candidate minus baseline, in points, with their interval. A cell of the baseline without a paired item in the candidate is missing and fails the gate, unless the rules' `allow_missing` names it.\n",
        r.baseline,
        r.candidate,
        pct(r.rules.detection.margin),
        pct(r.rules.false_alarms.margin),
        pct(r.rules.recovery.margin),
    );
    for w in &r.comparability.warnings {
        let _ = writeln!(out, "> warning: {w}");
    }
    if !r.comparability.warnings.is_empty() {
        out.push('\n');
    }
    if r.comparability.refused.is_some() && r.cells.is_empty() {
        return out;
    }
    if !regressions.is_empty() {
        let _ = writeln!(out, "### Regressions ({})\n", regressions.len());
        cell_table(&mut out, &regressions);
        out.push('\n');
    }
    if !missing.is_empty() {
        let _ = writeln!(out, "### Missing from the candidate ({})\n", missing.len());
        missing_table(&mut out, &missing);
        out.push('\n');
    }
    if !improvements.is_empty() {
        let _ = writeln!(out, "### Improvements ({})\n", improvements.len());
        cell_table(&mut out, &improvements);
        out.push('\n');
    }
    if !r.floors.is_empty() {
        out.push_str("### Bounds\n\n| bound | candidate | result |\n|---|---:|---|\n");
        for f in &r.floors {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                md_cell(&f.name()),
                f.rate.map_or("no candidate items".into(), |x| format!(
                    "{}/{} ({})",
                    f.count,
                    f.n,
                    pct(x)
                )),
                if f.passed { "met" } else { "**not met**" }
            );
        }
        out.push('\n');
    }
    if !allowed.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>{} missing cell{} allowed by the rules</summary>\n",
            allowed.len(),
            plural(allowed.len())
        );
        missing_table(&mut out, &allowed);
        out.push_str("\n</details>\n\n");
    }
    let rest: Vec<&CellResult> = r
        .cells
        .iter()
        .filter(|c| c.status == Status::Unchanged)
        .collect();
    if !rest.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>{} cells without a confirmed change</summary>\n",
            rest.len()
        );
        cell_table(&mut out, &rest);
        out.push_str("\n</details>\n");
    }
    out
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: one `testsuite` per metric (plus `bounds`), one `testcase` per cell;
/// regressions, missing cells and unmet bounds are `failure`s (types `regression`,
/// `missing`, `bound`) whose message carries the numbers or the reason; missing cells the
/// rules allow are `skipped`. A refused comparison is one failing test case.
pub fn junit(r: &GateReport) -> String {
    let mut suites: Vec<(String, Vec<String>, usize, usize)> = Vec::new();
    if let Some(why) = &r.comparability.refused {
        suites.push((
            "comparability".into(),
            vec![format!(
                "    <testcase classname=\"faultline.gate\" name=\"comparable\">\n      <failure type=\"not_comparable\" message=\"{}\"/>\n    </testcase>\n",
                xml_escape(why)
            )],
            1,
            0,
        ));
    }
    for metric in super::Metric::ALL {
        let mut cases = Vec::new();
        let (mut failures, mut skipped) = (0, 0);
        let mut cells: Vec<&CellResult> = r.cells.iter().filter(|c| c.metric == metric).collect();
        // Only a run of an external harness has defect cells; others keep their suites.
        if metric == super::Metric::Defects && cells.is_empty() {
            continue;
        }
        cells.sort_by(|a, b| {
            (&a.fault, &a.task, &a.policy, &a.agent).cmp(&(&b.fault, &b.task, &b.policy, &b.agent))
        });
        for c in cells {
            let head = format!(
                "    <testcase classname=\"faultline.gate.{}\" name=\"{}\">\n",
                metric,
                xml_escape(&c.name())
            );
            let body = match c.status {
                Status::Regression => {
                    failures += 1;
                    format!(
                        "      <failure type=\"regression\" message=\"{}\">{}</failure>\n",
                        xml_escape(&cell_line(c)),
                        xml_escape(&cell_line(c))
                    )
                }
                Status::Missing => {
                    failures += 1;
                    format!(
                        "      <failure type=\"missing\" message=\"{}\">{}</failure>\n",
                        xml_escape(&missing_line(c)),
                        xml_escape(&missing_line(c))
                    )
                }
                Status::AllowedMissing => {
                    skipped += 1;
                    format!(
                        "      <skipped message=\"{}, allowed by allow_missing\"/>\n",
                        xml_escape(&missing_line(c))
                    )
                }
                Status::Improvement | Status::Unchanged => format!(
                    "      <system-out>{}</system-out>\n",
                    xml_escape(&cell_line(c))
                ),
            };
            cases.push(format!("{head}{body}    </testcase>\n"));
        }
        if !cases.is_empty() {
            suites.push((metric.name().into(), cases, failures, skipped));
        }
    }
    if !r.floors.is_empty() {
        let mut failures = 0;
        let cases = r
            .floors
            .iter()
            .map(|f| {
                let numbers = f.rate.map_or("no candidate items".into(), |x| {
                    format!("candidate {}/{} ({})", f.count, f.n, pct(x))
                });
                let body = if f.passed {
                    format!("      <system-out>{}</system-out>\n", xml_escape(&numbers))
                } else {
                    failures += 1;
                    format!(
                        "      <failure type=\"bound\" message=\"{}: {}\"/>\n",
                        xml_escape(&f.name()),
                        xml_escape(&numbers)
                    )
                };
                format!(
                    "    <testcase classname=\"faultline.gate.bounds\" name=\"{}\">\n{body}    </testcase>\n",
                    xml_escape(&f.name())
                )
            })
            .collect();
        suites.push(("bounds".into(), cases, failures, 0));
    }
    let tests: usize = suites.iter().map(|s| s.1.len()).sum();
    let failures: usize = suites.iter().map(|s| s.2).sum();
    let skipped: usize = suites.iter().map(|s| s.3).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"faultline gate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"
    );
    for (name, cases, failures, skipped) in suites {
        let _ = writeln!(
            out,
            "  <testsuite name=\"faultline.gate.{name}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
            cases.len()
        );
        for c in cases {
            out.push_str(&c);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// The whole report as pretty JSON.
pub fn json(r: &GateReport) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("gate reports serialize");
    s.push('\n');
    s
}
