//! Agents by name, so a stored config rebuilds the same agent.
//!
//! Adding an agent is one file under `agent/` implementing [`Agent`] and one
//! [`Registry::register`] line in [`Registry::default`]; the config validation
//! (`[recovery] agent`), `faultline list agents` and the run all read this registry.

use super::cassette::Cassette;
use super::observant::ObservantAgent;
use super::openai::OpenAiAgent;
use super::replay::ReplayAgent;
use super::trusting::TrustingAgent;
use super::Agent;
use crate::config::ExperimentConfig;
use std::path::Path;
use std::sync::Arc;

/// What an agent may be built from: the resolved experiment config and the run
/// directory (where, for example, a model agent keeps its default cassette).
#[derive(Clone, Copy)]
pub struct AgentContext<'a> {
    /// The resolved experiment config (the `[openai]`, `[cassette]` and `[exec]` sections).
    pub config: &'a ExperimentConfig,
    /// The run directory.
    pub out: &'a Path,
}

/// Builds an agent, or says why the config cannot give one (a usage error).
pub type Constructor = fn(AgentContext<'_>) -> Result<Arc<dyn Agent>, String>;

/// Old names still accepted in configs, and the agent each now means.
pub const ALIASES: &[(&str, &str)] = &[("scripted", "trusting")];

/// Agents by name, in registration order (the order `faultline list agents` prints).
pub struct Registry {
    constructors: Vec<(&'static str, Constructor)>,
}

impl Default for Registry {
    /// The built-in agents.
    fn default() -> Self {
        let mut r = Registry {
            constructors: Vec::new(),
        };
        r.register("replay", |_| Ok(Arc::new(ReplayAgent)));
        r.register("trusting", |_| Ok(Arc::new(TrustingAgent)));
        r.register("observant", |_| Ok(Arc::new(ObservantAgent)));
        r.register("exec", |cx| match &cx.config.exec {
            Some(spec) => Ok(Arc::new(crate::plugin::agent::ExecAgent::new(spec.clone()))),
            None => Err("the `exec` agent needs an [exec] section with a command".into()),
        });
        r.register("openai", |cx| {
            let path = cx.config.cassette.path_in(cx.out);
            let cassette = Cassette::open(&path, cx.config.cassette.mode)?;
            Ok(Arc::new(
                OpenAiAgent::new(cx.config.openai.clone(), Arc::new(cassette))
                    .map_err(|e| e.message)?,
            ))
        });
        r
    }
}

impl Registry {
    /// Adds (or replaces) an agent under `name`.
    pub fn register(&mut self, name: &'static str, constructor: Constructor) {
        self.constructors.retain(|(n, _)| *n != name);
        self.constructors.push((name, constructor));
    }

    /// Every registered name, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.constructors.iter().map(|(n, _)| *n).collect()
    }

    /// The registered name `name` stands for (itself, or what an old alias now means),
    /// or `None` when nothing answers to it.
    pub fn canonical(&self, name: &str) -> Option<&'static str> {
        let name = ALIASES
            .iter()
            .find(|(old, _)| *old == name)
            .map_or(name, |(_, new)| new);
        self.constructors
            .iter()
            .map(|(n, _)| *n)
            .find(|n| *n == name)
    }

    /// Builds the agent `name`; an unknown name or a config the agent cannot use is an
    /// error message meant for the user.
    pub fn build(&self, name: &str, cx: AgentContext<'_>) -> Result<Arc<dyn Agent>, String> {
        let canonical = self.canonical(name);
        match self
            .constructors
            .iter()
            .find(|(n, _)| Some(*n) == canonical)
        {
            Some((_, build)) => build(cx),
            None => Err(format!(
                "unknown agent `{name}` (available: {})",
                self.names().join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_agents_are_registered_in_their_documented_order() {
        assert_eq!(
            Registry::default().names(),
            ["replay", "trusting", "observant", "exec", "openai"]
        );
        assert_eq!(Registry::default().canonical("scripted"), Some("trusting"));
        assert_eq!(Registry::default().canonical("nobody"), None);
    }

    #[test]
    fn every_registered_agent_builds_from_the_default_config_and_reports_its_name() {
        let mut text = crate::config::load_text(None).unwrap();
        text.text
            .push_str("\n[exec]\ncommand = [\"python3\", \"agent.py\"]\n");
        let config = crate::config::resolve(&text, &crate::config::Overrides::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::default();
        for name in registry.names() {
            let agent = registry
                .build(
                    name,
                    AgentContext {
                        config: &config,
                        out: dir.path(),
                    },
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(agent.name(), name);
            assert_eq!(registry.canonical(name), Some(name));
        }
        let err = match registry.build(
            "nobody",
            AgentContext {
                config: &config,
                out: dir.path(),
            },
        ) {
            Err(e) => e,
            Ok(_) => panic!("an unknown agent built"),
        };
        assert!(
            err.contains("replay, trusting, observant, exec, openai"),
            "{err}"
        );
    }
}
