//! `faultline import`: turns another agent's trajectory into decisions that replay like
//! recorded ones.

use super::ImportArgs;
use crate::error::usage;
use anyhow::{anyhow, Context, Result};
use faultline_tasks::TaskKind;
use std::io::Write as _;
use std::path::PathBuf;

/// Parses a screenshot size `WxH` (for example `960x640`), each side from 1 to
/// [`faultline_tasks::layout::MAX_IMAGE_SIDE`].
pub(super) fn parse_size(s: &str) -> Option<faultline_tasks::Size> {
    use faultline_tasks::layout::MAX_IMAGE_SIDE;
    let (w, h) = s.split_once(['x', 'X'])?;
    let (w, h) = (w.trim().parse().ok()?, h.trim().parse().ok()?);
    let side = 1..=MAX_IMAGE_SIDE;
    (side.contains(&w) && side.contains(&h)).then_some(faultline_tasks::Size::new(w, h))
}

pub(super) fn import(args: ImportArgs) -> Result<()> {
    use faultline_tasks::formats::trajectory::{self, ImportOptions};
    use faultline_tasks::{ActionFormat, CoordinateSpace};
    let format: ActionFormat = args
        .format
        .parse()
        .map_err(|e: String| usage(anyhow!("--format: {e}")))?;
    let task: TaskKind = args
        .task
        .parse()
        .map_err(|e: String| usage(anyhow!("--task: {e}")))?;
    let image = match &args.image {
        Some(s) => Some(parse_size(s).ok_or_else(|| {
            usage(anyhow!(
                "--image: expected WxH with both from 1 to {} (e.g. 960x640), found `{s}`",
                faultline_tasks::layout::MAX_IMAGE_SIDE
            ))
        })?),
        None => None,
    };
    let space = match &args.space {
        Some(s) => {
            let space: CoordinateSpace = s
                .parse()
                .map_err(|e: String| usage(anyhow!("--space: {e}")))?;
            if !format.allows(space) {
                return Err(usage(anyhow!(
                    "--space: expected {} for the {format} format, found {space}",
                    format.default_space()
                )));
            }
            Some(space)
        }
        None => None,
    };
    let name = args.file.display().to_string();
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| usage(anyhow!("{name}: cannot read: {e}")))?;
    let set = trajectory::import(
        &name,
        &text,
        &ImportOptions {
            format,
            task,
            root_seed: args.seed,
            image,
            space,
        },
    )
    .map_err(|e| usage(anyhow!(e)))?;
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from("results")
            .join(format!("import-{format}"))
            .join(format!("{task}.jsonl"))
    });
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut file =
        std::fs::File::create(&out).with_context(|| format!("writing {}", out.display()))?;
    for d in &set.decisions {
        let mut line = serde_json::to_string(d)?;
        line.push('\n');
        file.write_all(line.as_bytes())
            .with_context(|| format!("writing {}", out.display()))?;
    }
    println!(
        "{}: {} {task} decisions imported from {name} ({format}); replay them with `decisions = \"{}\"` in a config",
        out.display(),
        set.decisions.len(),
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_w_x_h() {
        assert_eq!(
            parse_size("960x640"),
            Some(faultline_tasks::Size::new(960, 640))
        );
        assert_eq!(parse_size("0x640"), None);
        assert_eq!(parse_size("960"), None);
    }

    #[test]
    fn regression_an_absurd_image_size_flag_is_refused() {
        assert_eq!(
            parse_size("16384x16384"),
            Some(faultline_tasks::Size::new(16384, 16384))
        );
        assert_eq!(parse_size("16385x640"), None);
        assert_eq!(parse_size("960x4294967295"), None);
    }
}
