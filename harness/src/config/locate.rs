//! Finding the config text (the embedded configs by name, or a file path) and locating
//! lines and tables in it for error messages.

use anyhow::{bail, Result};
use std::path::Path;

/// The embedded default experiment.
pub const DEFAULT_CONFIG: &str = include_str!("../../configs/default.toml");

/// Every fault of the catalogue on every task it applies to.
pub const CATALOGUE_CONFIG: &str = include_str!("../../configs/catalogue.toml");

/// The MiniWoB++ suite: its pages and its own reward as the answer key.
pub const MINIWOB_CONFIG: &str = include_str!("../../configs/miniwob.toml");

/// The faults on the DevTools protocol, through faultline's own browser connection.
pub const DEVTOOLS_CONFIG: &str = include_str!("../../configs/devtools.toml");

/// Names accepted by `--config` besides file paths.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("default", DEFAULT_CONFIG),
    ("catalogue", CATALOGUE_CONFIG),
    ("miniwob", MINIWOB_CONFIG),
    ("devtools", DEVTOOLS_CONFIG),
];

/// The config text as passed: its name and contents.
pub struct ConfigText {
    /// `embedded:<name>` for an embedded config, else the file's path.
    pub name: String,
    /// The TOML text.
    pub text: String,
}

/// Loads `--config` (an embedded name or a file path); `None` means the default.
pub fn load_text(arg: Option<&str>) -> Result<ConfigText> {
    let arg = arg.unwrap_or("default");
    if let Some((name, text)) = EMBEDDED.iter().find(|(n, _)| *n == arg) {
        return Ok(ConfigText {
            name: format!("embedded:{name}"),
            text: text.to_string(),
        });
    }
    let path = Path::new(arg);
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(ConfigText {
            name: path.display().to_string(),
            text,
        }),
        Err(e) => {
            let names: Vec<&str> = EMBEDDED.iter().map(|(n, _)| *n).collect();
            bail!(
                "{}: cannot read config ({e}); --config takes a file path or one of: {}",
                path.display(),
                names.join(", ")
            )
        }
    }
}

/// The `[table]` (or `[[table]]`) header in force at 1-based `line`, if any.
pub(super) fn table_at(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line)
        .filter_map(|l| {
            let l = l.trim();
            l.starts_with('[')
                .then(|| l.trim_matches(|c| c == '[' || c == ']').trim().to_string())
        })
        .last()
        .filter(|t| !t.is_empty())
}

/// 1-based line of a byte offset.
pub(super) fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The line where `key = ...` is set, for validation errors. A dotted key
/// (`recovery.runs`) is looked up inside its `[recovery]` table; a plain one among the
/// top-level keys.
pub(super) fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let (table, name) = key.rsplit_once('.').unwrap_or(("", key));
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim_start();
        if let Some(header) = l.strip_prefix('[') {
            current = header
                .split(']')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            continue;
        }
        if current == table
            && l.strip_prefix(name)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            return Some(i + 1);
        }
    }
    None
}
