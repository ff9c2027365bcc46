//! The catalogue's invariants: unique stable ids, every layer and task covered, the
//! MiniWoB++ suite followed.

use super::*;
use faultline_tasks::{MiniwobTask, TaskKind};
use std::collections::BTreeSet;

#[test]
fn ids_are_unique_stable_and_round_trip() {
    let ids: BTreeSet<&str> = Fault::ALL.iter().map(|f| f.id()).collect();
    assert_eq!(ids.len(), Fault::ALL.len(), "duplicate ids");
    for f in Fault::ALL {
        assert_eq!(f.id().parse::<Fault>().unwrap(), *f);
        assert_eq!(serde_json::to_string(f).unwrap(), format!("\"{}\"", f.id()));
        let (prefix, name) = f.id().split_once('.').expect("ids are prefix.name");
        assert!(!name.is_empty() && !name.contains('.'), "{}", f.id());
        if Fault::STAGE.contains(f) {
            assert_eq!(prefix, f.stage().name(), "{}", f.id());
        } else {
            assert_eq!(prefix, f.layer().name(), "{}", f.id());
        }
        assert!(!f.tasks().is_empty(), "{} applies to no task", f.id());
        let s = f.spec();
        for text in [
            s.description,
            s.injection,
            s.parameters,
            s.witness,
            s.implies,
            s.not_fired_when,
        ] {
            assert!(!text.is_empty(), "{} has an empty field", f.id());
        }
    }
    assert!("parse.nope".parse::<Fault>().is_err());
}

#[test]
fn every_layer_has_at_least_two_faults_and_every_task_some() {
    for layer in Layer::ALL {
        let n = Fault::ALL.iter().filter(|f| f.layer() == layer).count();
        assert!(n >= 2, "layer {layer} has {n} fault(s)");
    }
    for task in TaskKind::ALL {
        assert!(Fault::ALL.iter().any(|f| f.applies_to(task)), "{task}");
    }
}

#[test]
fn every_fault_applies_to_the_miniwob_suite_or_says_why_not() {
    for f in Fault::ALL {
        let applies = f.tasks().iter().any(|t| t.miniwob_name().is_some());
        assert_eq!(
            f.miniwob_not_applicable().is_none(),
            applies,
            "{f}: applies to a MiniWoB++ task = {applies}, reason = {:?}",
            f.miniwob_not_applicable()
        );
    }
}

#[test]
fn suite_task_lists_follow_the_suite_and_its_properties() {
    use MiniwobTask as W;
    let miniwob =
        |f: Fault| -> Vec<MiniwobTask> { f.tasks().iter().filter_map(|t| t.miniwob()).collect() };
    assert_eq!(
        miniwob(Fault::TokenLeak),
        [
            W::EnterText,
            W::LoginUser,
            W::LoginUserPopup,
            W::UseAutocomplete,
            W::SearchEngine
        ]
    );
    assert_eq!(
        miniwob(Fault::CaptureBeforeSettled),
        [W::UseAutocomplete, W::ClickCollapsible]
    );
    assert_eq!(miniwob(Fault::CookieBanner), MiniwobTask::ALL);
    assert_eq!(
        Fault::Modal.tasks()[..4],
        [
            TaskKind::Grid,
            TaskKind::Frame,
            TaskKind::Chart,
            TaskKind::MINIWOB[0]
        ]
    );
}

#[test]
fn every_task_has_one_reference_stage_fault() {
    for task in TaskKind::REFERENCE {
        let f = Fault::reference_for(task).unwrap();
        assert!(Fault::STAGE.contains(&f));
    }
    let stages: BTreeSet<Stage> = Fault::STAGE.iter().map(|f| f.stage()).collect();
    assert_eq!(stages.len(), 4, "one reference fault per stage");
}

#[test]
fn layers_parse_by_name() {
    for l in Layer::ALL {
        assert_eq!(l.name().parse::<Layer>().unwrap(), l);
    }
    assert!("transprt".parse::<Layer>().is_err());
}

