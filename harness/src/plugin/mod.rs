//! External verifiers and agents: other people's code, run as long-lived processes that
//! speak a versioned JSON-lines protocol over their stdin and stdout.
//!
//! # The protocol
//!
//! One JSON object per line, each way. The harness writes first:
//!
//! 1. **Handshake.** The harness sends
//!    `{"protocol": "faultline.policy", "version": 1, "name": "mine", ...}` (an agent gets
//!    `"protocol": "faultline.agent"`); the process answers with the protocol and version it
//!    speaks, `{"protocol": "faultline.policy", "version": 1}`. Any other answer is a
//!    protocol error: a version bump means the requests changed shape, and a process that
//!    does not say which version it speaks is not trusted to read them. An agent may add
//!    `"deterministic": true` when the same view always gets the same reply from it: its
//!    episodes then run once where nothing else differs between runs, instead of
//!    `[recovery] runs` times. Absent (or `false`), every run is run.
//! 2. **Requests.** For a verifier, one per judgement:
//!    `{"type": "judge", "id": 7, "evidence": {...}}` with exactly what the built-in
//!    policies see ([`policy::evidence_json`]): the instruction, the dispatched actions
//!    with their image points and the viewport points they map to, the tool's message,
//!    the URLs before and after, both screenshots as paths to PNG files at image size, the
//!    visible text, and every frame's DOM snapshot. The answer is
//!    `{"id": 7, "verdict": "success" | "no_change" | "fail", "message": "..."}`; the
//!    message is stored and told with the run's own URLs written as paths and temporary
//!    paths hidden ([`crate::agent::portable`]), like every policy's.
//!    For an agent, one per turn: `{"type": "act", "id": 3, "view": {...}}` with the
//!    agent's view ([`agent::view_json`]), answered by
//!    `{"id": 3, "reply": "click(120, 44)", "format": "faultline"}`.
//!
//! Screenshots are written to a temporary directory of the run (one per pool, removed when
//! the pool is dropped); each request's files are removed once it is answered.
//!
//! # Sizes
//!
//! What a process writes is bounded where it is read, so a hostile or broken plugin costs
//! bounded memory and storage:
//!
//! - a line holds at most [`MAX_LINE_BYTES`] (1 MiB) once its long strings are cut; a
//!   longer one (a process writing without a newline) is a `protocol` failure, and nothing
//!   past the limit is kept;
//! - a string value longer than [`MAX_STRING_BYTES`] (64 KiB) is cut while it is read and
//!   ends with `… [truncated: N bytes]`, N the bytes cut;
//! - a verifier's `message` is kept up to [`policy::MAX_MESSAGE_BYTES`] (16 KiB), cut with
//!   the same marker; its verdict stands;
//! - an agent's `reply` over the parse stage's limit
//!   (`MAX_REPLY_BYTES` of the round trip's parse stage, 64 KiB, for every agent) is the
//!   agent's own parse error, stored cut.
//!
//! # Processes
//!
//! A [`Pool`] holds the idle processes of one plugin. A judgement checks one out
//! (starting a process when none is idle), so there is at most one process per concurrent
//! trial (`jobs`), each started once and reused for every trial it serves — not one per
//! trial. Every process runs in its own process group with `PR_SET_PDEATHSIG`, and is
//! killed (the whole group) when it is dropped: at the end of a run, when the harness is
//! interrupted (Ctrl-C drops the run), and after any failure. Processes are started from
//! one thread that lives as long as the harness, since that signal follows the thread
//! that started a process, not the harness; what one detaches from its group (`setsid`)
//! is adopted by the `faultline` binary and killed at its end ([`crate::children`]). The
//! per-request timeout runs only while a request waits for its answer: an agent is not
//! charged for the harness executing its action (a `wait` at the cap included).
//!
//! # Failure is not a verdict
//!
//! A process that cannot be started, exits, stays silent past the per-request timeout,
//! writes a line that is not a JSON object, answers a verdict other than the three, or
//! speaks another protocol version (or writes a line over the limit) gives an [`InfraError`] (kind `spawn`, `crash`,
//! `timeout`, `malformed`, `unknown_verdict` or `protocol`) carrying the last bytes of its
//! stderr (a bounded tail). The failed process is killed, and the next request starts a
//! fresh one: a broken plugin costs its own (trial, policy) pairs and nothing else. The
//! trial stores the other policies' verdicts as usual and an infrastructure-error row for
//! this one; the report counts those apart (never as caught, missed or a false alarm).
//! A verifier's first failure in a run is said on stderr (a command that does not exist
//! would otherwise go unnoticed until the report), and the run's summary line counts the
//! judgements its policies could not make.
//! For an agent the same failures end the episode as `agent_error` with the reason.
//!
//! # Why the barrier holds for outsiders
//!
//! A plugin gets evidence (or the agent's view) and nothing else:
//!
//! - its environment is cleared and only `PATH`, `HOME` and `LANG` are passed on, so no
//!   `FAULTLINE_*` variable and no API key reach it; its arguments are the configured
//!   command, nothing added;
//! - the ledger's bearer token lives only in the scorer's memory: it is never in an
//!   environment variable, an argument, a file, or the evidence, so a plugin that finds
//!   the fixture server in the page URLs and asks for a ledger is refused (401);
//! - the requests are built from the same [`faultline_policies::Evidence`] and
//!   [`crate::agent::AgentView`] values the built-ins get, which hold no ledger.

