//! The model-call cassette (see the `openai` agent).
//!
//! A cassette is a JSONL file, one entry per line:
//!
//! ```text
//! {"key": "<sha256 hex>", "request": <canonical request>, "response": <raw response JSON>}
//! ```
//!
//! The key is the SHA-256 of the canonical request ([`canonical_request`] written by
//! [`canonical_json`]): object keys sorted, and every image data URL replaced by the
//! placeholder `"<image/png WxH>"`. Screenshots of the same page differ by a few
//! anti-aliased pixels between runs, so hashing them would make every replay a miss;
//! the text part of the request (instruction, step, budget, feedback, history and the
//! page's visible text) already pins what the step was about.
//!
//! That text never names the run (the agent is told paths, not the fixture server's
//! port or the session's scope: [`super::portable`]); the canonical request strips
//! them anyway ([`scrub_run_specifics`]), so a leak, or a cassette recorded before
//! they were kept out of prompts, still replays in another run directory. Entries are
//! looked up by the key of their request so scrubbed.
//!
//! A miss in `replay` mode is an `agent_endpoint` failure whose reason contains
//! [`REPLAY_MISS`]: the run counts them and fails ([`is_replay_miss`]).
//!
//! Only request *bodies* are stored: never the API key or any header.

use super::portable::scrub_run_specifics;
use faultline_tasks::Size;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

faultline_tasks::named_enum! {
    /// How a cassette answers a lookup.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum CassetteMode: "cassette mode" {
        /// Building a cassette: a hit is served from it (so the recorded run is exactly
        /// what a replay gives), a miss calls the model and appends the response.
        Record = "record",
        /// Offline: a hit is served, a miss is an error. No network call, ever.
        Replay = "replay",
        /// Development: the same lookups as `Record` (hit served, miss called and
        /// appended), for runs that are not meant to produce a cassette.
        Auto = "auto",
    }
}

impl CassetteMode {
    /// Whether a miss may call the model.
    pub fn calls_on_miss(self) -> bool {
        !matches!(self, CassetteMode::Replay)
    }
}

/// One line of a cassette file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteEntry {
    /// The SHA-256 (hex) of the canonical request.
    pub key: String,
    /// The canonical request (images replaced by placeholders), for reading the cassette.
    pub request: Value,
    /// The model's raw response JSON.
    pub response: Value,
}

/// Recorded model responses keyed by canonical request.
///
/// Safe to share between tasks (`Arc<Cassette>`): lookups and appends take a mutex, and
/// each append is written and flushed as one line before the lock is released.
#[derive(Debug)]
pub struct Cassette {
    mode: CassetteMode,
    path: Option<PathBuf>,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    responses: HashMap<String, Value>,
    file: Option<File>,
}

