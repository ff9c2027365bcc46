//! Formatting shared by the report's writers: fixed-precision numbers, p-values, interval
//! columns, CSV fields and Markdown cells. Every number in a table goes through here, so
//! tables are byte-stable.

use crate::stats::{ClusteredProportion, Estimate};

/// Fixed-precision numbers, so tables are byte-stable.
pub fn fmt4(x: f64) -> String {
    format!("{x:.4}")
}

/// A p-value with its small values in scientific notation (so 2e-12 does not print as 0).
pub fn format_p(p: f64) -> String {
    if p != 0.0 && p < 1e-4 {
        format!("{p:.3e}")
    } else {
        format!("{p:.6}")
    }
}

/// `ci_low,ci_high,ci_method` for an optional estimate.
pub fn ci_columns(e: Option<&Estimate>) -> String {
    match e {
        Some(e) => format!("{},{},{}", fmt4(e.lower), fmt4(e.upper), e.method),
        None => ",,".into(),
    }
}

/// The three interval fields `ci_low`, `ci_high`, `ci_method` of [`ci_columns`], apart
/// (empty without an estimate).
pub fn ci_cells(e: Option<&Estimate>) -> [String; 3] {
    match e {
        Some(e) => [fmt4(e.lower), fmt4(e.upper), e.method.to_string()],
        None => Default::default(),
    }
}

/// Quotes a CSV field when needed (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A CSV table written row by row: every field quoted as needed, and every row as wide
/// as the header (a row that is not is a bug in its writer, caught by its tests).
pub struct CsvTable {
    width: usize,
    text: String,
}

impl CsvTable {
    /// A table with these columns.
    pub fn new<S: AsRef<str>>(columns: &[S]) -> CsvTable {
        let mut table = CsvTable {
            width: columns.len(),
            text: String::new(),
        };
        table.line(columns);
        table
    }

    /// Appends one row.
    pub fn row<S: AsRef<str>>(&mut self, fields: &[S]) {
        assert_eq!(
            fields.len(),
            self.width,
            "a CSV row must be as wide as its header"
        );
        self.line(fields);
    }

    fn line<S: AsRef<str>>(&mut self, fields: &[S]) {
        let cells: Vec<String> = fields.iter().map(|f| csv_field(f.as_ref())).collect();
        self.text.push_str(&cells.join(","));
        self.text.push('\n');
    }

    /// The table's text.
    pub fn finish(self) -> String {
        self.text
    }
}

/// A Markdown table cell from free text: pipes escaped, line breaks folded.
pub fn md_cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// A Markdown table cell from text a plugin or an agent supplied (its stderr, an error
/// built from its output), shown literally: `<`, `>` and `&` as entities, so no renderer
/// takes it for HTML, every other character that can open Markdown syntax inside a cell
/// (emphasis, code, links, images, strikethrough, pipes) backslash-escaped, line breaks
/// folded.
pub fn md_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\r' | '\n' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '!' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The `n_eff` cell of a clustered rate, marked † (and `fallback` set) when the design
/// effect could not be estimated.
pub fn n_eff_cell(rate: Option<&ClusteredProportion>, fallback: &mut bool) -> String {
    match rate {
        Some(p) if p.estimate.note.is_some() => {
            *fallback = true;
            format!("{:.1}†", p.n_effective)
        }
        Some(p) => format!("{:.1}", p.n_effective),
        None => "–".into(),
    }
}

/// A rate cell of the Markdown tables: `point% [lower, upper]`, or – without an estimate.
pub fn rate_cell(e: Option<&Estimate>) -> String {
    match e {
        Some(e) => format!(
            "{:.1}% [{:.1}, {:.1}]",
            100.0 * e.point,
            100.0 * e.lower,
            100.0 * e.upper
        ),
        None => "–".into(),
    }
}
