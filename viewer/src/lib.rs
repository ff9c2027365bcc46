//! faultline's trace viewer: a static site over one run, opened straight from disk.
//!
//! `faultline view RUN [--out DIR]` (and every `faultline run`, beside `report.md`) writes
//! `view/index.html` and everything it needs. The site reads nothing but its own files
//! and the run's screenshots and plots; there is no server, no network, no font download,
//! no build step and no framework.
//!
//! # Why `file://`
//!
//! A run directory is an artefact: it gets copied, archived and attached to reviews. A
//! viewer that needs a server stops working the moment the directory leaves the machine
//! that made it; pages that open from disk keep working anywhere a browser does. The
//! price is that Chromium forbids `fetch()` and `XMLHttpRequest` of `file://` URLs, so
//! data cannot be loaded as JSON files. Instead every data file is a script,
//! `faultlineData(<JSON>);`, loaded on demand by adding a `<script>` tag: the argument is
//! plain JSON (one object with a `kind`), so other tools read the files by stripping the
//! call around it.
//!
//! # Data model
//!
//! - `data/index.js` (`kind: "index"`): the run's policies, image and viewport sizes,
//!   recovery budget, and one small summary row per trial and per episode (what the
//!   browser filters, sorts and counts: task, fault, layer, every policy's verdict and
//!   outcome — caught, missed, false alarm, correct, unconfirmed, not fired —, recovered,
//!   stop reason, a thumbnail).
//! - `data/trials/<id>.js` (`kind: "trial"`): one trial in full: the reply, the parsed and
//!   executed actions, the points to draw over the screenshots (image pixels), the
//!   witness, the tool message, every policy's verdict and message with its outcome, the
//!   ledger's truth, evidence, ledger snapshot and timing.
//! - `data/episodes/<id>.js` (`kind: "episode"`): one episode and every step of its
//!   transcript, with the budget left after each step and the screenshot each step acted
//!   on.
//!
//! The run page loads only the index (about 0.5 MB for a catalogue-sized run of 1,000
//! trials and 400 episodes) and pages its table, with thumbnails loaded lazily; a trial
//! or episode page loads the index and its own file. The JSON shapes are documented in
//! `results/README.md`.
//!
//! # File layout
//!
//! ```text
//! view/
//!   index.html            run page: manifest, headline tables (from the run's CSVs), plots,
//!                         trial and episode browser (filters kept in the URL hash)
//!   trial.html            trial page   (trial.html#<id>, optionally &a=<policy>&b=<policy>)
//!   episode.html          episode page (episode.html#<id>)
//!   assets/viewer.css, assets/viewer.js
//!   data/index.js, data/trials/<id>.js, data/episodes/<id>.js
//!   thumbs/<content hash>.png   240 px wide list thumbnails, named by the source's SHA-256
//! ```
//!
//! Screenshots and plots are referenced where they are (`../shots/…`, `../plots/…`) when
//! the view sits inside the run directory (the default: no second copy of a run's
//! screenshots), and placed beside the view otherwise (`run/shots/…`): hard-linked when
//! the view is on the run's filesystem, copied only when it is not.
//!
//! # Determinism
//!
//! Rows are in key order, objects have a fixed field order, nothing records a time or an
//! absolute path, and thumbnails are a pure function of their source: generating the
//! view of the same run twice gives byte-identical files.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod csv;
mod html;
mod model;

pub use model::{episode_id, trial_id, FORMAT};

use anyhow::{Context, Result};
use faultline_analysis::db::ResultsDb;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Width of list thumbnails, in pixels.
pub const THUMB_WIDTH: u32 = 240;

/// What [`generate`] wrote.
#[derive(Debug, Clone)]
pub struct ViewSummary {
    /// `index.html`, the page to open.
    pub index: PathBuf,
    /// How many trials were written (one `data/trials/<id>.js` each).
    pub trials: usize,
    /// How many episodes were written (one `data/episodes/<id>.js` each).
    pub episodes: usize,
    /// Thumbnails made this time (the rest were already there, unchanged).
    pub thumbs_made: usize,
}

