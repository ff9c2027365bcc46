//! Recovery episodes end to end with the `openai` agent against an in-process mock of
//! the chat-completions API, on the real fixture sites in a real Chromium, through the
//! `faultline` binary (so its logs can be checked for the key): normal replies, a
//! malformed reply, a 429 then success, a timeout, the budget, a persistent executor
//! fault, a recoverable feedback fault, and a replay from the cassette with zero calls,
//! in the run directory it was recorded in and in another one.

#[path = "support/chat_mock.rs"]
mod chat_mock;
mod common;
use chat_mock::{ChatMock, MockResponse};
use common::files;
use faultline_analysis::db::ResultsDb;
use faultline_tasks::decision::embedded_default;
use faultline_tasks::seed::DEFAULT_ROOT_SEED;
use faultline_tasks::{InfraKind, Layout, TaskKind};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What the mock does for each episode, keyed by the instruction it is asked about.
#[derive(Clone)]
enum Script {
    /// Reply `stop()`.
    Stop,
    /// 429 (Retry-After: 1) on the first request, then `stop()`.
    RateLimitedThenStop,
    /// Never answer.
    Hang,
    /// A reply that names a verb but is broken.
    Malformed,
    /// Two clicks every time, past the budget.
    Spend,
    /// The recorded decision again, three times, then `stop()`.
    RetrySame(String),
}