impl Cassette {
    /// Opens (or, unless replaying, creates) the cassette at `path` and loads its
    /// entries. A malformed line is an error naming `file:line`; a torn last line (a
    /// crash mid-append) is left out and said on stderr with its line; for duplicate keys
    /// the first entry wins.
    pub fn open(path: impl AsRef<Path>, mode: CassetteMode) -> Result<Cassette, String> {
        let path = path.as_ref();
        let mut responses = HashMap::new();
        // A crash while an entry was appended leaves a torn last line: never a finished
        // entry. When this cassette will be appended to, it is cut off the file; in
        // replay mode (the file is only read) it is skipped.
        let parses = |line: &str| serde_json::from_str::<CassetteEntry>(line).is_ok();
        let mut skip_torn_tail = false;
        let mut torn_bytes = None;
        if mode.calls_on_miss() {
            let repair = crate::jsonl::repair_torn_tail(path, parses)
                .map_err(|e| format!("cannot repair cassette {}: {e}", path.display()))?;
            if let crate::jsonl::Repair::TornLineDropped(bytes) = repair {
                torn_bytes = Some(bytes.len());
            }
        } else if let Ok(bytes) = std::fs::read(path) {
            let tail = bytes
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(&bytes[..], |i| &bytes[i + 1..]);
            skip_torn_tail = !tail.is_empty()
                && !std::str::from_utf8(tail).is_ok_and(|t| t.trim().is_empty() || parses(t));
            torn_bytes = skip_torn_tail.then_some(tail.len());
        }
        match File::open(path) {
            Ok(file) => {
                let lines: Vec<_> = BufReader::new(file).lines().collect();
                let keep = lines.len() - usize::from(skip_torn_tail && !lines.is_empty());
                // Said once, when the cassette is loaded: its request is then a miss
                // (recorded again, or an error in replay), which is otherwise a mystery.
                if let Some(bytes) = torn_bytes {
                    eprintln!(
                        "faultline: warning: {}:{}: ignored a torn last line ({bytes} bytes, cut by a crash while it was appended); its request is a miss",
                        path.display(),
                        keep + 1
                    );
                }
                for (index, line) in lines.into_iter().take(keep).enumerate() {
                    let at = format!("{}:{}", path.display(), index + 1);
                    let line = line.map_err(|e| format!("{at}: cannot read the line: {e}"))?;
                    if line.trim().is_empty() {
                        continue;
                    }
                    let entry: CassetteEntry = serde_json::from_str(&line).map_err(|e| {
                        format!(
                            "{at}: expected a JSON object {{\"key\", \"request\", \"response\"}}: {e}"
                        )
                    })?;
                    if !is_sha256_hex(&entry.key) {
                        return Err(format!(
                            "{at}: expected \"key\" to be a SHA-256 hex digest (64 lowercase hex digits), got {:?}",
                            entry.key
                        ));
                    }
                    let expected = request_key(&entry.request);
                    if entry.key != expected {
                        return Err(format!(
                            "{at}: \"key\" {} is not the SHA-256 of the canonical \"request\" ({expected}); was the line edited?",
                            entry.key
                        ));
                    }
                    // Indexed by what a lookup hashes now: an entry whose request
                    // still names its run (recorded before prompts were kept free
                    // of it) answers the same step of any other run.
                    let portable = request_key(&portable_request(&entry.request));
                    responses.entry(portable).or_insert(entry.response);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && mode.calls_on_miss() => {}
            Err(e) => return Err(format!("cannot open cassette {}: {e}", path.display())),
        }
        let file = if mode.calls_on_miss() {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    format!("cannot open cassette {} for appending: {e}", path.display())
                })?;
            Some(file)
        } else {
            None
        };
        Ok(Cassette {
            mode,
            path: Some(path.to_path_buf()),
            inner: Mutex::new(Inner { responses, file }),
        })
    }

    /// A cassette that lives only in memory (tests, one-off runs).
    pub fn in_memory(mode: CassetteMode) -> Cassette {
        Cassette {
            mode,
            path: None,
            inner: Mutex::new(Inner {
                responses: HashMap::new(),
                file: None,
            }),
        }
    }

    /// How this cassette answers a lookup.
    pub fn mode(&self) -> CassetteMode {
        self.mode
    }