/// Writes the view of the run in `run_dir` (its `results.sqlite`, CSVs, plots and shots)
/// into `out` (conventionally `run_dir/view`).
pub fn generate(run_dir: &Path, out: &Path) -> Result<ViewSummary> {
    // A report swap a kill interrupted is finished first: never a mixed set of tables.
    faultline_analysis::report::swap::settle(run_dir)?;
    let db = ResultsDb::open_read_only(&run_dir.join("results.sqlite"))?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let prefix = relative_prefix(run_dir, out);
    let run = model::Run::load(&db)?;

    // Files of the run the pages refer to: copied when the view is outside the run.
    let mut assets = Assets {
        run_dir: run_dir.to_path_buf(),
        out: out.to_path_buf(),
        prefix,
        copied: BTreeMap::new(),
    };

    let mut thumbs = Thumbs::default();
    let index = model::index(&db, &run, &mut assets, &mut thumbs)?;
    let trials_dir = out.join("data/trials");
    let episodes_dir = out.join("data/episodes");
    std::fs::create_dir_all(&trials_dir)?;
    std::fs::create_dir_all(&episodes_dir)?;

    let verdicts = db.verdicts()?;
    let mut by_trial: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for v in verdicts {
        by_trial.entry(v.trial_key.clone()).or_default().push(v);
    }
    let trials = db.trials()?;
    for t in &trials {
        let vs = by_trial.remove(&t.trial_key).unwrap_or_default();
        let data = model::trial(t, &vs, &run, &mut assets)?;
        write_data(
            &trials_dir.join(format!("{}.js", trial_id(&t.trial_key))),
            &data,
        )?;
    }
    let episodes = db.episodes()?;
    for e in &episodes {
        let steps = db.episode_steps(&e.episode_key)?;
        let data = model::episode(e, &steps, &run, &mut assets)?;
        write_data(
            &episodes_dir.join(format!("{}.js", episode_id(&e.episode_key))),
            &data,
        )?;
    }
    write_data(&out.join("data/index.js"), &index)?;

    let tables = html::tables(run_dir);
    let plots = plot_files(run_dir);
    let plots: Vec<(String, String)> = plots
        .iter()
        .map(|p| (p.clone(), assets.link(&format!("plots/{p}"))))
        .collect();
    write_if_changed(
        &out.join("index.html"),
        html::index_page(&run, &tables, &plots).as_bytes(),
    )?;
    write_if_changed(&out.join("trial.html"), html::trial_page().as_bytes())?;
    write_if_changed(&out.join("episode.html"), html::episode_page().as_bytes())?;
    std::fs::create_dir_all(out.join("assets"))?;
    write_if_changed(
        &out.join("assets/viewer.css"),
        include_str!("assets/viewer.css").as_bytes(),
    )?;
    write_if_changed(
        &out.join("assets/viewer.js"),
        include_str!("assets/viewer.js").as_bytes(),
    )?;
    assets.copy_all()?;
    let thumbs_made = thumbs.make_all(&out.join("thumbs"))?;
    Ok(ViewSummary {
        index: out.join("index.html"),
        trials: trials.len(),
        episodes: episodes.len(),
        thumbs_made,
    })
}

/// The SVG plots of the run, by name.
fn plot_files(run_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(run_dir.join("plots"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".svg"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `Some("../")` (one per level) when `out` lies inside `run_dir`, so the run's files
/// can be referenced in place; `None` when they must be copied.
fn relative_prefix(run_dir: &Path, out: &Path) -> Option<String> {
    let run = std::fs::canonicalize(run_dir).ok()?;
    let out = std::fs::canonicalize(out).ok()?;
    let rest = out.strip_prefix(&run).ok()?;
    let depth = rest
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    // The view must not be the run directory itself, or it would overwrite nothing but
    // could shadow the run's own files; one level down is the convention.
    (depth > 0).then(|| "../".repeat(depth))
}

/// The run's files the pages link to (screenshots, plots).
pub(crate) struct Assets {
    run_dir: PathBuf,
    out: PathBuf,
    prefix: Option<String>,
    /// Relative path in the run -> relative path in the view, when copying.
    copied: BTreeMap<String, String>,
}

impl Assets {
    /// The link (relative to the view's pages) to `rel`, a path relative to the run dir.
    pub(crate) fn link(&mut self, rel: &str) -> String {
        match &self.prefix {
            Some(p) => format!("{p}{rel}"),
            None => {
                let dest = format!("run/{rel}");
                self.copied.insert(rel.to_string(), dest.clone());
                dest
            }
        }
    }

    /// Whether the run holds `rel`.
    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.run_dir.join(rel).is_file()
    }

    pub(crate) fn source(&self, rel: &str) -> PathBuf {
        self.run_dir.join(rel)
    }

    fn copy_all(&self) -> Result<()> {
        for (rel, dest) in &self.copied {
            let src = self.run_dir.join(rel);
            if !src.is_file() {
                continue;
            }
            let dst = self.out.join(dest);
            if let Some(parent) = dst.parent() {
                std::fs::create_dir_all(parent)?;
            }
            place(&src, &dst)?;
        }
        Ok(())
    }
}

/// Puts the run's file `src` at `dst` in a view outside the run without a second copy
/// where it can: a hard link when both are on one filesystem, a copy only otherwise.
/// A `dst` that already is `src` is left alone.
fn place(src: &Path, dst: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(s), Ok(d)) = (std::fs::metadata(src), std::fs::metadata(dst)) {
        if (s.dev(), s.ino()) == (d.dev(), d.ino()) {
            return Ok(());
        }
    }
    // Replaced, never written through: an older `dst` may itself be a link to a file of
    // some run.
    match std::fs::remove_file(dst) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("replacing {}", dst.display()))
        }
        _ => {}
    }
    if std::fs::hard_link(src, dst).is_ok() {
        return Ok(());
    }
    let bytes = std::fs::read(src).with_context(|| format!("reading {}", src.display()))?;
    std::fs::write(dst, bytes).with_context(|| format!("writing {}", dst.display()))
}

