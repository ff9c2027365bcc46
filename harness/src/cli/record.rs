//! `faultline record`: records decisions with an agent into JSONL files.

use super::RecordArgs;
use crate::config::{self, Overrides};
use crate::error::usage;
use crate::experiment::Harness;
use anyhow::{anyhow, Context, Result};
use faultline_tasks::{DecisionSet, TaskKind};
use std::path::PathBuf;

pub(super) async fn record(args: RecordArgs) -> Result<()> {
    if !matches!(args.agent.as_str(), "oracle" | "openai") {
        return Err(usage(anyhow!(
            "--agent: unknown agent `{}` (available: oracle, openai)",
            args.agent
        )));
    }
    let tasks: Vec<TaskKind> = if args.tasks.is_empty() {
        TaskKind::ALL.to_vec()
    } else {
        args.tasks
            .iter()
            .map(|t| {
                t.parse()
                    .map_err(|e: String| usage(anyhow!("--tasks: {e}")))
            })
            .collect::<Result<_>>()?
    };
    let overrides = Overrides {
        seed: Some(args.seed),
        layouts: Some(args.layouts),
        jobs: None,
        faults: None,
        isolation: None,
    };
    let config = config::resolve(
        &config::load_text(args.config.as_deref()).map_err(usage)?,
        &overrides,
    )
    .map_err(usage)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| match args.agent.as_str() {
            "openai" => PathBuf::from("results").join(format!(
                "decisions-{}",
                config
                    .openai
                    .model
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                        c
                    } else {
                        '_'
                    })
                    .collect::<String>()
            )),
            _ => PathBuf::from("tasks/decisions"),
        });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let agent = match args.agent.as_str() {
        "openai" => Some(crate::experiment::build_agent("openai", &config, &out)?),
        _ => None,
    };
    let source = format!("model:{}", config.openai.model);
    let harness = Harness::start(&config).await?;
    let result = async {
        for task in tasks {
            let mut set = DecisionSet::default();
            let mut rejected = Vec::new();
            for index in 0..args.layouts {
                match &agent {
                    None => set.decisions.push(
                        crate::experiment::record::record_oracle(
                            &harness.env,
                            args.seed,
                            task,
                            index,
                        )
                        .await?,
                    ),
                    Some(agent) => match crate::experiment::record::record_with_agent(
                        &harness.env,
                        agent.as_ref(),
                        &source,
                        args.seed,
                        task,
                        index,
                    )
                    .await?
                    {
                        crate::experiment::record::Recorded::Kept(d) => set.decisions.push(d),
                        crate::experiment::record::Recorded::Rejected(why) => {
                            rejected.push((index, why))
                        }
                    },
                }
            }
            let path = out.join(format!("{task}.jsonl"));
            std::fs::write(&path, set.to_jsonl())
                .with_context(|| format!("writing {}", path.display()))?;
            println!(
                "{}: {} decisions kept, all verified on a clean page; {} rejected",
                path.display(),
                set.decisions.len(),
                rejected.len()
            );
            for (index, why) in rejected {
                println!("  layout {index}: {why}");
            }
        }
        Ok::<_, anyhow::Error>(())
    }
    .await;
    harness.shutdown().await;
    result
}