pub mod agent;
pub mod policy;

use faultline_policies::InfraError;
use faultline_tasks::PluginFailure;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The protocol version this harness speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// The default per-request timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// How much of a process's stderr is kept.
pub const STDERR_TAIL_BYTES: usize = 4096;

/// The longest line a plugin may write, once its long strings are cut (below): 1 MiB.
/// Screenshots travel as file paths, so an honest line is a few KiB; a longer one (a
/// process writing without a newline, say) is that process's `protocol` failure, and
/// nothing past the limit is held in memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The longest string value kept from a plugin's line: 64 KiB (as written, escapes
/// included). A longer one is cut at read time, never buffered whole, and ends with
/// `… [truncated: N bytes]` (N: the bytes cut).
pub const MAX_STRING_BYTES: usize = 64 << 10;

/// The environment variables a plugin inherits; everything else is cleared.
pub const PASSED_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// An external process as a config names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginSpec {
    /// The name stored with its verdicts (a policy) or episodes (an agent).
    pub name: String,
    /// The program and its arguments (no shell).
    pub command: Vec<String>,
    /// How long one request (and the handshake) may take.
    pub timeout_ms: u64,
}

/// The last bytes written to a stream.
#[derive(Default)]
struct Tail(VecDeque<u8>);

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.0.extend(bytes);
        let excess = self.0.len().saturating_sub(STDERR_TAIL_BYTES);
        self.0.drain(..excess);
    }

    fn text(&self) -> String {
        let (a, b) = self.0.as_slices();
        String::from_utf8_lossy(&[a, b].concat()).into_owned()
    }
}

/// One running plugin process.
pub struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<Tail>>,
    stderr_reader: Option<JoinHandle<()>>,
    timeout: Duration,
    /// Which incarnation of this plugin (1 for the first one started).
    attempt: u32,
    next_id: u64,
    /// What the handshake's answer said under `deterministic` (an agent's optional claim).
    deterministic: bool,
}

