//! The `openai` agent against the in-process chat mock: protocol, retries, timeouts,
//! the cassette, and that the API key never leaks. Loopback only, no Chromium.
//!
//! The API key is read from process-global environment variables, so every test holds
//! `ENV` while it builds agents.

use faultline::agent::cassette::{Cassette, CassetteMode};
#[path = "support/chat_mock.rs"]
mod chat_mock;
use chat_mock::{ChatMock, MockResponse};
use faultline::agent::openai::{OpenAiAgent, OpenAiConfig, API_KEY_VARS};
use faultline::agent::{
    Agent, AgentError, AgentReply, AgentView, HistoryEntry, PolicyFeedback, TokenUsage,
};
use faultline_policies::{Observation, Verdict};
use faultline_tasks::{Instruction, Size, TaskKind};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, MutexGuard};

static ENV: Mutex<()> = Mutex::const_new(());

/// Takes the env lock and sets the key (or clears both variables).
async fn env_key(key: Option<&str>) -> MutexGuard<'static, ()> {
    let guard = ENV.lock().await;
    for var in API_KEY_VARS {
        std::env::remove_var(var);
    }
    if let Some(key) = key {
        std::env::set_var("FAULTLINE_API_KEY", key);
    }
    guard
}

fn fake_key() -> String {
    format!(
        "sk-test-{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

struct Scene {
    instruction: Instruction,
    observation: Observation,
    feedback: PolicyFeedback,
    history: Vec<HistoryEntry>,
}

fn scene(png: &[u8]) -> Scene {
    Scene {
        instruction: Instruction {
            task: TaskKind::Chart,
            text: "Hover the bar for \"Q3\" and report the value its tooltip shows.".into(),
        },
        observation: Observation {
            png: png.to_vec(),
            size: Size::new(800, 500),
            text: "Quarterly revenue Q1 Q2 Q3 Q4".into(),
        },
        feedback: PolicyFeedback {
            policy: "outcome".into(),
            verdict: Verdict::NoChange,
            message: "no tooltip is shown".into(),
        },
        history: vec![HistoryEntry {
            reply: "hover(400, 250)".into(),
            actions: vec![faultline_tasks::Action::Hover { x: 400.0, y: 250.0 }],
            tool_message: "hovered at (400, 250)".into(),
            feedback: None,
        }],
    }
}

fn view(s: &Scene, seed: u64) -> AgentView<'_> {
    AgentView {
        instruction: &s.instruction,
        observation: &s.observation,
        feedback: Some(&s.feedback),
        history: &s.history,
        budget_left: 5,
        step: 1,
        image: s.observation.size,
        seed,
    }
}

fn config(mock: &ChatMock) -> OpenAiConfig {
    OpenAiConfig {
        base_url: mock.base_url(),
        model: "mock-model".into(),
        timeout_ms: 5_000,
        max_retries: 2,
        retry_base_ms: 10,
        ..OpenAiConfig::default()
    }
}

fn agent(cfg: OpenAiConfig) -> OpenAiAgent {
    OpenAiAgent::new(cfg, Arc::new(Cassette::in_memory(CassetteMode::Auto))).unwrap()
}

async fn reply(agent: &OpenAiAgent, seed: u64) -> Result<AgentReply, AgentError> {
    let s = scene(b"\x89PNG fake screenshot");
    agent.reply(view(&s, seed)).await
}

#[tokio::test]
async fn a_normal_reply_is_returned_with_usage_and_the_request_carries_text_and_image() {
    let key = fake_key();
    let _env = env_key(Some(&key)).await;
    let mock = ChatMock::scripted(vec![MockResponse::Reply {
        content: "The tooltip reads 42.\nanswer(\"42\")".into(),
        prompt_tokens: 812,
        completion_tokens: 9,
    }])
    .await
    .unwrap();
    let agent = agent(config(&mock));
    assert_eq!(agent.name(), "openai");
    assert_eq!(agent.api_key_source(), Some("FAULTLINE_API_KEY"));

    let got = reply(&agent, 7).await.unwrap();
    assert_eq!(got.text, "The tooltip reads 42.\nanswer(\"42\")");
    assert_eq!(
        got.usage,
        Some(TokenUsage {
            prompt_tokens: 812,
            completion_tokens: 9
        })
    );
    assert_eq!(got.model_calls, 1);

    assert_eq!(mock.requests(), 1);
    let body = &mock.bodies()[0];
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["seed"], 7);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["messages"][0]["role"], "system");
    let parts = body["messages"][1]["content"].as_array().unwrap();
    let text = parts[0]["text"].as_str().unwrap();
    assert!(text.contains("Hover the bar for \"Q3\""), "{text}");
    assert!(text.contains("Browser actions left: 5"), "{text}");
    assert!(text.contains("no_change - no tooltip is shown"), "{text}");
    assert!(text.contains("Quarterly revenue"), "{text}");
    assert_eq!(parts[1]["type"], "image_url");
    let url = parts[1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,"), "{url}");
    assert_eq!(mock.authorizations(), vec![Some(format!("Bearer {key}"))]);
}

