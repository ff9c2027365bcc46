//! Close matches for a mistyped name: what a "did you mean" message offers.

pub(crate) fn closest<'a>(s: &str, names: &[&'a str]) -> Option<&'a str> {
    close_matches(s, names, 1).into_iter().next()
}

/// Up to `n` names close to `s`: those containing it, and those within an edit distance
/// of a third of their length (at least 2), nearest first.
pub(crate) fn close_matches<'a>(s: &str, names: &[&'a str], n: usize) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &'a str)> = names
        .iter()
        .filter_map(|name| {
            let full = edit_distance(s, name);
            // Compare with the part after the prefix too, so `cookie_baner` finds
            // `overlay.cookie_banner`.
            let tail = name
                .split_once('.')
                .map_or(usize::MAX, |(_, t)| edit_distance(s, t));
            let d = full.min(tail);
            let limit = (name.len() / 3).max(2);
            let contains = !s.is_empty() && s.len() >= 3 && name.contains(s);
            (d <= limit || contains).then_some((if contains { 0 } else { d }, *name))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(n).map(|(_, name)| name).collect()
}

/// Levenshtein distance over characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_insertions_deletions_and_substitutions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(
            close_matches(
                "cookie_baner",
                &["overlay.cookie_banner", "overlay.modal"],
                5
            ),
            vec!["overlay.cookie_banner"]
        );
    }
}