impl Process {
    /// Starts the process and completes the handshake.
    fn start(
        spec: &PluginSpec,
        protocol: &str,
        hello: &Value,
        attempt: u32,
    ) -> Result<Process, InfraError> {
        let err = |kind: PluginFailure, reason: String| InfraError {
            kind,
            reason,
            stderr_tail: String::new(),
            attempt,
        };
        let (program, args) = spec
            .command
            .split_first()
            .ok_or_else(|| err(PluginFailure::Spawn, "empty command".into()))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so a kill reaches whatever it started too.
            .process_group(0);
        for var in PASSED_ENV {
            if let Some(v) = std::env::var_os(var) {
                cmd.env(var, v);
            }
        }
        let mut child = crate::children::spawn(cmd).map_err(|e| {
            err(
                PluginFailure::Spawn,
                format!("cannot start {:?}: {e}", spec.command),
            )
        })?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                match read_bounded_line(&mut reader, MAX_LINE_BYTES, MAX_STRING_BYTES) {
                    Ok(None) => break,
                    Ok(Some(line)) => {
                        if tx.send(Ok(line)).is_err() {
                            break;
                        }
                    }
                    // Too long, not UTF-8, or a read error: the process is failed, so
                    // nothing more is read from it.
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Tail::default()));
        let sink = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().expect("stderr tail").push(&buf[..n]);
            }
        });
        let mut process = Process {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            stderr_reader: Some(stderr_reader),
            timeout: Duration::from_millis(spec.timeout_ms),
            attempt,
            next_id: 0,
            deterministic: false,
        };
        let mut hello = hello.clone();
        hello["protocol"] = json!(protocol);
        hello["version"] = json!(PROTOCOL_VERSION);
        let answer = process.round_trip(&hello)?;
        if answer.get("protocol").and_then(Value::as_str) != Some(protocol)
            || answer.get("version").and_then(Value::as_u64) != Some(PROTOCOL_VERSION)
        {
            return Err(process.fail(
                PluginFailure::Protocol,
                format!(
                    "handshake: expected {{\"protocol\": \"{protocol}\", \"version\": {PROTOCOL_VERSION}}}, got {}",
                    clip(&answer.to_string())
                ),
            ));
        }
        process.deterministic = match answer.get("deterministic") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(process.fail(
                    PluginFailure::Protocol,
                    format!(
                        "handshake: `deterministic` must be true or false, got {}",
                        clip(&other.to_string())
                    ),
                ))
            }
        };
        Ok(process)
    }

    /// Whether the handshake said the process's replies cannot differ between runs of
    /// the same item (`"deterministic": true`; absent means they can).
    pub fn deterministic(&self) -> bool {
        self.deterministic
    }

    /// Sends one request (an `id` is added) and reads its answer, a JSON object whose
    /// `id`, when present, must match.
    pub fn request(&mut self, mut request: Value) -> Result<Value, InfraError> {
        self.next_id += 1;
        let id = self.next_id;
        request["id"] = json!(id);
        let answer = self.round_trip(&request)?;
        match answer.get("id") {
            None => Ok(answer),
            Some(v) if v.as_u64() == Some(id) => Ok(answer),
            Some(v) => {
                let v = clip(&v.to_string());
                Err(self.fail(
                    PluginFailure::Protocol,
                    format!("answered request {id} with id {v}"),
                ))
            }
        }
    }

    fn round_trip(&mut self, message: &Value) -> Result<Value, InfraError> {
        let mut line = message.to_string();
        line.push('\n');
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.flush()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        if let Err(e) = written {
            let status = self.exit_status();
            return Err(self.fail(
                PluginFailure::Crash,
                format!("cannot write a request ({e}); {status}"),
            ));
        }
        let deadline = Instant::now() + self.timeout;
        let text = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                // Blank lines between answers are tolerated.
                Ok(Ok(l)) if l.trim().is_empty() => continue,
                Ok(Ok(l)) => break l,
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(self.fail(PluginFailure::Protocol, e.to_string()))
                }
                Ok(Err(e)) => {
                    return Err(self.fail(PluginFailure::Crash, format!("reading its stdout: {e}")))
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(self.fail(
                        PluginFailure::Timeout,
                        format!("no answer within {} ms", self.timeout.as_millis()),
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.exit_status();
                    return Err(
                        self.fail(PluginFailure::Crash, format!("closed its stdout; {status}"))
                    );
                }
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.is_object() => Ok(v),
            Ok(_) | Err(_) => Err(self.fail(
                PluginFailure::Malformed,
                format!("not a JSON object: {}", clip(text.trim_end())),
            )),
        }
    }

    /// How the process ended, waiting briefly for it (it may be exiting right now).
    fn exit_status(&mut self) -> String {
        let until = Instant::now() + Duration::from_millis(500);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return format!("it exited ({s})"),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
                _ => return "it is still running".into(),
            }
        }
    }

    /// Kills the process and turns what went wrong into an infrastructure error with the
    /// stderr tail (read to the end once the process is gone).
    pub fn fail(&mut self, kind: PluginFailure, reason: String) -> InfraError {
        self.kill();
        if let Some(reader) = self.stderr_reader.take() {
            // The pipe closes when the group is dead; a grandchild that escaped the group
            // could hold it open, so the wait is bounded.
            let until = Instant::now() + Duration::from_millis(500);
            while !reader.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
        InfraError {
            kind,
            reason,
            stderr_tail: self.stderr.lock().expect("stderr tail").text(),
            attempt: self.attempt,
        }
    }

    /// The process id (for tests that check nothing survives).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        self.stdin = None;
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: killpg only sends a signal; the group is the one this process leads.
        unsafe { libc::killpg(pid, libc::SIGKILL) };
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads one line (without its newline) holding at most `max_line` bytes, cutting every
/// JSON string value in it to about `max_string` bytes at read time (see
/// [`MAX_STRING_BYTES`]), so a hostile process costs bounded memory whatever it writes.
/// `None` at the end of the stream; an `InvalidData` error for a line over `max_line`
/// bytes or one that is not UTF-8.
fn read_bounded_line(
    reader: &mut impl BufRead,
    max_line: usize,
    max_string: usize,
) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut lexer = StringCutter::new(max_string);
    let mut read_any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            if !read_any {
                return Ok(None);
            }
            break;
        }
        read_any = true;
        let (used, ended) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        for &b in &chunk[..used - usize::from(ended)] {
            lexer.push(b, &mut line);
        }
        reader.consume(used);
        if line.len() > max_line {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("wrote a line over {max_line} bytes, the protocol's limit"),
            ));
        }
        if ended {
            break;
        }
    }
    lexer.finish(&mut line);
    String::from_utf8(line).map(Some).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "wrote a line that is not UTF-8",
        )
    })
}

