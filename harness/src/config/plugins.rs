//! Resolver of the `[[policy]]` plugin tables (and each plugin's process spec).

use super::file::PluginFile;
use crate::plugin::{PluginSpec, DEFAULT_TIMEOUT_MS};
use anyhow::{bail, Result};
use faultline_policies::Registry;

/// A validated plugin process.
pub(super) fn plugin_spec(
    name: &str,
    command: &[String],
    timeout_ms: Option<u64>,
    at: &str,
) -> Result<PluginSpec> {
    if command.is_empty() || command[0].is_empty() {
        bail!("{at}: expected a command, e.g. command = [\"python3\", \"verify.py\"]");
    }
    let timeout_ms = timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=600_000).contains(&timeout_ms) {
        bail!("{at}: expected a timeout between 1 and 600000 ms, found {timeout_ms}");
    }
    Ok(PluginSpec {
        name: name.to_string(),
        command: command.to_vec(),
        timeout_ms,
    })
}

/// The `[[policy]]` tables: unique names that do not shadow a built-in policy.
pub(super) fn resolve_plugins(
    list: Option<&[PluginFile]>,
    at: &dyn Fn(&str) -> String,
) -> Result<Vec<PluginSpec>> {
    let mut out: Vec<PluginSpec> = Vec::new();
    for p in list.unwrap_or_default() {
        let here = format!("{} `{}`", at("policy"), p.name);
        let valid = !p.name.is_empty()
            && p.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            bail!("{here}: a policy name is letters, digits, `_`, `-` or `.`");
        }
        if Registry::default().contains(&p.name) {
            bail!("{here}: the name of a built-in policy");
        }
        if out.iter().any(|o| o.name == p.name) {
            bail!("{here}: defined twice");
        }
        out.push(plugin_spec(&p.name, &p.command, p.timeout_ms, &here)?);
    }
    Ok(out)
}
