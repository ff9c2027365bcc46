//! The OpenAI-compatible chat-completions agent.
//!
//! [`OpenAiAgent`] sends each [`AgentView`] to `{base_url}/chat/completions` (OpenAI, or
//! any server that speaks the same API: vLLM, Ollama, llama.cpp, …) as one system
//! message stating the reply grammar and one user message holding the step's text and
//! the screenshot, and returns the model's message content as the raw reply. Every
//! request goes through a [`Cassette`] first, so recorded episodes replay offline.
//!
//! The API key is read from the environment only (`FAULTLINE_API_KEY`, else
//! `OPENAI_API_KEY`) and may be absent for local servers. It is never stored in the
//! config, a cassette, a log line, an error message or `Debug` output.

use super::cassette::{canonical_request, request_key, Cassette, REPLAY_MISS};
use super::{Agent, AgentError, AgentReply, AgentView, HistoryEntry, TokenUsage};
use base64::Engine as _;
use futures::future::BoxFuture;
use reqwest::header::{HeaderValue, AUTHORIZATION, RETRY_AFTER};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// Environment variables the API key is read from, first match wins.
pub const API_KEY_VARS: [&str; 2] = ["FAULTLINE_API_KEY", "OPENAI_API_KEY"];

/// The longest a retry waits, whatever the backoff or `Retry-After` says.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// History entries shown to the model (the most recent ones).
const HISTORY_SHOWN: usize = 12;
/// Caps that keep one history entry compact.
const HISTORY_REPLY_CHARS: usize = 400;
const HISTORY_TOOL_CHARS: usize = 200;
/// Visible text beyond this is cut (and the cut is said).
const VISIBLE_TEXT_CHARS: usize = 8000;
/// How much of an error body goes into an error message.
const BODY_EXCERPT_CHARS: usize = 200;

/// How to reach the model. The API key is deliberately not here (see [`API_KEY_VARS`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OpenAiConfig {
    /// The API root; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    /// The model name the server serves.
    pub model: String,
    /// Sampling temperature in `[0, 2]`.
    pub temperature: f64,
    /// A fixed sampling seed; when absent each request carries the episode's seed, so
    /// repeated episodes are distinct requests (and distinct cassette entries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Completion token limit per reply.
    pub max_tokens: u32,
    /// Per network call, from sending the request to reading the whole body.
    pub timeout_ms: u64,
    /// Extra attempts after the first on 429, 5xx, timeouts and connection errors.
    pub max_retries: u32,
    /// The first retry's wait; each further retry doubles it.
    pub retry_base_ms: u64,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            base_url: "http://127.0.0.1:8000/v1".to_string(),
            model: "local-model".to_string(),
            temperature: 0.0,
            seed: None,
            max_tokens: 256,
            timeout_ms: 60_000,
            max_retries: 4,
            retry_base_ms: 500,
        }
    }
}