/// Follows JSON strings byte by byte and drops what a string holds past its limit,
/// cutting only between characters and escapes so the line stays valid JSON.
struct StringCutter {
    max_string: usize,
    in_string: bool,
    after_backslash: bool,
    hex_left: u8,
    kept: usize,
    cut: usize,
}

impl StringCutter {
    fn new(max_string: usize) -> StringCutter {
        StringCutter {
            max_string,
            in_string: false,
            after_backslash: false,
            hex_left: 0,
            kept: 0,
            cut: 0,
        }
    }

    fn push(&mut self, b: u8, line: &mut Vec<u8>) {
        if !self.in_string {
            if b == b'"' {
                self.in_string = true;
                self.kept = 0;
                self.cut = 0;
            }
            line.push(b);
            return;
        }
        let starts_a_character = !self.after_backslash && self.hex_left == 0 && (b & 0xC0) != 0x80;
        if starts_a_character && b == b'"' {
            self.finish(line);
            line.push(b);
            self.in_string = false;
            return;
        }
        if self.after_backslash {
            self.after_backslash = false;
            if b == b'u' {
                self.hex_left = 4;
            }
        } else if self.hex_left > 0 {
            self.hex_left -= 1;
        } else if b == b'\\' {
            self.after_backslash = true;
        }
        if self.cut > 0 || (starts_a_character && self.kept >= self.max_string) {
            self.cut += 1;
        } else {
            self.kept += 1;
            line.push(b);
        }
    }

    /// Closes a string that was cut with its marker.
    fn finish(&mut self, line: &mut Vec<u8>) {
        if self.cut > 0 {
            line.extend_from_slice(marker(self.cut).as_bytes());
            self.cut = 0;
        }
    }
}

/// What ends a text that was cut: `… [truncated: N bytes]`.
fn marker(cut: usize) -> String {
    format!("{TRUNCATED} {cut} bytes]")
}

const TRUNCATED: &str = "… [truncated:";

/// A text without its trailing truncation marker, and the bytes that marker says were cut
/// (0 when it has none).
fn split_marker(text: &str) -> (&str, usize) {
    text.rsplit_once(TRUNCATED)
        .and_then(|(body, tail)| {
            let n = tail.strip_prefix(' ')?.strip_suffix(" bytes]")?;
            n.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
            Some((body, n.parse().ok()?))
        })
        .unwrap_or((text, 0))
}

/// How long a text was before any cut its marker records.
pub fn original_len(text: &str) -> usize {
    let (body, cut) = split_marker(text);
    body.len() + cut
}

