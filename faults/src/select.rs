//! Fault selectors, as given to `faultline run --faults` and a config's `faults` list.
//!
//! | selector | selects |
//! |---|---|
//! | `overlay.cookie_banner` | that fault |
//! | `overlay.*`, `*.token_leak`, `*` | ids matching the glob (`*` matches any run of characters) |
//! | `layer:transport` | every fault of a layer |
//! | `stage:observe` | every fault acting at a stage |
//! | `reference` | the four reference stage faults of the design brief |
//! | `all` | the whole catalogue |
//!
//! The result is in catalogue order without duplicates, so `["overlay.*", "all"]` and
//! `["all"]` select the same experiment. A selector that matches nothing is an error
//! that lists the closest ids (or layers), because a typo that silently selects nothing
//! would quietly shrink an experiment.

use crate::catalogue::{suggestions, Fault, Layer, Stage};
use crate::suggest::closest;

/// Resolves selectors to faults, in catalogue order.
pub fn select<S: AsRef<str>>(selectors: &[S]) -> Result<Vec<Fault>, String> {
    let mut chosen: Vec<Fault> = Vec::new();
    for sel in selectors {
        let sel = sel.as_ref().trim();
        let matched = select_one(sel)?;
        if matched.is_empty() {
            return Err(format!(
                "`{sel}` matches no fault{}",
                suggestions(sel.trim_end_matches('*').trim_end_matches('.'))
            ));
        }
        for f in matched {
            if !chosen.contains(&f) {
                chosen.push(f);
            }
        }
    }
    chosen.sort_by_key(|f| {
        (
            f.layer().rank(),
            Fault::ALL.iter().position(|g| g == f).unwrap_or(usize::MAX),
        )
    });
    Ok(chosen)
}

fn select_one(sel: &str) -> Result<Vec<Fault>, String> {
    if sel.is_empty() {
        return Err("an empty fault selector (expected an id, a glob such as `overlay.*`, `layer:NAME`, `stage:NAME`, `reference` or `all`)".into());
    }
    if sel == "all" {
        return Ok(Fault::ALL.to_vec());
    }
    if sel == "reference" {
        return Ok(Fault::STAGE.to_vec());
    }
    if let Some(layer) = sel.strip_prefix("layer:") {
        let layer: Layer = layer.parse().map_err(|e: String| {
            let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
            match closest(layer, &names) {
                Some(c) => format!("{e}; did you mean `layer:{c}`?"),
                None => e,
            }
        })?;
        return Ok(Fault::ALL
            .iter()
            .copied()
            .filter(|f| f.layer() == layer)
            .collect());
    }
    if let Some(stage) = sel.strip_prefix("stage:") {
        let stage: Stage = stage.parse()?;
        return Ok(Fault::ALL
            .iter()
            .copied()
            .filter(|f| f.stage() == stage)
            .collect());
    }
    if sel.contains('*') {
        return Ok(Fault::ALL
            .iter()
            .copied()
            .filter(|f| glob(sel, f.id()))
            .collect());
    }
    match sel.parse::<Fault>() {
        Ok(f) => Ok(vec![f]),
        Err(e) => Err(e),
    }
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(pos) => rest = &rest[pos + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn selectors_by_id_glob_layer_stage_and_name() {
        assert_eq!(
            select(&["parse.token_leak"]).unwrap(),
            vec![Fault::TokenLeak]
        );
        assert_eq!(select(&["reference"]).unwrap().len(), 4);
        assert_eq!(select(&["all"]).unwrap().len(), Fault::ALL.len());
        assert_eq!(
            select(&["*.token_leak", "parse.*"]).unwrap(),
            vec![Fault::TokenLeak],
            "duplicates collapse"
        );
        let tool = select(&["layer:tool"]).unwrap();
        assert!(tool.contains(&Fault::IframeNoChange));
        assert!(tool.iter().all(|f| f.layer() == Layer::Tool));
        assert_eq!(
            select(&["stage:observe"]).unwrap()[0].stage(),
            Stage::Observe
        );
        // Catalogue order whatever the selector order.
        let all = select(&["all"]).unwrap();
        let mut reversed: Vec<String> = all.iter().rev().map(|f| f.id().to_string()).collect();
        reversed.push("all".into());
        assert_eq!(select(&reversed).unwrap(), all);
    }

    #[test]
    fn bad_selectors_name_close_matches() {
        let e = select(&["parse.tokn_leak"]).unwrap_err();
        assert!(e.contains("unknown fault `parse.tokn_leak`"), "{e}");
        assert!(e.contains("`parse.token_leak`"), "{e}");
        let e = select(&["layer:transprt"]).unwrap_err();
        assert!(e.contains("did you mean `layer:transport`"), "{e}");
        let e = select(&["nothing.*"]).unwrap_err();
        assert!(e.contains("matches no fault"), "{e}");
        assert!(select(&[""]).is_err());
        assert!(select(&["stage:render"])
            .unwrap_err()
            .contains("unknown stage"));
    }

    #[test]
    fn globs_match_like_a_shell() {
        assert!(glob("overlay.*", "overlay.cookie_banner"));
        assert!(!glob("overlay.*", "layout.shift"));
        assert!(glob("*", "a.b"));
        assert!(glob("*.b*", "a.bc"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("a*c*e", "abde"));
        assert!(!glob("ab*ba", "aba"), "prefix and suffix may not overlap");
    }

    proptest! {
        #[test]
        fn a_star_glob_matches_every_text_with_its_prefix(prefix in "[a-z.]{0,6}", rest in "[a-z._]{0,10}") {
            let text = format!("{prefix}{rest}");
            let pattern = format!("{prefix}*");
            prop_assert!(glob(&pattern, &text));
        }

        #[test]
        fn selecting_never_panics(s in "\\PC{0,30}") {
            let _ = select(&[s]);
        }
    }
}
