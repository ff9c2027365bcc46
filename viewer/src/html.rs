//! The pages' HTML: the run page's static part (manifest, tables, plots) is written here;
//! everything that depends on a filter or on one trial is drawn by `assets/viewer.js`.

use crate::model::Run;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// One headline table, rendered from a CSV of the run.
pub(crate) struct Table {
    pub id: &'static str,
    pub title: &'static str,
    pub note: &'static str,
    pub rows: usize,
    pub html: String,
}

/// The report's CSVs shown on the run page, with what each row is and which browser
/// view it links to.
const TABLES: &[(&str, &str, &str, &str, &str)] = &[
    (
        "detection",
        "detection.csv",
        "Detection",
        "trials",
        "Per fault × task × policy: fired faulty trials, caught (the verdict agrees with the ledger), missed, alarms; interval on caught/fired.",
    ),
    (
        "layers",
        "layers.csv",
        "Detection by layer",
        "trials",
        "Per layer × policy, pooled over the layer's faults and tasks; Wilson interval on the layout-clustered effective n.",
    ),
    (
        "false-alarms",
        "false_alarms.csv",
        "False alarms",
        "trials",
        "Per task × policy on working trials: verdicts other than success on outcomes the ledger confirms.",
    ),
    (
        "comparisons",
        "comparisons.csv",
        "Paired differences (detection)",
        "trials",
        "Every policy pair (B − A) on the same fired trials: caught rates, paired difference with its interval (the cluster bootstrap's, or Tango's where the bootstrap's has no width), the paired test. “browse” lists the pair's trials, the discordant ones first selectable.",
    ),
    (
        "recovery",
        "recovery_summary.csv",
        "Recovery",
        "episodes",
        "Successes / n per task × fault × policy × agent over fired episodes; Wilson interval on the layout-clustered effective n.",
    ),
    (
        "detection-recovery",
        "detection_recovery.csv",
        "Detection × recovery",
        "episodes",
        "Episodes by whether the first step's verdict caught the fault and whether the agent recovered.",
    ),
    (
        "recovery-comparisons",
        "recovery_comparisons.csv",
        "Paired differences (recovery)",
        "episodes",
        "Every policy pair's paired difference in recovery rate on the same (layout, run) episodes.",
    ),
];

/// Columns left out of the page (they stay in the CSV): bootstrap bookkeeping, and the
/// main interval, shown in its own column.
const HIDDEN: &[&str] = &[
    "seed",
    "resamples",
    "level",
    "ci_method",
    "ci_low",
    "ci_high",
    "bootstrap_low",
    "bootstrap_high",
    "bootstrap_method",
];

fn numeric(s: &str) -> bool {
    !s.is_empty() && s.parse::<f64>().is_ok()
}

/// The headline tables of the run in `run_dir` (those whose CSV exists).
pub(crate) fn tables(run_dir: &Path) -> Vec<Table> {
    let mut out = Vec::new();
    for &(id, file, title, kind, note) in TABLES {
        let Ok(text) = std::fs::read_to_string(run_dir.join(file)) else {
            continue;
        };
        let rows = crate::csv::parse(&text);
        let Some((header, body)) = rows.split_first() else {
            continue;
        };
        let col = |name: &str| header.iter().position(|h| h == name);
        let (lo, hi, method) = (col("ci_low"), col("ci_high"), col("ci_method"));
        let shown: Vec<usize> = (0..header.len())
            .filter(|&i| !HIDDEN.contains(&header[i].as_str()))
            .collect();
        // The interval goes right after the estimate it belongs to.
        let anchor = ["rate", "difference", "caught", "false_alarms", "successes"]
            .iter()
            .find_map(|n| col(n));
        let mut h = String::new();
        let methods: std::collections::BTreeSet<&str> = body
            .iter()
            .filter_map(|r| method.and_then(|m| r.get(m)).map(|s| s.as_str()))
            .filter(|s| !s.is_empty())
            .collect();
        h.push_str("<div class=\"scroll\"><table class=\"data\">");
        if !methods.is_empty() {
            let _ = write!(
                h,
                "<caption>Intervals: {}</caption>",
                esc(&methods.into_iter().collect::<Vec<_>>().join(", "))
            );
        }
        h.push_str("<thead><tr>");
        for &i in &shown {
            let _ = write!(h, "<th scope=\"col\">{}</th>", esc(&header[i]));
            if Some(i) == anchor && lo.is_some() {
                h.push_str("<th scope=\"col\">interval</th>");
            }
        }
        h.push_str("<th scope=\"col\"><span class=\"sr\">link</span></th></tr></thead><tbody>");
        for r in body {
            let cell = |i: usize| r.get(i).map(|s| s.as_str()).unwrap_or("");
            h.push_str("<tr>");
            for &i in &shown {
                let v = cell(i);
                let class = if numeric(v) { " class=\"num\"" } else { "" };
                let _ = write!(h, "<td{class}>{}</td>", esc(v));
                if Some(i) == anchor {
                    if let (Some(lo), Some(hi)) = (lo, hi) {
                        let (l, u) = (cell(lo), cell(hi));
                        let text = if l.is_empty() && u.is_empty() {
                            "–".to_string()
                        } else {
                            format!("[{l}, {u}]")
                        };
                        let _ = write!(h, "<td class=\"num\">{}</td>", esc(&text));
                    }
                }
            }
            let mut hash = vec![format!("kind={kind}")];
            for (column, param) in [
                ("task", "task"),
                ("fault", "fault"),
                ("layer", "layer"),
                ("policy", "policy"),
                ("policy_a", "a"),
                ("policy_b", "b"),
            ] {
                if let Some(v) = col(column).map(cell) {
                    if !v.is_empty() && v != "all" {
                        hash.push(format!("{param}={}", encode(v)));
                    }
                }
            }
            let _ = write!(
                h,
                "<td><a href=\"#{}\" class=\"browse\">browse</a></td></tr>",
                esc(&hash.join("&"))
            );
        }
        h.push_str("</tbody></table></div>");
        out.push(Table {
            id,
            title,
            note,
            rows: body.len(),
            html: h,
        });
    }
    out
}