#[test]
fn a_fault_that_says_it_draws_no_parameter_does_the_same_under_any_seed() {
    // The seed reaches a fault only through what it injects into the site and what it
    // changes before the action: both must ignore it when the entry says "none".
    let viewport = faultline_tasks::Size::new(1200, 800);
    let mut drawing = 0;
    for &fault in Fault::ALL.iter() {
        for &task in fault.tasks() {
            let layout = faultline_tasks::Layout::for_root(1, task, 0);
            let (a, b) = (
                crate::FaultPlan::new(fault, 1),
                crate::FaultPlan::new(fault, 2),
            );
            let same = a.site(&layout) == b.site(&layout)
                && a.before_act(viewport, &layout) == b.before_act(viewport, &layout);
            if !fault.draws_parameters() {
                assert!(same, "{} on {task}: said none, differs by seed", fault.id());
            } else if !same {
                drawing += 1;
            }
        }
    }
    assert!(
        drawing > 0,
        "no fault that draws a parameter differed by seed"
    );
}

#[test]
fn every_fault_names_its_source() {
    let filled = |field: &str, text: &str, f: Fault| {
        assert!(
            !text.trim().is_empty(),
            "{}: an empty {field} in its source",
            f.id()
        );
        assert_eq!(text, text.trim(), "{}: {field} has stray spaces", f.id());
    };
    let mut urls = BTreeSet::new();
    for &f in Fault::ALL {
        match f.spec().source {
            Source::Report { title, url } => {
                filled("title", title, f);
                assert!(
                    well_formed_https(url),
                    "{}: not an https URL: {url}",
                    f.id()
                );
                assert!(urls.insert(url), "{}: {url} is cited twice", f.id());
            }
            Source::Paper { title, section } => {
                filled("title", title, f);
                filled("section", section, f);
            }
            Source::Standard { name, section } => {
                filled("name", name, f);
                filled("section", section, f);
            }
            Source::ReferenceExperiment { section } => {
                filled("section", section, f);
                assert!(
                    Fault::STAGE.contains(&f),
                    "{}: only the reference stage faults come from the reference experiment",
                    f.id()
                );
            }
            Source::DesignedHere { reason } => {
                filled("reason", reason, f);
                assert!(
                    is_a_sentence(reason),
                    "{}: not a sentence: {reason}",
                    f.id()
                );
            }
        }
    }
    for f in Fault::STAGE {
        assert!(
            matches!(f.spec().source, Source::ReferenceExperiment { .. }),
            "{}: a reference stage fault cites the reference experiment",
            f.id()
        );
    }
}

/// `https://host/path`: the scheme, a dotted host of letters, digits and dashes, and no
/// spaces or characters that would break a Markdown link.
fn well_formed_https(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let host = rest.split('/').next().unwrap_or("");
    let host_ok = host.contains('.')
        && host
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    let path_ok = !rest
        .chars()
        .any(|c| c.is_whitespace() || "()<>\"'`[]".contains(c));
    host_ok && path_ok
}

/// A reason is a real sentence: a capital letter first, a full stop last, several words,
/// and no placeholder.
fn is_a_sentence(text: &str) -> bool {
    let lower = text.to_lowercase();
    let placeholder = ["todo", "tbd", "fixme", "xxx", "placeholder", "lorem"]
        .iter()
        .any(|p| lower.split(|c: char| !c.is_alphanumeric()).any(|w| w == *p));
    text.chars().next().is_some_and(char::is_uppercase)
        && text.ends_with('.')
        && text.split_whitespace().count() >= 8
        && !placeholder
}

#[test]
fn the_source_checks_refuse_what_they_should() {
    assert!(well_formed_https("https://github.com/o/r/issues/1"));
    for bad in [
        "http://github.com/o/r/issues/1",
        "https://",
        "https://localhost/x",
        "https://github.com/o r",
        "github.com/o/r",
    ] {
        assert!(!well_formed_https(bad), "{bad}");
    }
    assert!(is_a_sentence(
        "A page that hangs blocks every input, so the harness must bound its waits."
    ));
    for bad in [
        "TODO",
        "todo: write the reason for this one later on please.",
        "designed here",
        "a lower-case start with no full stop at all here",
    ] {
        assert!(!is_a_sentence(bad), "{bad}");
    }
}

#[test]
fn the_readme_lists_every_fault_with_its_source() {
    let readme = include_str!("../../../README.md");
    for &f in Fault::ALL {
        let row = format!("| `{}` | {} |", f.id(), f.spec().source.markdown());
        assert!(readme.contains(&row), "README lacks the row\n{row}");
    }
}