impl OpenAiConfig {
    /// Checks every field; the error names the field and what it must be.
    pub fn validate(&self) -> Result<(), String> {
        let url = self.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "openai.base_url must start with http:// or https://, got {:?}",
                self.base_url
            ));
        }
        if url.trim_end_matches('/').ends_with("/chat/completions") {
            return Err(format!(
                "openai.base_url is the API root (e.g. http://127.0.0.1:8000/v1), without /chat/completions; got {:?}",
                self.base_url
            ));
        }
        if self.model.trim().is_empty() {
            return Err("openai.model must not be empty".to_string());
        }
        if !(self.temperature.is_finite() && (0.0..=2.0).contains(&self.temperature)) {
            return Err(format!(
                "openai.temperature must be in [0, 2], got {}",
                self.temperature
            ));
        }
        if let Some(seed) = self.seed {
            if seed > i64::MAX as u64 {
                return Err(format!(
                    "openai.seed must be at most {} (servers read it as a signed 64-bit integer), got {seed}",
                    i64::MAX
                ));
            }
        }
        if self.max_tokens < 1 {
            return Err("openai.max_tokens must be at least 1".to_string());
        }
        if self.timeout_ms < 1 {
            return Err("openai.timeout_ms must be at least 1".to_string());
        }
        if self.max_retries > 20 {
            return Err(format!(
                "openai.max_retries must be at most 20, got {}",
                self.max_retries
            ));
        }
        if self.retry_base_ms > MAX_RETRY_WAIT.as_millis() as u64 {
            return Err(format!(
                "openai.retry_base_ms must be at most {} ms, got {}",
                MAX_RETRY_WAIT.as_millis(),
                self.retry_base_ms
            ));
        }
        Ok(())
    }

    /// `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!(
            "{}/chat/completions",
            self.base_url.trim().trim_end_matches('/')
        )
    }

    /// Whether the agent's replies cannot differ between runs of the same item: with a
    /// fixed `seed` every run sends the same requests, and the cassette, which every mode
    /// consults before the model, answers a repeat with the first answer whatever the
    /// temperature. Without one, each run's requests carry its own episode's seed: distinct
    /// requests, which a model may answer differently.
    pub fn deterministic(&self) -> bool {
        self.seed.is_some()
    }

    /// The seed a request for `view_seed` carries. Servers read it as a signed 64-bit
    /// integer, so an episode seed keeps its low 63 bits.
    pub fn request_seed(&self, view_seed: u64) -> u64 {
        self.seed.unwrap_or(view_seed & i64::MAX as u64)
    }
}

/// The API key. Neither `Clone`, `Display` nor `Serialize`; `Debug` is redacted. It
/// leaves this type only as a sensitive header value.
struct ApiKey {
    /// `Bearer <key>`, marked sensitive so `http`'s own `Debug` hides it too.
    header: HeaderValue,
    /// The variable it came from (for `Debug` and logs).
    source: &'static str,
    /// Kept only to scrub it from anything a server echoes back.
    secret: String,
}

impl ApiKey {
    /// The key from the first non-empty variable of [`API_KEY_VARS`].
    fn from_env() -> Result<Option<ApiKey>, AgentError> {
        for var in API_KEY_VARS {
            let Some(value) = std::env::var_os(var) else {
                continue;
            };
            let Some(value) = value.to_str().map(str::trim) else {
                return Err(AgentError::new(format!("openai: {var} is not valid UTF-8")));
            };
            if value.is_empty() {
                continue;
            }
            let mut header = HeaderValue::from_str(&format!("Bearer {value}")).map_err(|_| {
                AgentError::new(format!(
                    "openai: {var} holds characters that cannot go into an HTTP header"
                ))
            })?;
            header.set_sensitive(true);
            return Ok(Some(ApiKey {
                header,
                source: var,
                secret: value.to_string(),
            }));
        }
        Ok(None)
    }

    fn scrub(&self, text: &str) -> String {
        text.replace(&self.secret, "<redacted>")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey(<redacted>, from {})", self.source)
    }
}

/// Installs rustls' ring provider as the process default, once. reqwest is built
/// without a provider of its own (no aws-lc-rs), and one must be in place before any
/// client is built; an already installed provider is left alone.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The `openai` agent.
pub struct OpenAiAgent {
    cfg: OpenAiConfig,
    endpoint: String,
    key: Option<ApiKey>,
    client: reqwest::Client,
    cassette: Arc<Cassette>,
}

impl fmt::Debug for OpenAiAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiAgent")
            .field("cfg", &self.cfg)
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.key)
            .field("cassette", &self.cassette.describe())
            .field("cassette_mode", &self.cassette.mode())
            .finish()
    }
}

/// What one attempt ended with, when it did not end with a usable response.
enum Failure {
    /// Worth another attempt (429, 5xx, timeout, connection error).
    Retryable {
        what: String,
        retry_after: Option<Duration>,
    },
    /// Final at once (other 4xx, a malformed 200).
    Final(String),
}