fn config(dir: &Path, base_url: &str, cassette: &Path, mode: &str) -> std::path::PathBuf {
    let text = format!(
        r#"seed = 1
layouts = 3
tasks = ["grid", "frame"]
policies = ["outcome"]
faults = ["reference"]
[recovery]
enabled = true
layouts = 3
policies = ["unverified"]
runs = 1
agent = "openai"
budget = 3
max_steps = 6
[openai]
base_url = "{base_url}"
model = "mock-vision"
timeout_ms = 1500
max_retries = 1
retry_base_ms = 50
[cassette]
path = "{}"
mode = "{mode}"
"#,
        cassette.display()
    );
    let path = dir.join(format!("recovery-{mode}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn instruction_of(body: &serde_json::Value) -> String {
    serde_json::to_string(body).unwrap()
}

async fn run(cfg: &Path, out: &Path, key: &str) -> (i32, String, String) {
    let o = tokio::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args([
            "run",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env("FAULTLINE_API_KEY", key)
        .env("FAULTLINE_LOG", "debug")
        .output()
        .await
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every file under `dir`, as bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_episodes_end_as_they_should_and_replay_from_the_cassette_with_zero_calls() {
    let set = embedded_default().unwrap();
    let instr = |task, i| {
        Layout::for_root(DEFAULT_ROOT_SEED, task, i)
            .instruction()
            .text
    };
    let grid2 = set
        .find(TaskKind::Grid, DEFAULT_ROOT_SEED, 2)
        .unwrap()
        .reply
        .clone();
    let scripts: Vec<(String, Script)> = vec![
        (instr(TaskKind::Frame, 0), Script::Stop),
        (instr(TaskKind::Frame, 1), Script::RateLimitedThenStop),
        (instr(TaskKind::Frame, 2), Script::Hang),
        (instr(TaskKind::Grid, 0), Script::Malformed),
        (instr(TaskKind::Grid, 1), Script::Spend),
        (instr(TaskKind::Grid, 2), Script::RetrySame(grid2)),
    ];
    let distinct: std::collections::BTreeSet<&String> = scripts.iter().map(|(i, _)| i).collect();
    assert_eq!(
        distinct.len(),
        scripts.len(),
        "every scripted layout has its own instruction"
    );
    // Requests seen per instruction, to script multi-step episodes.
    let seen: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let seen2 = seen.clone();
    let mock = ChatMock::start(move |body, _| {
        let text = instruction_of(body);
        // The instruction appears JSON-escaped inside the serialized body.
        let (instruction, script) = scripts
            .iter()
            .find(|(i, _)| {
                let escaped = serde_json::to_string(i).unwrap();
                text.contains(&escaped[1..escaped.len() - 1])
            })
            .expect("a scripted instruction")
            .clone();
        let n = {
            let mut s = seen2.lock().unwrap();
            let n = s.entry(instruction).or_insert(0);
            *n += 1;
            *n
        };
        match script {
            Script::Stop => MockResponse::reply("The row is selected.\nstop()"),
            Script::RateLimitedThenStop if n == 1 => MockResponse::Status {
                code: 429,
                retry_after_s: Some(1),
                body: "slow down".into(),
            },
            Script::RateLimitedThenStop => MockResponse::reply("stop()"),
            Script::Hang => MockResponse::Hang,
            Script::Malformed => MockResponse::reply("Let me click it.\nclick(450"),
            Script::Spend => MockResponse::reply("click(10, 10)\nclick(20, 20)"),
            Script::RetrySame(reply) if n <= 3 => MockResponse::reply(reply),
            Script::RetrySame(_) => MockResponse::reply("stop()"),
        }
    })
    .await
    .unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let key = format!("sk-test-{:016x}", rand::random::<u64>());
    let cassette = tmp.path().join("cassette.jsonl");
    let first = tmp.path().join("first");
    let cfg = config(tmp.path(), &mock.base_url(), &cassette, "record");
    let (code, stdout, stderr) = run(&cfg, &first, &key).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("recovery:  6 episodes run"), "{stdout}");
    let calls = mock.requests();
    assert!(calls >= 8, "{calls} requests");
    // The key went to the mock as a bearer token and nowhere else.
    assert!(mock
        .authorizations()
        .iter()
        .all(|a| a.as_deref() == Some(format!("Bearer {key}").as_str())));
    assert!(
        !stderr.contains(&key) && !stdout.contains(&key),
        "the key is in the logs"
    );
    for (file, bytes) in files(&first)
        .into_iter()
        .map(|(p, b)| (first.join(p).display().to_string(), b))
        .chain([(
            cassette.display().to_string(),
            std::fs::read(&cassette).unwrap(),
        )])
    {
        let found = bytes.windows(key.len()).any(|w| w == key.as_bytes());
        assert!(!found, "the key is in {file}");
    }

    let db = ResultsDb::open_read_only(&first.join("results.sqlite")).unwrap();
    let by_layout: BTreeMap<(String, u32), faultline_analysis::db::EpisodeRow> = db
        .episodes()
        .unwrap()
        .into_iter()
        .map(|e| ((e.task.to_string(), e.layout_index), e))
        .collect();
    let ep = |task: &str, i: u32| &by_layout[&(task.to_string(), i)];
    // A feedback-only fault: the click worked, the agent stops, the ledger says success.
    assert_eq!(
        (ep("frame", 0).stop_reason.name(), ep("frame", 0).success),
        ("stopped", true)
    );
    assert_eq!(ep("frame", 0).model_calls, 1);
    assert_eq!(ep("frame", 0).prompt_tokens, Some(100));
    // 429 then success: two calls for one reply.
    assert_eq!(
        (
            ep("frame", 1).stop_reason.name(),
            ep("frame", 1).model_calls
        ),
        ("stopped", 2)
    );
    // A model that never answers: no working endpoint is an infrastructure failure
    // (agent_endpoint), listed with its reason, not an episode scored as a failed
    // recovery; a resumed run tries it again.
    assert!(!by_layout.contains_key(&("frame".to_string(), 2)));
    let infra = db.infra_errors().unwrap();
    let hang = infra
        .iter()
        .find(|r| r.item_key.contains("/frame/") && r.item_key.ends_with("/002"))
        .expect("the hung episode is listed");
    assert_eq!(hang.kind, InfraKind::AgentEndpoint.into());
    assert!(hang.reason.contains("tim"), "{}", hang.reason);
    // A malformed reply ends the episode as a parse error, stored with its reason.
    let bad = ep("grid", 0);
    assert_eq!(bad.stop_reason.name(), "parse_error");
    assert!(
        bad.error.as_deref().unwrap_or("").contains("line 2"),
        "{:?}",
        bad.error
    );
    let steps = db.episode_steps(&bad.episode_key).unwrap();
    assert_eq!(steps.last().unwrap().reply, "Let me click it.\nclick(450");
    // The budget: one two-click reply (2 of 3), then a second one is refused.
    let spend = ep("grid", 1);
    assert_eq!(
        (spend.stop_reason.name(), spend.browser_actions),
        ("over_budget", 2)
    );
    // A persistent executor fault: the same reply three times never succeeds.
    let same = ep("grid", 2);
    assert!(!same.success, "{}", same.truth_detail);
    assert_eq!(same.browser_actions, 3);
    assert_eq!(same.stop_reason.name(), "stopped");

    // Replay: another run from the cassette alone, against a mock that must not be called.
    let silent = ChatMock::start(|_, _| MockResponse::status(500, "must not be called"))
        .await
        .unwrap();
    let second = tmp.path().join("second");
    let cfg = config(tmp.path(), &silent.base_url(), &cassette, "replay");
    let (code, stdout, stderr) = run(&cfg, &second, &key).await;
    // The hung episode was never recorded: its replay misses the cassette, and a run
    // that missed is not a finished one.
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("cassette:  missed 1 request(s) in replay mode"),
        "{stdout}"
    );
    assert!(
        stderr.contains("the agent's cassette missed 1 request(s) in replay mode"),
        "{stderr}"
    );
    assert_eq!(silent.requests(), 0, "replay made model calls");
    assert_eq!(
        std::fs::read_to_string(first.join("recovery.csv")).unwrap(),
        std::fs::read_to_string(second.join("recovery.csv")).unwrap(),
        "the replayed run gives the same recovery table"
    );
    let replayed = ResultsDb::open_read_only(&second.join("results.sqlite")).unwrap();
    assert!(replayed
        .episodes()
        .unwrap()
        .iter()
        .all(|e| e.model_calls == 0));
}

/// The episodes of a run: key -> (stop reason, success, browser actions, steps, model calls).
fn outcomes(run: &Path) -> BTreeMap<String, (String, bool, u32, usize, u32)> {
    let db = ResultsDb::open_read_only(&run.join("results.sqlite")).unwrap();
    db.episodes()
        .unwrap()
        .into_iter()
        .map(|e| {
            let steps = db.episode_steps(&e.episode_key).unwrap().len();
            (
                e.episode_key.clone(),
                (
                    e.stop_reason.name().to_string(),
                    e.success,
                    e.browser_actions,
                    steps,
                    e.model_calls,
                ),
            )
        })
        .collect()
}

/// Regression: the `generic` policy told the agent "The page navigated to
/// http://127.0.0.1:<port>/s/<scope>/search/results…", so a cassette recorded in one run
/// missed in any other (another port, other scopes), and the replay exited 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cassette_recorded_in_one_run_directory_replays_in_another_with_zero_calls() {
    // One free action, so the policy's message on the search is in the history too;
    // then stop.
    let mock = ChatMock::start(|body, _| {
        let text = serde_json::to_string(body).unwrap();
        if text.contains("Step: 1\\n") {
            MockResponse::reply("wait(50)")
        } else {
            MockResponse::reply("stop()")
        }
    })
    .await
    .unwrap();
    let config = |dir: &Path, base_url: &str, mode: &str, cassette: Option<&Path>| {
        let path = dir.join(format!("portable-{mode}.toml"));
        let cassette = cassette.map_or(String::new(), |c| format!("path = \"{}\"\n", c.display()));
        let text = format!(
            r#"seed = 1
layouts = 1
tasks = ["search", "grid"]
policies = ["generic"]
faults = ["parse.token_leak"]
[recovery]
enabled = true
layouts = 1
faults = ["parse.token_leak", "semantic.injected_instruction"]
policies = ["generic", "outcome"]
runs = 1
agent = "openai"
budget = 3
max_steps = 6
[openai]
base_url = "{base_url}"
model = "mock-vision"
timeout_ms = 5000
max_retries = 1
retry_base_ms = 50
[cassette]
{cassette}mode = "{mode}"
"#
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let tmp = tempfile::tempdir().unwrap();
    let key = format!("sk-test-{:016x}", rand::random::<u64>());
    // Recorded into the first run's own directory (the default cassette path).
    let first = tmp.path().join("first");
    let cfg = config(tmp.path(), &mock.base_url(), "record", None);
    let (code, stdout, stderr) = run(&cfg, &first, &key).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let recorded = outcomes(&first);
    assert!(
        recorded
            .keys()
            .any(|k| k.starts_with("recovery/search/parse.token_leak/generic/")),
        "{recorded:?}"
    );
    assert!(recorded.values().all(|o| o.4 > 0), "{recorded:?}");

    // Replayed by a run in another directory: another fixture server port, other scopes.
    let silent = ChatMock::start(|_, _| MockResponse::status(500, "must not be called"))
        .await
        .unwrap();
    let second = tmp.path().join("elsewhere").join("second");
    let cassette = first.join("cassette.jsonl");
    let cfg = config(tmp.path(), &silent.base_url(), "replay", Some(&cassette));
    let (code, stdout, stderr) = run(&cfg, &second, &key).await;
    assert_eq!(silent.requests(), 0, "replay made model calls");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let replayed = outcomes(&second);
    let without_calls = |o: &BTreeMap<String, (String, bool, u32, usize, u32)>| {
        o.iter()
            .map(|(k, v)| (k.clone(), (v.0.clone(), v.1, v.2, v.3)))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(
        without_calls(&recorded),
        without_calls(&replayed),
        "the replay gives the same episodes"
    );
    assert!(replayed.values().all(|o| o.4 == 0), "{replayed:?}");
    assert_eq!(
        std::fs::read_to_string(first.join("recovery.csv")).unwrap(),
        std::fs::read_to_string(second.join("recovery.csv")).unwrap(),
    );

    // The prompt never named the run; the agent was told (and the run stored) the path.
    let bodies = mock.bodies();
    assert!(!bodies.is_empty());
    for body in bodies {
        // The text parts (the screenshot's base64 may hold any characters).
        let user = body["messages"][1]["content"][0]["text"].as_str().unwrap();
        let system = body["messages"][0]["content"].as_str().unwrap();
        for text in [user, system] {
            assert!(
                !text.contains("127.0.0.1") && !text.contains("/s/"),
                "{text}"
            );
        }
    }
    let db = ResultsDb::open_read_only(&second.join("results.sqlite")).unwrap();
    let (search, _) = replayed
        .iter()
        .find(|(k, _)| k.starts_with("recovery/search/parse.token_leak/generic/"))
        .unwrap();
    let message = db.episode_steps(search).unwrap()[0]
        .policy_message
        .clone()
        .unwrap_or_default();
    assert!(
        message.starts_with("The page navigated to /search/results?q="),
        "{message}"
    );
}