    /// The backing file, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Where the cassette lives, for messages.
    pub fn describe(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => "<in-memory cassette>".to_string(),
        }
    }

    /// Distinct requests with a recorded response.
    pub fn len(&self) -> usize {
        self.lock().responses.len()
    }

    /// Whether no response is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The recorded response for `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.lock().responses.get(key).cloned()
    }

    /// Records `response` for the canonical `request` under `key`, appending one line to
    /// the file (flushed). If the key is already present the first entry is kept and
    /// nothing is written. Returns the response now stored for the key.
    pub fn insert(&self, key: &str, request: &Value, response: Value) -> Result<Value, String> {
        let mut inner = self.lock();
        if let Some(existing) = inner.responses.get(key) {
            return Ok(existing.clone());
        }
        if let Some(file) = inner.file.as_mut() {
            let entry = CassetteEntry {
                key: key.to_string(),
                request: request.clone(),
                response: response.clone(),
            };
            let line = serde_json::to_string(&entry)
                .map_err(|e| format!("cannot serialize a cassette entry: {e}"))?;
            let written = crate::jsonl::append_line(file, &line);
            written.map_err(|e| format!("cannot append to cassette {}: {e}", self.describe()))?;
        }
        inner.responses.insert(key.to_string(), response.clone());
        Ok(response)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-written map entry.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A file that was cut off mid-line (a crash during an append) would glue the next
/// entry onto the broken one; start a fresh line instead.
fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The image placeholder that stands for a screenshot in the canonical request.
pub fn image_placeholder(mime: &str, size: Size) -> String {
    format!("<{mime} {}x{}>", size.width, size.height)
}

/// The words every replay miss's error message carries.
pub const REPLAY_MISS: &str = "cassette replay miss";

/// Whether an `agent_endpoint` failure's reason is a cassette miss in `replay` mode.
pub fn is_replay_miss(reason: &str) -> bool {
    reason.contains(REPLAY_MISS)
}

/// `body` with every image data URL (`data:image/...`) replaced by
/// [`image_placeholder`] at `image` size, and every other string without what names
/// the run ([`scrub_run_specifics`]).
pub fn canonical_request(body: &Value, image: Size) -> Value {
    map_strings(body, &|s| match s.strip_prefix("data:") {
        Some(rest) if rest.starts_with("image/") => {
            let mime = rest.split([';', ',']).next().unwrap_or("image");
            image_placeholder(mime, image)
        }
        _ => scrub_run_specifics(s),
    })
}

/// A stored (already canonical) request with every string scrubbed of what names the
/// run: the same for a request recorded before prompts were kept free of it.
pub fn portable_request(request: &Value) -> Value {
    map_strings(request, &|s| scrub_run_specifics(s))
}

fn map_strings(value: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), map_strings(v, f)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// Compact JSON with object keys sorted (byte order) at every level, whatever map
/// type `serde_json` was built with.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                // Serializing a string or a scalar cannot fail.
                let _ = write!(out, "{}:", Value::String(key.clone()));
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        scalar => {
            let _ = write!(out, "{scalar}");
        }
    }
}