#[tokio::test]
async fn without_a_key_no_authorization_header_is_sent() {
    let _env = env_key(None).await;
    let mock = ChatMock::scripted(vec![MockResponse::reply("stop()")])
        .await
        .unwrap();
    let agent = agent(config(&mock));
    assert_eq!(agent.api_key_source(), None);
    assert_eq!(reply(&agent, 1).await.unwrap().text, "stop()");
    assert_eq!(mock.authorizations(), vec![None]);
}

#[tokio::test]
async fn a_malformed_200_is_a_clear_error_and_not_retried() {
    let _env = env_key(None).await;
    for (body, expected) in [
        ("<html>gateway</html>", "not JSON"),
        ("{\"choices\": []}", "\"choices\" is empty"),
        ("{\"object\": \"chat.completion\"}", "no \"choices\""),
        (
            "{\"choices\": [{\"message\": {\"role\": \"assistant\"}}]}",
            "no \"content\"",
        ),
    ] {
        let mock = ChatMock::scripted(vec![MockResponse::Malformed(body.into())])
            .await
            .unwrap();
        let err = reply(&agent(config(&mock)), 1).await.unwrap_err().message;
        assert!(err.contains("malformed response"), "{err}");
        assert!(err.contains(expected), "{body}: {err}");
        assert!(err.contains("not retried"), "{err}");
        assert_eq!(mock.requests(), 1, "{body}");
    }
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_retried() {
    let _env = env_key(None).await;
    let mock = ChatMock::scripted(vec![
        MockResponse::Status {
            code: 429,
            retry_after_s: Some(1),
            body: "{\"error\": {\"message\": \"rate limited\"}}".into(),
        },
        MockResponse::reply("click(1, 2)"),
    ])
    .await
    .unwrap();
    let started = Instant::now();
    let got = reply(&agent(config(&mock)), 1).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After honoured"
    );
    assert_eq!(got.text, "click(1, 2)");
    assert_eq!(got.model_calls, 2);
    assert_eq!(mock.requests(), 2);
}

#[tokio::test]
async fn a_500_is_retried() {
    let _env = env_key(None).await;
    let mock = ChatMock::scripted(vec![
        MockResponse::status(500, "internal error"),
        MockResponse::reply("stop()"),
    ])
    .await
    .unwrap();
    let got = reply(&agent(config(&mock)), 1).await.unwrap();
    assert_eq!((got.text.as_str(), got.model_calls), ("stop()", 2));
    assert_eq!(mock.requests(), 2);
}

#[tokio::test]
async fn other_4xx_fail_at_once_and_persistent_5xx_give_up_after_every_attempt() {
    let _env = env_key(None).await;
    let mock = ChatMock::scripted(vec![MockResponse::status(
        404,
        "{\"error\": {\"message\": \"model mock-model not found\"}}",
    )])
    .await
    .unwrap();
    let err = reply(&agent(config(&mock)), 1).await.unwrap_err().message;
    assert!(
        err.contains("HTTP 404") && err.contains("model mock-model not found"),
        "{err}"
    );
    assert!(err.contains("attempt 1 of 3; not retried"), "{err}");
    assert_eq!(mock.requests(), 1);

    let mock = ChatMock::start(|_, _| MockResponse::status(503, "overloaded, try later"))
        .await
        .unwrap();
    let err = reply(&agent(config(&mock)), 1).await.unwrap_err().message;
    assert!(err.contains("gave up after 3 attempts"), "{err}");
    assert!(
        err.contains("HTTP 503") && err.contains("overloaded, try later"),
        "{err}"
    );
    assert_eq!(mock.requests(), 3);
}