impl OpenAiAgent {
    /// Checks the config, reads the API key from the environment and builds the client.
    pub fn new(cfg: OpenAiConfig, cassette: Arc<Cassette>) -> Result<Self, AgentError> {
        cfg.validate().map_err(AgentError::new)?;
        let key = ApiKey::from_env()?;
        install_tls_provider();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(cfg.timeout_ms))
            .user_agent(concat!("faultline/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AgentError::new(format!("openai: cannot build the HTTP client: {e}")))?;
        Ok(OpenAiAgent {
            endpoint: cfg.endpoint(),
            cfg,
            key,
            client,
            cassette,
        })
    }

    /// The endpoint configuration the agent was built with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.cfg
    }

    /// Whether an API key was found (and which variable held it).
    pub fn api_key_source(&self) -> Option<&'static str> {
        self.key.as_ref().map(|k| k.source)
    }

    /// The chat-completions request body for `view` (with the real screenshot).
    pub fn request_body(&self, view: &AgentView<'_>) -> Value {
        request_body(&self.cfg, view)
    }

    async fn reply_to(&self, view: AgentView<'_>) -> Result<AgentReply, AgentError> {
        let body = self.request_body(&view);
        let canonical = canonical_request(&body, view.image);
        let key = request_key(&canonical);
        if let Some(response) = self.cassette.get(&key) {
            let (text, usage) = parse_completion(&response).map_err(|e| {
                AgentError::new(format!(
                    "openai: cassette {} entry {key} is not a usable completion: {e}",
                    self.cassette.describe()
                ))
            })?;
            tracing::debug!(key = %key, step = view.step, "openai: cassette hit");
            return Ok(AgentReply {
                text,
                format: faultline_tasks::ActionFormat::Faultline,
                usage,
                model_calls: 0,
            });
        }
        if !self.cassette.mode().calls_on_miss() {
            // No recorded answer and no call allowed: there is no working endpoint for
            // this request (the recording may have failed on it), not an agent failure.
            return Err(AgentError::unreachable(format!(
                "openai: {REPLAY_MISS}: cassette {} (mode {}) has no entry for this request (key {key}, model {:?}, step {}); \
                 record it first with cassette mode record or auto",
                self.cassette.describe(),
                self.cassette.mode().name(),
                self.cfg.model,
                view.step
            )));
        }
        let (response, calls) = self.call(&body).await?;
        // Concurrent misses on the same key: the first stored response wins, and this
        // reply is that one, so a recorded run is exactly what its replay gives.
        let stored = self
            .cassette
            .insert(&key, &canonical, response)
            .map_err(|e| AgentError::new(format!("openai: {e}")))?;
        let (text, usage) =
            parse_completion(&stored).map_err(|e| AgentError::new(format!("openai: {e}")))?;
        Ok(AgentReply {
            text,
            format: faultline_tasks::ActionFormat::Faultline,
            usage,
            model_calls: calls,
        })
    }

    /// POSTs `body`, retrying what is worth retrying. Returns the response JSON (already
    /// checked to be a usable completion) and the number of requests made.
    async fn call(&self, body: &Value) -> Result<(Value, u32), AgentError> {
        let attempts = self.cfg.max_retries + 1;
        let mut last = String::new();
        for attempt in 1..=attempts {
            match self.attempt(body).await {
                Ok(response) => {
                    tracing::debug!(attempt, endpoint = %self.endpoint, "openai: completion received");
                    return Ok((response, attempt));
                }
                Err(Failure::Final(what)) => {
                    let message = format!(
                        "openai: {}: {what} (attempt {attempt} of {attempts}; not retried)",
                        self.endpoint
                    );
                    // A completion that came back unusable is the model's; an HTTP error
                    // status (a wrong key, a wrong URL) means no working endpoint.
                    return Err(if what.starts_with("malformed response") {
                        AgentError::new(message)
                    } else {
                        AgentError::unreachable(message)
                    });
                }
                Err(Failure::Retryable { what, retry_after }) => {
                    if attempt < attempts {
                        let wait = retry_wait(self.cfg.retry_base_ms, attempt, retry_after);
                        tracing::warn!(
                            attempt,
                            attempts,
                            wait_ms = wait.as_millis() as u64,
                            endpoint = %self.endpoint,
                            "openai: {what}; retrying"
                        );
                        tokio::time::sleep(wait).await;
                    }
                    last = what;
                }
            }
        }
        Err(AgentError::unreachable(format!(
            "openai: {}: gave up after {attempts} attempt{}; last: {last}",
            self.endpoint,
            if attempts == 1 { "" } else { "s" }
        )))
    }

    async fn attempt(&self, body: &Value) -> Result<Value, Failure> {
        let mut request = self.client.post(&self.endpoint).json(body);
        if let Some(key) = &self.key {
            request = request.header(AUTHORIZATION, key.header.clone());
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                return Err(Failure::Retryable {
                    what: self.transport_error(&e),
                    retry_after: None,
                })
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let text = match response.text().await {
            Ok(t) => self.scrub(&t),
            Err(e) => {
                return Err(Failure::Retryable {
                    what: format!("HTTP {status}, then {}", self.transport_error(&e)),
                    retry_after,
                })
            }
        };
        if status.is_success() {
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                Failure::Final(format!(
                    "malformed response (HTTP {status}): the body is not JSON ({e}): {}",
                    excerpt(&text)
                ))
            })?;
            parse_completion(&value).map_err(|e| {
                Failure::Final(format!(
                    "malformed response (HTTP {status}): {e}: {}",
                    excerpt(&text)
                ))
            })?;
            return Ok(value);
        }
        let what = format!("HTTP {status}: {}", excerpt(&text));
        if is_retryable(status) {
            Err(Failure::Retryable { what, retry_after })
        } else {
            Err(Failure::Final(what))
        }
    }

    fn transport_error(&self, e: &reqwest::Error) -> String {
        let what = if e.is_timeout() {
            format!("timed out after {} ms", self.cfg.timeout_ms)
        } else if e.is_connect() {
            format!("connection failed: {}", error_chain(e))
        } else {
            format!("request failed: {}", error_chain(e))
        };
        self.scrub(&what)
    }

    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(key) => key.scrub(text),
            None => text.to_string(),
        }
    }
}