/// SHA-256 hex of the canonical JSON of an (already canonical) request.
pub fn request_key(canonical: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(canonical).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SIZE: Size = Size::new(800, 600);

    fn request(image_url: &str) -> Value {
        json!({
            "model": "m",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "click it"},
                {"type": "image_url", "image_url": {"url": image_url}},
            ]}],
        })
    }

    #[test]
    fn image_data_urls_become_a_sized_placeholder() {
        let canonical = canonical_request(&request("data:image/png;base64,iVBORw0KGgo="), SIZE);
        assert_eq!(
            canonical["messages"][0]["content"][1]["image_url"]["url"],
            json!("<image/png 800x600>")
        );
        assert_eq!(
            canonical["messages"][0]["content"][0]["text"],
            json!("click it")
        );
    }

    #[test]
    fn different_screenshots_of_the_same_step_share_a_key() {
        let a = canonical_request(&request("data:image/png;base64,AAAA"), SIZE);
        let b = canonical_request(&request("data:image/png;base64,BBBB"), SIZE);
        assert_eq!(request_key(&a), request_key(&b));
        let other_size = canonical_request(&request("data:image/png;base64,AAAA"), Size::new(1, 1));
        assert_ne!(request_key(&a), request_key(&other_size));
    }

    #[test]
    fn non_image_strings_are_untouched() {
        let v = json!({"a": "data:text/plain,hi", "b": "<image/png 1x1>"});
        assert_eq!(canonical_request(&v, SIZE), v);
    }

    fn prompt(text: &str) -> Value {
        json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]}]})
    }

    #[test]
    fn the_key_does_not_depend_on_the_runs_port_scope_or_temp_paths() {
        let key = |text: &str| request_key(&canonical_request(&prompt(text), SIZE));
        let run = |port: u16, scope: &str, tmp: &str| {
            key(&format!(
                "Verifier (generic): success - The page navigated to http://127.0.0.1:{port}/s/{scope}/search/results?q=Record-10.\nsee {}/{tmp}/after.png",
                std::env::temp_dir().display()
            ))
        };
        assert_eq!(
            run(40123, "0f3a9c2b7d1e4a55", ".tmpA1"),
            run(51999, "77aa00bb11cc22dd", ".tmpZ9")
        );
        assert_eq!(
            run(40123, "0f3a9c2b7d1e4a55", ".tmpA1"),
            key(
                "Verifier (generic): success - The page navigated to /search/results?q=Record-10.\nsee <temp>"
            )
        );
        // What the page says still counts.
        assert_ne!(key("q=Record-10"), key("q=Record-11"));
    }

    #[test]
    fn regression_an_entry_recorded_with_a_port_in_its_prompt_replays_in_another_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        // As recorded before prompts were made portable: the raw text in the request.
        let old = prompt("navigated to http://127.0.0.1:40123/s/0f3a9c2b7d1e4a55/search/results");
        let old = map_strings(&old, &|s| {
            if s.starts_with("data:") {
                "<image/png 800x600>".to_string()
            } else {
                s.to_string()
            }
        });
        std::fs::write(&path, format!("{}\n", entry_line(&old, &json!("stop()")))).unwrap();
        let c = Cassette::open(&path, CassetteMode::Replay).unwrap();
        let now = canonical_request(&prompt("navigated to /search/results"), SIZE);
        assert_eq!(c.get(&request_key(&now)), Some(json!("stop()")));
    }

    #[test]
    fn key_is_independent_of_object_key_order() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": "s"}}"#)
                .unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a": {"x": "s", "y": [1, {"p": 3, "q": 2}]}, "b": 1}"#)
                .unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"s","y":[1,{"p":3,"q":2}]},"b":1}"#
        );
        assert_eq!(request_key(&a), request_key(&b));
        // Array order does matter.
        let c: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [{"q": 2, "p": 3}, 1], "x": "s"}}"#)
                .unwrap();
        assert_ne!(request_key(&a), request_key(&c));
    }

    #[test]
    fn canonical_json_escapes_strings() {
        let v = json!({"k\"ey": "line\nbreak \u{1}"});
        let text = canonical_json(&v);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
    }

    fn entry_line(request: &Value, response: &Value) -> String {
        serde_json::to_string(&CassetteEntry {
            key: request_key(request),
            request: request.clone(),
            response: response.clone(),
        })
        .unwrap()
    }

    #[test]
    fn round_trips_through_a_file_and_keeps_the_first_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/cassette.jsonl");
        let req = json!({"model": "m", "n": 1});
        let key = request_key(&req);
        {
            let c = Cassette::open(&path, CassetteMode::Record).unwrap();
            assert!(c.is_empty());
            assert_eq!(
                c.insert(&key, &req, json!("first")).unwrap(),
                json!("first")
            );
            assert_eq!(
                c.insert(&key, &req, json!("second")).unwrap(),
                json!("first")
            );
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1);
        let c = Cassette::open(&path, CassetteMode::Replay).unwrap();
        assert_eq!(c.get(&key), Some(json!("first")));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn duplicate_lines_in_a_file_keep_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let req = json!({"n": 1});
        let text = format!(
            "{}\n\n{}\n",
            entry_line(&req, &json!(1)),
            entry_line(&req, &json!(2))
        );
        std::fs::write(&path, text).unwrap();
        let c = Cassette::open(&path, CassetteMode::Replay).unwrap();
        assert_eq!(c.get(&request_key(&req)), Some(json!(1)));
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        let good = entry_line(&json!({"n": 1}), &json!({}));
        let at = format!("{}:2", path.display());

        std::fs::write(&path, format!("{good}\nnot json\n")).unwrap();
        let err = Cassette::open(&path, CassetteMode::Replay).unwrap_err();
        assert!(err.starts_with(&at), "{err}");
        assert!(err.contains("expected a JSON object"), "{err}");

        std::fs::write(
            &path,
            format!("{good}\n{{\"key\": \"x\", \"request\": 1}}\n"),
        )
        .unwrap();
        let err = Cassette::open(&path, CassetteMode::Auto).unwrap_err();
        assert!(err.starts_with(&at) && err.contains("response"), "{err}");

        let bad_key = good.replacen(&request_key(&json!({"n": 1})), &"0".repeat(64), 1);
        std::fs::write(&path, format!("{good}\n{bad_key}\n")).unwrap();
        let err = Cassette::open(&path, CassetteMode::Replay).unwrap_err();
        assert!(
            err.starts_with(&at) && err.contains("not the SHA-256"),
            "{err}"
        );

        let short_key = good.replacen(&request_key(&json!({"n": 1})), "abc", 1);
        std::fs::write(&path, format!("{good}\n{short_key}\n")).unwrap();
        let err = Cassette::open(&path, CassetteMode::Replay).unwrap_err();
        assert!(
            err.starts_with(&at) && err.contains("SHA-256 hex digest"),
            "{err}"
        );
    }

    #[test]
    fn replay_needs_an_existing_file_but_record_creates_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.jsonl");
        let err = Cassette::open(&path, CassetteMode::Replay).unwrap_err();
        assert!(err.contains("missing.jsonl"), "{err}");
        assert!(Cassette::open(&path, CassetteMode::Auto).is_ok());
        assert!(path.exists());
    }

    #[test]
    fn an_append_after_a_cut_off_line_starts_a_new_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let first = json!({"n": 1});
        // A complete entry whose newline was lost.
        std::fs::write(&path, entry_line(&first, &json!(1))).unwrap();
        let c = Cassette::open(&path, CassetteMode::Auto).unwrap();
        let second = json!({"n": 2});
        c.insert(&request_key(&second), &second, json!(2)).unwrap();
        drop(c);
        let c = Cassette::open(&path, CassetteMode::Replay).unwrap();
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn regression_a_torn_last_line_is_skipped_on_replay_and_cut_before_recording() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let first = json!({"n": 1});
        let whole = entry_line(&first, &json!(1));
        // A crash cut the second entry mid-write.
        let torn = &entry_line(&json!({"n": 2}), &json!(2))[..40];
        std::fs::write(&path, format!("{whole}\n{torn}")).unwrap();

        // Replay reads the whole entries and leaves the file as it is.
        let c = Cassette::open(&path, CassetteMode::Replay).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c.get(&request_key(&first)), Some(json!(1)));
        assert!(std::fs::read_to_string(&path).unwrap().ends_with(torn));

        // Recording cuts the torn tail first, so the next entry starts its own line.
        let c = Cassette::open(&path, CassetteMode::Auto).unwrap();
        let third = json!({"n": 3});
        c.insert(&request_key(&third), &third, json!(3)).unwrap();
        drop(c);
        let c = Cassette::open(&path, CassetteMode::Replay).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    }

    /// Child half of the next test: opens the cassette its environment names.
    #[test]
    fn child_opens_the_cassette_in_its_environment() {
        let (Some(path), Some(mode)) = (
            std::env::var_os("FAULTLINE_TEST_CASSETTE"),
            std::env::var("FAULTLINE_TEST_CASSETTE_MODE").ok(),
        ) else {
            return;
        };
        Cassette::open(path, mode.parse().unwrap()).unwrap();
    }

    /// Regression (a torn cassette line was dropped silently, so its request became a
    /// miss nobody could explain): loading says so on stderr once, with the line number,
    /// whether the line is skipped (replay) or cut off (record).
    #[test]
    fn regression_a_torn_cassette_line_is_said_on_stderr_with_its_line_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let whole = entry_line(&json!({"n": 1}), &json!(1));
        let torn = &entry_line(&json!({"n": 2}), &json!(2))[..40];
        for mode in [CassetteMode::Replay, CassetteMode::Record] {
            std::fs::write(&path, format!("{whole}\n{torn}")).unwrap();
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "agent::cassette::tests::child_opens_the_cassette_in_its_environment",
                ])
                .args(["--nocapture", "--test-threads=1"])
                .env("FAULTLINE_TEST_CASSETTE", &path)
                .env("FAULTLINE_TEST_CASSETTE_MODE", mode.name())
                .output()
                .unwrap();
            assert!(child.status.success(), "{child:?}");
            let stderr = String::from_utf8_lossy(&child.stderr);
            let said: Vec<&str> = stderr.lines().filter(|l| l.contains("torn")).collect();
            assert_eq!(said.len(), 1, "{mode}: said once: {stderr}");
            assert!(
                said[0].contains(&format!("{}:2: ", path.display())),
                "{mode}: names the line: {stderr}"
            );
        }
    }
}