/// `text` cut to at most `max` bytes (at a character boundary) plus the marker
/// `… [truncated: N bytes]`, N counting every byte cut, earlier cuts included; `text`
/// itself when it is no longer than `max` before its marker.
pub fn truncate(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let (body, earlier) = split_marker(text);
    if body.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = max;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let cut = body.len() - end + earlier;
    std::borrow::Cow::Owned(format!("{}{}", &body[..end], marker(cut)))
}

fn clip(s: &str) -> String {
    const MAX: usize = 300;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The idle processes of one plugin; see the module docs.
pub struct Pool {
    spec: PluginSpec,
    protocol: &'static str,
    hello: Value,
    idle: Mutex<Vec<Process>>,
    started: AtomicU32,
    files: AtomicU64,
    dir: OnceLock<Result<tempfile::TempDir, String>>,
    failure_said: AtomicBool,
}

impl Pool {
    /// A pool that starts processes on demand; `hello` is the rest of the handshake.
    pub fn new(spec: PluginSpec, protocol: &'static str, hello: Value) -> Pool {
        Pool {
            spec,
            protocol,
            hello,
            idle: Mutex::new(Vec::new()),
            started: AtomicU32::new(0),
            files: AtomicU64::new(0),
            dir: OnceLock::new(),
            failure_said: AtomicBool::new(false),
        }
    }

    /// The plugin's name, command and timeout.
    pub fn spec(&self) -> &PluginSpec {
        &self.spec
    }

    /// Processes started so far (restarts included).
    pub fn started(&self) -> u32 {
        self.started.load(Ordering::SeqCst)
    }

    /// Runs `f` with a process checked out of the pool (started when none is idle). On
    /// success the process goes back to the pool; on failure it is dropped (killed), and
    /// the next call starts a fresh one.
    pub fn with_process<T>(
        &self,
        f: impl FnOnce(&mut Process) -> Result<T, InfraError>,
    ) -> Result<T, InfraError> {
        let idle = self.idle.lock().expect("plugin pool").pop();
        let mut process = match idle {
            Some(p) => p,
            None => {
                let attempt = self.started.fetch_add(1, Ordering::SeqCst) + 1;
                Process::start(&self.spec, self.protocol, &self.hello, attempt)?
            }
        };
        let result = f(&mut process);
        if result.is_ok() {
            self.idle.lock().expect("plugin pool").push(process);
        }
        result
    }

    /// True the first time it is asked, false ever after: whether a failure of this
    /// plugin is the first one, to be said on stderr.
    pub fn first_failure(&self) -> bool {
        !self.failure_said.swap(true, Ordering::SeqCst)
    }

    /// Writes a PNG for one request into the run's temporary directory.
    pub fn write_png(&self, label: &str, png: &[u8]) -> Result<TempFile, InfraError> {
        let err = |reason: String| InfraError {
            kind: PluginFailure::Spawn,
            reason,
            stderr_tail: String::new(),
            attempt: 0,
        };
        let dir = self
            .dir
            .get_or_init(|| {
                tempfile::Builder::new()
                    .prefix("faultline-plugin-")
                    .tempdir()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| err(format!("creating the screenshot directory: {e}")))?;
        let n = self.files.fetch_add(1, Ordering::SeqCst);
        let path = dir.path().join(format!("{n:06}.{label}.png"));
        std::fs::write(&path, png).map_err(|e| err(format!("writing {}: {e}", path.display())))?;
        Ok(TempFile(path))
    }
}

/// A file removed when dropped.
pub struct TempFile(PathBuf);

impl TempFile {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub use crate::engine::judge::off_executor;

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8], max_line: usize, max_string: usize) -> Vec<std::io::Result<String>> {
        // A tiny buffer, so strings and escapes straddle reads.
        let mut reader = BufReader::with_capacity(3, bytes);
        let mut lines = Vec::new();
        loop {
            match read_bounded_line(&mut reader, max_line, max_string) {
                Ok(None) => return lines,
                Ok(Some(l)) => lines.push(Ok(l)),
                Err(e) => {
                    lines.push(Err(e));
                    return lines;
                }
            }
        }
    }

    #[test]
    fn long_strings_are_cut_at_read_time_and_the_line_stays_json() {
        let long = format!("{}é\\\"\\u00e9tail", "A".repeat(7));
        let text = format!("{{\"verdict\": \"fail\", \"message\": \"{long}\"}}\n{{\"id\": 2}}\n");
        let lines = read_all(text.as_bytes(), 1000, 8);
        let first: Value = serde_json::from_str(lines[0].as_ref().unwrap()).unwrap();
        assert_eq!(first["verdict"], "fail");
        // Cut between characters: 7 A's and the two-byte é make 9 bytes kept.
        let cut = long.len() - 9;
        assert_eq!(
            first["message"],
            format!("AAAAAAAé… [truncated: {cut} bytes]")
        );
        assert_eq!(lines[1].as_ref().unwrap(), "{\"id\": 2}");
        assert_eq!(lines.len(), 2);
        // An escape is never split: the cut comes before the backslash or after the escape.
        let lines = read_all(b"[\"AAAAAAA\\u00e9BBBB\"]\n", 1000, 8);
        let v: Value = serde_json::from_str(lines[0].as_ref().unwrap()).unwrap();
        assert_eq!(v[0], "AAAAAAAé… [truncated: 4 bytes]");
        // Short strings and a last line without a newline are kept as written.
        let lines = read_all(b"{\"reply\": \"click(1, 2)\"}", 1000, 64);
        assert_eq!(lines[0].as_ref().unwrap(), "{\"reply\": \"click(1, 2)\"}");
    }

    /// Regression (a process writing without a newline made the reader buffer all of it):
    /// past the line limit the read stops with a protocol error.
    #[test]
    fn regression_a_line_over_the_limit_is_refused_without_buffering_it() {
        let endless = vec![b'x'; 100_000];
        let lines = read_all(&endless, 1000, 64);
        let e = lines[0].as_ref().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("over 1000 bytes"), "{e}");
        // A long string does not count against the line: only what is kept does.
        let long = format!("{{\"message\": \"{}\"}}\n", "y".repeat(100_000));
        let lines = read_all(long.as_bytes(), 1000, 64);
        assert!(lines[0].as_ref().unwrap().len() < 200);
        let lines = read_all(b"\xff\xfe\n", 1000, 64);
        assert!(lines[0].as_ref().unwrap_err().to_string().contains("UTF-8"));
    }

    #[test]
    fn truncation_counts_every_cut_byte_and_keeps_short_texts() {
        assert_eq!(truncate("short", 16), "short");
        let once = truncate(&"é".repeat(10), 5).into_owned();
        assert_eq!(once, "éé… [truncated: 16 bytes]");
        assert_eq!(original_len(&once), 20);
        let twice = truncate(&once, 2).into_owned();
        assert_eq!(twice, "é… [truncated: 18 bytes]");
        assert_eq!(truncate(&twice, 2), twice);
        assert_eq!(original_len("plain"), 5);
    }

    /// Regression (an exec agent was SIGKILLed while the harness executed its
    /// `wait(10000)`): `PR_SET_PDEATHSIG` fires when the thread that started a process
    /// exits, and the blocking-pool thread that ran the first request exited after 10 s
    /// idle. A process must outlive the thread that happened to start it.
    #[test]
    fn regression_a_process_outlives_the_thread_that_started_it() {
        let echo = "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    print(json.dumps({'protocol': 'faultline.agent', 'version': 1} if 'protocol' in m else {'id': m['id']}), flush=True)\n";
        let pool = Arc::new(Pool::new(
            PluginSpec {
                name: "echo".into(),
                command: vec!["python3".into(), "-c".into(), echo.into()],
                timeout_ms: 20_000,
            },
            "faultline.agent",
            json!({}),
        ));
        let first = pool.clone();
        std::thread::spawn(move || first.with_process(|p| p.request(json!({"type": "act"}))))
            .join()
            .unwrap()
            .unwrap();
        // The starting thread is gone; a parent-death signal would have arrived by now.
        std::thread::sleep(Duration::from_millis(300));
        let answer = pool.with_process(|p| p.request(json!({"type": "act"})));
        assert_eq!(answer.unwrap()["id"], 2);
        assert_eq!(pool.started(), 1);
    }
}