#[tokio::test]
async fn a_hanging_server_times_out_within_a_bounded_time() {
    let _env = env_key(None).await;
    let mock = ChatMock::start(|_, _| MockResponse::Hang).await.unwrap();
    let cfg = OpenAiConfig {
        timeout_ms: 200,
        max_retries: 1,
        ..config(&mock)
    };
    let started = Instant::now();
    let err = reply(&agent(cfg), 1).await.unwrap_err().message;
    let took = started.elapsed();
    assert!(err.contains("timed out after 200 ms"), "{err}");
    assert!(err.contains("gave up after 2 attempts"), "{err}");
    assert!(took >= Duration::from_millis(400), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(mock.requests(), 2);
}

#[tokio::test]
async fn dropping_the_mock_releases_a_hung_request() {
    let _env = env_key(None).await;
    let mock = ChatMock::start(|_, _| MockResponse::Hang).await.unwrap();
    let cfg = OpenAiConfig {
        timeout_ms: 30_000,
        max_retries: 0,
        ..config(&mock)
    };
    let agent = agent(cfg);
    let started = Instant::now();
    let pending = reply(&agent, 1);
    let drop_soon = async {
        while mock.requests() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(mock);
    };
    let (result, ()) = tokio::join!(pending, drop_soon);
    assert!(result.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    let _env = env_key(None).await;
    // A port that was just free: nothing listens there any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = OpenAiConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        max_retries: 1,
        retry_base_ms: 10,
        ..OpenAiConfig::default()
    };
    let err = reply(&agent(cfg), 1).await.unwrap_err();
    // An unreachable endpoint is the infrastructure's failure, not the agent's.
    assert_eq!(
        err.infra,
        Some(faultline::engine::liveness::InfraKind::AgentEndpoint)
    );
    let err = err.message;
    assert!(err.contains("connection failed"), "{err}");
    assert!(err.contains("gave up after 2 attempts"), "{err}");
}

#[tokio::test]
async fn a_recorded_cassette_replays_identically_without_the_network() {
    let _env = env_key(None).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cassette.jsonl");

    let mock = ChatMock::scripted(vec![
        MockResponse::reply("hover(400, 250)"),
        MockResponse::reply("answer(\"42\")"),
    ])
    .await
    .unwrap();
    let recorder = OpenAiAgent::new(
        config(&mock),
        Arc::new(Cassette::open(&path, CassetteMode::Record).unwrap()),
    )
    .unwrap();
    let first = reply(&recorder, 1).await.unwrap();
    let second = reply(&recorder, 2).await.unwrap();
    assert_eq!(mock.requests(), 2);
    assert_eq!((first.model_calls, second.model_calls), (1, 1));
    // The same request again is served from the cassette.
    let again = reply(&recorder, 1).await.unwrap();
    assert_eq!(
        (again.text.as_str(), again.model_calls),
        ("hover(400, 250)", 0)
    );
    assert_eq!(mock.requests(), 2);
    drop(recorder);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(
        text.contains("<image/png 800x500>") && !text.contains("base64"),
        "{text}"
    );

    // A server that must not be reached.
    let forbidden = ChatMock::start(|_, n| {
        MockResponse::status(500, format!("replay reached the network (request {n})"))
    })
    .await
    .unwrap();
    let player = OpenAiAgent::new(
        config(&forbidden),
        Arc::new(Cassette::open(&path, CassetteMode::Replay).unwrap()),
    )
    .unwrap();
    // A screenshot that differs in its pixels still matches: the key ignores them.
    let s = scene(b"\x89PNG slightly different anti-aliasing");
    let replayed_first = player.reply(view(&s, 1)).await.unwrap();
    let replayed_second = player.reply(view(&s, 2)).await.unwrap();
    assert_eq!(forbidden.requests(), 0);
    assert_eq!(replayed_first.text, first.text);
    assert_eq!(replayed_first.usage, first.usage);
    assert_eq!(replayed_second.text, second.text);
    assert_eq!(
        (replayed_first.model_calls, replayed_second.model_calls),
        (0, 0)
    );

    // A replay miss is an error, still without a request.
    let err = reply(&player, 3).await.unwrap_err();
    assert_eq!(
        err.infra,
        Some(faultline::engine::liveness::InfraKind::AgentEndpoint)
    );
    // What the run counts to report its misses and fail.
    assert!(
        faultline::agent::cassette::is_replay_miss(&err.message),
        "{err}"
    );
    let err = err.message;
    assert!(err.contains("has no entry for this request"), "{err}");
    assert!(err.contains("cassette.jsonl"), "{err}");
    assert_eq!(forbidden.requests(), 0);
}

#[tokio::test]
async fn an_empty_replay_cassette_makes_no_request() {
    let _env = env_key(None).await;
    let mock = ChatMock::scripted(vec![MockResponse::reply("stop()")])
        .await
        .unwrap();
    let agent = OpenAiAgent::new(
        config(&mock),
        Arc::new(Cassette::in_memory(CassetteMode::Replay)),
    )
    .unwrap();
    let err = reply(&agent, 1).await.unwrap_err().message;
    assert!(err.contains("has no entry for this request"), "{err}");
    assert!(err.contains("mode replay"), "{err}");
    assert_eq!(mock.requests(), 0);
}

#[tokio::test]
async fn concurrent_replies_share_one_cassette_file() {
    let _env = env_key(None).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.jsonl");
    let mock =
        ChatMock::start(|body, _| MockResponse::reply(format!("answer(\"{}\")", body["seed"])))
            .await
            .unwrap();
    let agent = OpenAiAgent::new(
        config(&mock),
        Arc::new(Cassette::open(&path, CassetteMode::Auto).unwrap()),
    )
    .unwrap();
    // Seeds 0..4 twice each: eight replies, at most eight requests, four entries.
    let replies = futures::future::join_all((0..8).map(|i| reply(&agent, i % 4))).await;
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(r.as_ref().unwrap().text, format!("answer(\"{}\")", i % 4));
    }
    drop(agent);
    let reloaded = Cassette::open(&path, CassetteMode::Replay).unwrap();
    assert_eq!(reloaded.len(), 4);
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 4);
}

