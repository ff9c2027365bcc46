//! JSON-lines files that survive a crash: the run's recorded decisions and the model
//! cassette.
//!
//! Every append is a single write of one whole line, text and newline together, so a
//! crash (SIGKILL, power loss, a full disk) can only leave a *torn last line*: bytes
//! after the final newline that do not parse. Such a tail was never a finished record;
//! [`repair_torn_tail`] cuts it off before the file is read or appended to, so the next
//! line does not glue onto it and a resumed run neither fails nor loses a finished line.
//! A last line that parses but lacks its newline (a hand-edited file) is kept and given
//! its newline.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::Path;

/// Appends `line` and its newline in one write, then flushes.
pub fn append_line(file: &mut File, line: &str) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    file.write_all(&bytes)?;
    file.flush()
}

/// What [`repair_torn_tail`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// The file ended with a newline (or was empty, or missing): nothing to do.
    Clean,
    /// The last line parsed but had no newline: one was added.
    NewlineAdded,
    /// The last line did not parse and had no newline: it was cut off (its bytes).
    TornLineDropped(Vec<u8>),
}

/// Cuts a torn last line off `path` (see the module docs); `parses` says whether a line
/// is a whole record.
pub fn repair_torn_tail(path: &Path, parses: impl Fn(&str) -> bool) -> std::io::Result<Repair> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Repair::Clean),
        Err(e) => return Err(e),
    };
    if bytes.is_empty() || bytes.last() == Some(&b'\n') {
        return Ok(Repair::Clean);
    }
    let start = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let tail = &bytes[start..];
    let whole = std::str::from_utf8(tail).is_ok_and(|t| t.trim().is_empty() || parses(t));
    if whole {
        OpenOptions::new()
            .append(true)
            .open(path)?
            .write_all(b"\n")?;
        return Ok(Repair::NewlineAdded);
    }
    let file = OpenOptions::new().write(true).open(path)?;
    file.set_len(start as u64)?;
    file.sync_all()?;
    Ok(Repair::TornLineDropped(tail.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(line: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(line).is_ok()
    }

    #[test]
    fn a_torn_last_line_is_cut_off_and_the_next_append_starts_clean() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"b\":2}\n{\"c\":").unwrap();
        assert_eq!(
            repair_torn_tail(&path, json).unwrap(),
            Repair::TornLineDropped(b"{\"c\":".to_vec())
        );
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        append_line(&mut f, "{\"d\":4}").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n{\"d\":4}\n"
        );
    }

    #[test]
    fn a_whole_last_line_without_newline_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"b\":2}").unwrap();
        assert_eq!(repair_torn_tail(&path, json).unwrap(), Repair::NewlineAdded);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n"
        );
        assert_eq!(repair_torn_tail(&path, json).unwrap(), Repair::Clean);
        assert_eq!(
            repair_torn_tail(&dir.path().join("missing"), json).unwrap(),
            Repair::Clean
        );
    }

    #[test]
    fn a_file_that_is_only_a_torn_line_becomes_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        std::fs::write(&path, "{\"sch").unwrap();
        assert!(matches!(
            repair_torn_tail(&path, json).unwrap(),
            Repair::TornLineDropped(_)
        ));
        assert_eq!(std::fs::read(&path).unwrap(), b"");
    }
}