/// Thumbnails to make: source file -> thumbnail file name (content-addressed).
#[derive(Default)]
pub(crate) struct Thumbs {
    wanted: BTreeMap<String, PathBuf>,
}

impl Thumbs {
    /// The thumbnail link (relative to the pages) for the screenshot at `src`, or `None`
    /// when it cannot be read.
    pub(crate) fn request(&mut self, src: &Path) -> Option<String> {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(src).ok()?;
        let name = format!("{}.png", &hex::encode(Sha256::digest(&bytes))[..20]);
        self.wanted.insert(name.clone(), src.to_path_buf());
        Some(format!("thumbs/{name}"))
    }

    /// Makes the missing thumbnails (in parallel); returns how many were made.
    fn make_all(&self, dir: &Path) -> Result<usize> {
        std::fs::create_dir_all(dir)?;
        let todo: Vec<(&String, &PathBuf)> = self
            .wanted
            .iter()
            .filter(|(name, _)| !dir.join(name).is_file())
            .collect();
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(todo.len().max(1));
        let chunk = todo.len().div_ceil(workers).max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = todo
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || -> Result<()> {
                        for (name, src) in part {
                            thumbnail(src, &dir.join(name))?;
                        }
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join()
                    .map_err(|_| anyhow::anyhow!("thumbnail worker panicked"))??;
            }
            Ok::<_, anyhow::Error>(())
        })?;
        Ok(todo.len())
    }
}

fn thumbnail(src: &Path, dst: &Path) -> Result<()> {
    let img = image::open(src).with_context(|| format!("reading {}", src.display()))?;
    let (w, h) = (img.width().max(1), img.height().max(1));
    let th = ((h as u64 * THUMB_WIDTH as u64) / w as u64).max(1) as u32;
    // Area averaging (`thumbnail`): as sharp as a triangle filter at this ratio, and
    // several times faster.
    let small = img.thumbnail_exact(THUMB_WIDTH, th);
    let tmp = dst.with_extension("tmp");
    small
        .to_rgb8()
        .save_with_format(&tmp, image::ImageFormat::Png)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, dst)?;
    Ok(())
}

fn write_data(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let json = serde_json::to_string(value)?;
    write_if_changed(path, format!("faultlineData({json});\n").as_bytes())
}

/// Writes `bytes` unless the file already holds exactly them (so a regenerated view
/// leaves unchanged files untouched).
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).map(|b| b == bytes).unwrap_or(false) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_inside_the_run_link_in_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("view/deep")).unwrap();
        let other = tempfile::tempdir().unwrap();
        assert_eq!(
            relative_prefix(dir.path(), &dir.path().join("view")).as_deref(),
            Some("../")
        );
        assert_eq!(
            relative_prefix(dir.path(), &dir.path().join("view/deep")).as_deref(),
            Some("../../")
        );
        assert_eq!(relative_prefix(dir.path(), other.path()), None);
        assert_eq!(relative_prefix(dir.path(), dir.path()), None);
    }
}