#[tokio::test]
async fn the_api_key_appears_nowhere() {
    let key = fake_key();
    let _env = env_key(Some(&key)).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cassette.jsonl");
    // A reply, a malformed 200 and a 401: the key is sent, and is in no message.
    let mock = ChatMock::start(|_, n| match n {
        0 => MockResponse::reply("stop()"),
        1 => MockResponse::Malformed(String::new()),
        _ => MockResponse::status(401, String::new()),
    })
    .await
    .unwrap();
    let agent = OpenAiAgent::new(
        config(&mock),
        Arc::new(Cassette::open(&path, CassetteMode::Record).unwrap()),
    )
    .unwrap();
    let mut seen = vec![format!("{agent:?}")];
    seen.push(format!("{:?}", reply(&agent, 1).await.unwrap()));
    seen.push(reply(&agent, 2).await.unwrap_err().message);
    seen.push(reply(&agent, 3).await.unwrap_err().message);
    assert_eq!(mock.authorizations().len(), 3);
    assert!(mock
        .authorizations()
        .iter()
        .all(|a| a.as_deref() == Some(format!("Bearer {key}").as_str())));

    // A server that echoes the key back in every kind of answer: it is scrubbed.
    let leaky = ChatMock::start({
        let key = key.clone();
        move |_, n| match n {
            0 => MockResponse::reply(format!("your key is {key}")),
            1 => MockResponse::Malformed(format!("{{\"error\": \"bad key {key}\"}}")),
            _ => MockResponse::status(401, format!("Incorrect API key provided: {key}")),
        }
    })
    .await
    .unwrap();
    let leaky_agent = OpenAiAgent::new(
        config(&leaky),
        Arc::new(Cassette::open(&path, CassetteMode::Record).unwrap()),
    )
    .unwrap();
    let echoed = reply(&leaky_agent, 11).await.unwrap();
    assert_eq!(echoed.text, "your key is <redacted>");
    seen.push(format!("{echoed:?}"));
    seen.push(reply(&leaky_agent, 12).await.unwrap_err().message);
    let unauthorized = reply(&leaky_agent, 13).await.unwrap_err().message;
    assert!(unauthorized.contains("HTTP 401") && unauthorized.contains("<redacted>"));
    seen.push(unauthorized);
    seen.push(format!("{leaky_agent:?}"));
    drop((agent, leaky_agent));
    seen.push(std::fs::read_to_string(&path).unwrap());

    for text in &seen {
        assert!(!text.contains(&key), "the key leaked into: {text}");
    }
}