impl Agent for OpenAiAgent {
    fn name(&self) -> &str {
        "openai"
    }

    fn deterministic(&self) -> bool {
        self.cfg.deterministic()
    }

    fn reply<'a>(&'a self, view: AgentView<'a>) -> BoxFuture<'a, Result<AgentReply, AgentError>> {
        Box::pin(self.reply_to(view))
    }
}

fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// `Retry-After` in seconds (the HTTP-date form is not used by model APIs).
fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

/// The wait before the retry that follows attempt `attempt` (1-based): the exponential
/// backoff or the server's `Retry-After`, whichever is longer, capped.
fn retry_wait(base_ms: u64, attempt: u32, retry_after: Option<Duration>) -> Duration {
    let factor = 1u64 << (attempt - 1).min(20);
    let backoff = Duration::from_millis(base_ms.saturating_mul(factor));
    backoff
        .max(retry_after.unwrap_or_default())
        .min(MAX_RETRY_WAIT)
}

/// The error and its sources, joined (reqwest's own message omits the cause).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let _ = write!(out, ": {s}");
        source = s.source();
    }
    out
}

/// A short single-line excerpt of a body.
fn excerpt(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return "<empty body>".to_string();
    }
    truncate(&flat, BODY_EXCERPT_CHARS)
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The model's text and token usage from a chat-completions response.
pub fn parse_completion(response: &Value) -> Result<(String, Option<TokenUsage>), String> {
    let server_error = response
        .get("error")
        .map(|e| {
            let msg = e.get("message").and_then(Value::as_str).map(str::to_string);
            format!(
                " (the server said: {})",
                msg.unwrap_or_else(|| e.to_string())
            )
        })
        .unwrap_or_default();
    let choices = response
        .get("choices")
        .ok_or_else(|| format!("no \"choices\"{server_error}"))?
        .as_array()
        .ok_or("\"choices\" is not an array")?;
    let first = choices.first().ok_or("\"choices\" is empty")?;
    let message = first
        .get("message")
        .ok_or("choices[0] has no \"message\"")?;
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    p.get("type")
                        .and_then(Value::as_str)
                        .is_none_or(|t| t == "text")
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            if texts.is_empty() {
                return Err("choices[0].message.content has no text part".to_string());
            }
            texts.concat()
        }
        Some(Value::Null) | None => {
            let refusal = message
                .get("refusal")
                .and_then(Value::as_str)
                .map(|r| format!(" (refusal: {})", truncate(r, BODY_EXCERPT_CHARS)))
                .unwrap_or_default();
            return Err(format!("choices[0].message has no \"content\"{refusal}"));
        }
        Some(_) => {
            return Err(
                "choices[0].message.content is neither a string nor an array of text parts"
                    .to_string(),
            )
        }
    };
    let usage = response.get("usage").and_then(|u| {
        let prompt = u.get("prompt_tokens").and_then(Value::as_u64);
        let completion = u.get("completion_tokens").and_then(Value::as_u64);
        (prompt.is_some() || completion.is_some()).then(|| TokenUsage {
            prompt_tokens: prompt.unwrap_or(0),
            completion_tokens: completion.unwrap_or(0),
        })
    });
    Ok((text, usage))
}

