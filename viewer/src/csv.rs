//! A minimal reader for the CSVs the report writes (RFC 4180 quoting).

/// Parses `text` into rows of fields; a trailing newline ends the last row.
pub(crate) fn parse(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoted_fields_keep_commas_and_quotes() {
        let rows = super::parse("a,b\n1,\"x, \"\"y\"\"\"\n2,\n");
        assert_eq!(
            rows,
            vec![
                vec!["a".to_string(), "b".into()],
                vec!["1".into(), "x, \"y\"".into()],
                vec!["2".into(), "".into()],
            ]
        );
    }
}