/// Percent-encodes a hash parameter value (as `encodeURIComponent`).
fn encode(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

fn head(title: &str, page: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<link rel=\"icon\" href=\"data:,\">\n\
         <link rel=\"stylesheet\" href=\"assets/viewer.css\">\n</head>\n<body data-page=\"{page}\">\n",
        esc(title)
    )
}

const FOOT: &str = "<script src=\"assets/viewer.js\"></script>\n</body>\n</html>\n";

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(a) if a.iter().all(|x| x.is_string() || x.is_number()) => Some(
            a.iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect::<Vec<_>>()
                .join(", "),
        ),
        _ => None,
    }
}

pub(crate) fn index_page(run: &Run, tables: &[Table], plots: &[(String, String)]) -> String {
    let mut h = head("faultline run", "index");
    h.push_str("<header class=\"top\"><h1>faultline run</h1><nav aria-label=\"Sections\"><a href=\"#browse\" data-nav>Browser</a> <a href=\"#tables\" data-nav>Tables</a> <a href=\"#plots\" data-nav>Plots</a> <a href=\"#manifest\" data-nav>Manifest</a></nav></header>\n<main>\n");

    // The browser first: it is what a reader comes for; the tables link into it.
    h.push_str(
        "<section id=\"browse\" aria-labelledby=\"browse-h\"><h2 id=\"browse-h\">Trials and episodes</h2>\n\
         <form id=\"filters\" class=\"filters\" onsubmit=\"return false\"></form>\n\
         <p id=\"count\" role=\"status\" aria-live=\"polite\">Loading…</p>\n\
         <div class=\"scroll\"><table id=\"list\" class=\"data list\"></table></div>\n\
         <p><button type=\"button\" id=\"more\" hidden>Show more</button></p>\n\
         <noscript><p>The browser needs JavaScript; the tables below do not.</p></noscript></section>\n",
    );

    h.push_str("<section id=\"tables\" aria-labelledby=\"tables-h\"><h2 id=\"tables-h\">Headline tables</h2>\n<p class=\"note\">From the CSVs beside <code>report.md</code> (which explains each). “browse” opens the rows behind a line in the browser above.</p>\n");
    for (i, t) in tables.iter().enumerate() {
        let _ = writeln!(
            h,
            "<details id=\"t-{}\"{}><summary><h3>{}</h3> <span class=\"muted\">({} rows)</span></summary><p class=\"note\">{}</p>{}</details>",
            t.id,
            if i < 2 { " open" } else { "" },
            esc(t.title),
            t.rows,
            esc(t.note),
            t.html
        );
    }
    if tables.is_empty() {
        h.push_str("<p>No tables: this run has no report CSVs yet (run <code>faultline report</code>).</p>\n");
    }
    h.push_str("</section>\n");

    h.push_str("<section id=\"plots\" aria-labelledby=\"plots-h\"><h2 id=\"plots-h\">Plots</h2>\n<div class=\"plots\">");
    for (name, link) in plots {
        let title = name.trim_end_matches(".svg").replace('_', " ");
        let _ = write!(
            h,
            "<figure><a href=\"{0}\"><img src=\"{0}\" alt=\"{1}\" loading=\"lazy\"></a><figcaption>{1}</figcaption></figure>",
            esc(link),
            esc(&title)
        );
    }
    h.push_str("</div></section>\n");

    h.push_str("<section id=\"manifest\" aria-labelledby=\"manifest-h\"><h2 id=\"manifest-h\">Manifest</h2>\n<table class=\"kv\"><tbody>");
    if let Value::Object(m) = &run.manifest {
        for (k, v) in m {
            if let Some(s) = scalar(v) {
                let _ = write!(
                    h,
                    "<tr><th scope=\"row\">{}</th><td><code>{}</code></td></tr>",
                    esc(k),
                    esc(&s)
                );
            }
        }
    }
    h.push_str("</tbody></table>\n<details><summary>The whole manifest (JSON)</summary><pre>");
    h.push_str(&esc(
        &serde_json::to_string_pretty(&run.manifest).unwrap_or_default()
    ));
    h.push_str("</pre></details></section>\n</main>\n");
    h.push_str(FOOT);
    h
}

pub(crate) fn trial_page() -> String {
    let mut h = head("faultline trial", "trial");
    h.push_str("<header class=\"top\"><p><a href=\"index.html\" id=\"up\">← run</a></p><h1 id=\"title\">Trial</h1><nav id=\"pager\" aria-label=\"Trials\"></nav></header>\n<main id=\"main\"><p>Loading…</p></main>\n");
    h.push_str(FOOT);
    h
}

pub(crate) fn episode_page() -> String {
    let mut h = head("faultline episode", "episode");
    h.push_str("<header class=\"top\"><p><a href=\"index.html\" id=\"up\">← run</a></p><h1 id=\"title\">Episode</h1><nav id=\"pager\" aria-label=\"Episodes\"></nav></header>\n<main id=\"main\"><p>Loading…</p></main>\n");
    h.push_str(FOOT);
    h
}