/// The system message: the task protocol and the reply grammar.
pub fn system_prompt(view: &AgentView<'_>) -> String {
    let (w, h) = (view.image.width, view.image.height);
    format!(
        "You operate a web browser to complete a task. Each turn you are given the task, \
a screenshot of the page ({w}x{h} pixels), the page's visible text, what a verifier said \
about your last step, and the episode so far.

Reply with actions, one per line, each written as a call:
click(x, y)      click at pixel (x, y) of the screenshot
hover(x, y)      move the pointer to (x, y)
type(\"text\")     type text into the focused element
press(\"Enter\")   press a key (Enter, Tab, Escape, ArrowDown, ...)
scroll(dx, dy)   scroll by dx, dy pixels
wait(ms)         wait before the next action
answer(\"value\")  report a value the task asks for
stop()           end the episode: the task is done or cannot be done

Coordinates are pixels of the {w}x{h} screenshot, origin at its top-left corner. \
Strings are in double quotes with backslash escapes. Any other line is commentary and \
is ignored; keep it short. click, hover, type, press and scroll use up the browser-action \
budget; wait, answer and stop are free."
    )
}

/// The user message's text part: the instruction, where the episode stands, the
/// verifier's feedback, a compact history and the page's visible text.
pub fn user_text(view: &AgentView<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Task: {}", view.instruction.text);
    let _ = writeln!(out, "Step: {}", view.step);
    let _ = writeln!(out, "Browser actions left: {}", view.budget_left);
    if let Some(fb) = view.feedback {
        let _ = writeln!(
            out,
            "Verifier ({}) on your last step: {} - {}",
            fb.policy, fb.verdict, fb.message
        );
    }
    if !view.history.is_empty() {
        let _ = writeln!(out, "History (oldest first):");
        let skipped = view.history.len().saturating_sub(HISTORY_SHOWN);
        if skipped > 0 {
            let _ = writeln!(out, "  ({skipped} earlier steps not shown)");
        }
        for (i, entry) in view.history.iter().enumerate().skip(skipped) {
            let _ = writeln!(out, "  {}", history_line(i, entry));
        }
    }
    let text = view.observation.text.trim();
    let cut = text.chars().nth(VISIBLE_TEXT_CHARS).is_some();
    let shown = truncate(text, VISIBLE_TEXT_CHARS);
    let _ = writeln!(
        out,
        "Visible text of the page{}:",
        if cut { " (cut)" } else { "" }
    );
    out.push_str(if shown.is_empty() { "<none>" } else { &shown });
    out
}

fn history_line(step: usize, entry: &HistoryEntry) -> String {
    let reply: Vec<&str> = entry
        .reply
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut line = format!(
        "step {step}: reply: {} | tool: {}",
        truncate(&reply.join(" ; "), HISTORY_REPLY_CHARS),
        truncate(
            &entry
                .tool_message
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            HISTORY_TOOL_CHARS
        )
    );
    if let Some(fb) = &entry.feedback {
        let _ = write!(
            line,
            " | verifier ({}): {} - {}",
            fb.policy, fb.verdict, fb.message
        );
    }
    line
}

/// The chat-completions request body for `view`.
pub fn request_body(cfg: &OpenAiConfig, view: &AgentView<'_>) -> Value {
    let image_url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&view.observation.png)
    );
    json!({
        "model": cfg.model,
        "messages": [
            {"role": "system", "content": system_prompt(view)},
            {"role": "user", "content": [
                {"type": "text", "text": user_text(view)},
                {"type": "image_url", "image_url": {"url": image_url}},
            ]},
        ],
        "temperature": cfg.temperature,
        "seed": cfg.request_seed(view.seed),
        "max_tokens": cfg.max_tokens,
        "stream": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::PolicyFeedback;
    use faultline_policies::{Observation, Verdict};
    use faultline_tasks::{Action, Instruction, Size, TaskKind};

    fn fixture() -> (Instruction, Observation, PolicyFeedback, Vec<HistoryEntry>) {
        let instruction = Instruction {
            task: TaskKind::Grid,
            text: "Click the button \"Save\".".to_string(),
        };
        let observation = Observation {
            png: vec![0x89, b'P', b'N', b'G'],
            size: Size::new(640, 400),
            text: "Save  Cancel\nHelp".to_string(),
        };
        let feedback = PolicyFeedback {
            policy: "outcome".to_string(),
            verdict: Verdict::NoChange,
            message: "nothing changed".to_string(),
        };
        let history = vec![HistoryEntry {
            reply: "I will click Save.\nclick(10, 20)".to_string(),
            actions: vec![Action::Click { x: 10.0, y: 20.0 }],
            tool_message: "clicked at (10, 20)".to_string(),
            feedback: Some(feedback.clone()),
        }];
        (instruction, observation, feedback, history)
    }

    fn view<'a>(
        f: &'a (Instruction, Observation, PolicyFeedback, Vec<HistoryEntry>),
    ) -> AgentView<'a> {
        AgentView {
            instruction: &f.0,
            observation: &f.1,
            feedback: Some(&f.2),
            history: &f.3,
            budget_left: 7,
            step: 1,
            image: f.1.size,
            seed: u64::MAX,
        }
    }

    #[test]
    fn defaults_are_valid_and_documented_values() {
        let cfg = OpenAiConfig::default();
        cfg.validate().unwrap();
        assert_eq!(cfg.temperature, 0.0);
        assert_eq!(cfg.seed, None);
        assert_eq!(cfg.max_tokens, 256);
        assert_eq!(cfg.timeout_ms, 60_000);
        assert_eq!(cfg.max_retries, 4);
        assert_eq!(cfg.retry_base_ms, 500);
        assert_eq!(cfg.endpoint(), "http://127.0.0.1:8000/v1/chat/completions");
    }

    #[test]
    fn config_reads_partially_and_rejects_unknown_fields() {
        let cfg: OpenAiConfig =
            toml::from_str("model = \"m\"\nbase_url = \"https://api.example/v1/\"").unwrap();
        assert_eq!(cfg.model, "m");
        assert_eq!(cfg.max_tokens, 256);
        assert_eq!(cfg.endpoint(), "https://api.example/v1/chat/completions");
        let err = toml::from_str::<OpenAiConfig>("api_key = \"sk-x\"").unwrap_err();
        assert!(err.to_string().contains("api_key"), "{err}");
        // Round trip, including the absent seed.
        let text = toml::to_string(&OpenAiConfig::default()).unwrap();
        assert_eq!(
            toml::from_str::<OpenAiConfig>(&text).unwrap(),
            OpenAiConfig::default()
        );
    }

    #[test]
    fn validation_names_the_field() {
        let bad = |edit: fn(&mut OpenAiConfig)| {
            let mut cfg = OpenAiConfig::default();
            edit(&mut cfg);
            cfg.validate().unwrap_err()
        };
        assert!(bad(|c| c.base_url = "127.0.0.1:8000/v1".into()).contains("openai.base_url"));
        assert!(
            bad(|c| c.base_url = "http://h/v1/chat/completions".into()).contains("openai.base_url")
        );
        assert!(bad(|c| c.model = " ".into()).contains("openai.model"));
        assert!(bad(|c| c.temperature = 2.5).contains("openai.temperature"));
        assert!(bad(|c| c.temperature = -0.1).contains("openai.temperature"));
        assert!(bad(|c| c.temperature = f64::NAN).contains("openai.temperature"));
        assert!(bad(|c| c.max_tokens = 0).contains("openai.max_tokens"));
        assert!(bad(|c| c.timeout_ms = 0).contains("openai.timeout_ms"));
        assert!(bad(|c| c.max_retries = 100).contains("openai.max_retries"));
        assert!(bad(|c| c.retry_base_ms = 120_000).contains("openai.retry_base_ms"));
        assert!(bad(|c| c.seed = Some(u64::MAX)).contains("openai.seed"));
        let ok = OpenAiConfig {
            temperature: 2.0,
            seed: Some(7),
            ..OpenAiConfig::default()
        };
        ok.validate().unwrap();
    }

    #[test]
    fn request_carries_text_image_and_sampling_settings() {
        let f = fixture();
        let cfg = OpenAiConfig::default();
        let body = request_body(&cfg, &view(&f));
        assert_eq!(body["model"], "local-model");
        assert_eq!(body["max_tokens"], 256);
        assert_eq!(
            body["seed"],
            i64::MAX as u64,
            "episode seed masked to 63 bits"
        );
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains("640x400") && system.contains("answer(\"value\")"));
        let parts = body["messages"][1]["content"].as_array().unwrap();
        let text = parts[0]["text"].as_str().unwrap();
        for needle in [
            "Task: Click the button \"Save\".",
            "Step: 1",
            "Browser actions left: 7",
            "Verifier (outcome) on your last step: no_change - nothing changed",
            "step 0: reply: I will click Save. ; click(10, 20) | tool: clicked at (10, 20) | verifier (outcome): no_change",
            "Save  Cancel\nHelp",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
        assert_eq!(parts[1]["type"], "image_url");
        assert_eq!(
            parts[1]["image_url"]["url"],
            "data:image/png;base64,iVBORw=="
        );

        let fixed = OpenAiConfig {
            seed: Some(5),
            ..OpenAiConfig::default()
        };
        assert_eq!(request_body(&fixed, &view(&f))["seed"], 5);
    }

    #[test]
    fn only_a_fixed_seed_makes_every_run_of_an_item_the_same_cassette_request() {
        // Two runs of one item differ only in their episode's seed.
        let f = fixture();
        let (run0, run1) = (
            view(&f),
            AgentView {
                seed: 12,
                ..view(&f)
            },
        );
        let key = |cfg: &OpenAiConfig, v: &AgentView<'_>| {
            request_key(&canonical_request(&request_body(cfg, v), v.image))
        };
        let warm = OpenAiConfig {
            temperature: 1.0,
            seed: Some(5),
            ..OpenAiConfig::default()
        };
        assert!(warm.deterministic());
        assert_eq!(key(&warm, &run0), key(&warm, &run1));
        let unseeded = OpenAiConfig::default();
        assert!(!unseeded.deterministic());
        assert_ne!(key(&unseeded, &run0), key(&unseeded, &run1));
    }

    #[test]
    fn long_history_and_text_are_kept_compact() {
        let mut f = fixture();
        let entry = f.3[0].clone();
        f.3 = vec![entry; 20];
        f.1.text = "x".repeat(VISIBLE_TEXT_CHARS + 10);
        let text = user_text(&view(&f));
        assert!(text.contains("(8 earlier steps not shown)"));
        assert!(text.contains("step 19:") && !text.contains("step 7:"));
        assert!(text.contains("Visible text of the page (cut):"));
    }

    #[test]
    fn completions_parse_string_and_part_contents() {
        let (text, usage) = parse_completion(&json!({
            "choices": [{"message": {"content": "click(1, 2)"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}
        }))
        .unwrap();
        assert_eq!(text, "click(1, 2)");
        assert_eq!(
            usage,
            Some(TokenUsage {
                prompt_tokens: 3,
                completion_tokens: 4
            })
        );
        let (text, usage) = parse_completion(&json!({
            "choices": [{"message": {"content": [
                {"type": "text", "text": "a\n"}, {"type": "other"}, {"type": "text", "text": "stop()"}
            ]}}]
        }))
        .unwrap();
        assert_eq!(text, "a\nstop()");
        assert_eq!(usage, None);
    }

    #[test]
    fn malformed_completions_say_what_is_missing() {
        let err = |v: Value| parse_completion(&v).unwrap_err();
        assert!(err(json!({})).contains("no \"choices\""));
        assert!(err(json!({"error": {"message": "overloaded"}})).contains("overloaded"));
        assert!(err(json!({"choices": []})).contains("empty"));
        assert!(err(json!({"choices": [{}]})).contains("no \"message\""));
        assert!(
            err(json!({"choices": [{"message": {"content": null, "refusal": "no"}}]}))
                .contains("no \"content\" (refusal: no)")
        );
        assert!(err(json!({"choices": [{"message": {"content": 5}}]})).contains("neither"));
        assert!(
            err(json!({"choices": [{"message": {"content": [{"type": "image_url"}]}}]}))
                .contains("no text part")
        );
    }

    #[test]
    fn retry_waits_grow_honour_retry_after_and_are_capped() {
        assert_eq!(retry_wait(100, 1, None), Duration::from_millis(100));
        assert_eq!(retry_wait(100, 3, None), Duration::from_millis(400));
        assert_eq!(
            retry_wait(100, 1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(retry_wait(500, 30, None), MAX_RETRY_WAIT);
        assert_eq!(
            retry_wait(0, 1, Some(Duration::from_secs(999))),
            MAX_RETRY_WAIT
        );
        assert_eq!(parse_retry_after(" 1 "), Some(Duration::from_secs(1)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn excerpts_are_short_single_lines() {
        assert_eq!(excerpt("  a\n b  "), "a b");
        assert_eq!(excerpt(""), "<empty body>");
        let long = "é".repeat(500);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), BODY_EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
    }

    #[test]
    fn an_https_client_builds_with_the_ring_provider() {
        // reqwest has no provider of its own here: building a TLS-capable client
        // panics unless ours was installed.
        let cfg = OpenAiConfig {
            base_url: "https://api.openai.com/v1".to_string(),
            ..OpenAiConfig::default()
        };
        let cassette = Arc::new(Cassette::in_memory(
            crate::agent::cassette::CassetteMode::Replay,
        ));
        let agent = OpenAiAgent::new(cfg, cassette).unwrap();
        assert_eq!(agent.endpoint, "https://api.openai.com/v1/chat/completions");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }

    #[test]
    fn the_key_type_redacts_itself() {
        let mut header = HeaderValue::from_static("Bearer sk-secret-1");
        header.set_sensitive(true);
        let key = ApiKey {
            header,
            source: "FAULTLINE_API_KEY",
            secret: "sk-secret-1".to_string(),
        };
        let shown = format!("{key:?} {:?}", key.header);
        assert!(!shown.contains("sk-secret-1"), "{shown}");
        assert_eq!(
            key.scrub("echo: Bearer sk-secret-1"),
            "echo: Bearer <redacted>"
        );
    }
}
