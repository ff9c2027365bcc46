//! What an observation reads of a page: every frame's URL, DOM and text. Same-origin
//! frames are read by one evaluation in the top document; a frame that evaluation cannot
//! reach (another origin) sends the read frame by frame, through each frame's own
//! execution context, so no frame the per-frame read would see is lost. The evaluations
//! are counted on the wire, through the DevTools proxy.

use faultline::engine::browser::{find_chromium, BrowserHandle, Isolation, PoolSize, TrialPage};
use faultline::engine::liveness::Liveness;
use faultline_devtools::sessions::SessionFaults;
use faultline_devtools::{Route, Step, Tamper};
use faultline_sites::FixtureServer;
use faultline_tasks::Size;
use serde_json::Value;
use std::sync::{Arc, Mutex};

const VIEWPORT: Size = Size {
    width: 900,
    height: 600,
};

/// Counts the page's snapshot evaluations: `(whole page, one frame)`.
#[derive(Default)]
struct SnapshotReads(Mutex<(usize, usize)>);

impl SnapshotReads {
    /// The counts since the last take.
    fn take(&self) -> (usize, usize) {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Tamper for SnapshotReads {
    fn command(&self, _: Route<'_>, message: &mut Value) -> Step {
        let expression = message["params"]["expression"].as_str().unwrap_or_default();
        if message["method"] == "Runtime.evaluate" && expression.contains("const walk = ") {
            let mut reads = self.0.lock().unwrap();
            if expression.ends_with("(true)") {
                reads.0 += 1;
            } else {
                reads.1 += 1;
            }
        }
        Step::Relay
    }

    fn message(&self, _: Route<'_>, _: &mut Value) -> Step {
        Step::Relay
    }
}

/// A page of a browser of its own, driven through the DevTools proxy with `tamper` armed
/// on its session, loaded at `path` of a fixture server of its own.
struct OpenPage {
    server: FixtureServer,
    _key: faultline_sites::LedgerKey,
    browser: BrowserHandle,
    pool: faultline::engine::browser::PagePool,
    page: TrialPage,
}

impl OpenPage {
    async fn open<T: Tamper + 'static>(viewport: Size, path: &str, tamper: Arc<T>) -> OpenPage {
        let (server, key) = FixtureServer::start_loopback().await.unwrap();
        let sessions = Arc::new(SessionFaults::default());
        let browser = BrowserHandle::launch_through(
            &find_chromium(None).unwrap(),
            Liveness::default(),
            Some(sessions.clone()),
        )
        .await
        .unwrap();
        let pool = browser.page_pool(
            viewport,
            PoolSize::fixed(1),
            faultline::engine::browser::SiteOrigins::of(&server),
            Isolation::FreshContext,
        );
        let page = pool.take().await.unwrap();
        sessions.arm(page.session_id(), tamper);
        page.goto(&format!("{}{path}", server.base_url()))
            .await
            .unwrap();
        OpenPage {
            server,
            _key: key,
            browser,
            pool,
            page,
        }
    }

    async fn close(self) {
        self.page.close().await;
        drop(self.pool);
        self.browser.close().await;
        self.server.shutdown().await;
    }
}

/// Adds an iframe loading `url` to the top document and waits for it to load; `text`, if
/// given, is written into its body (same origin only).
async fn add_frame(page: &TrialPage, url: &str, text: Option<&str>) {
    let script = format!(
        r#"new Promise((done) => {{
          const f = document.createElement('iframe');
          f.src = {url};
          f.onload = () => {{ const t = {text}; if (t !== null) f.contentDocument.body.innerText = t; done(true); }};
          document.body.appendChild(f);
        }})"#,
        url = serde_json::to_string(url).unwrap(),
        text = serde_json::to_string(&text).unwrap(),
    );
    assert_eq!(page.eval(&script).await.unwrap(), Value::Bool(true));
}

/// Each frame's (URL, text), top first, then by URL.
async fn frames(page: &TrialPage) -> Vec<(String, String)> {
    // The frame tree is learnt from the browser's events: give a new frame's a moment.
    let mut last = Vec::new();
    for _ in 0..50 {
        let state = page.page_state().await.unwrap();
        assert!(state.frames[0].is_top, "the top frame comes first");
        let now: Vec<_> = state
            .frames
            .iter()
            .map(|f| (f.url.clone(), f.text.trim().to_string()))
            .collect();
        if now == last {
            return now;
        }
        last = now;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observation_reads_every_frame_of_either_origin() {
    let reads = Arc::new(SnapshotReads::default());
    let opened = OpenPage::open(VIEWPORT, "/warm?top", reads.clone()).await;
    let base = opened.server.base_url();
    let page = &opened.page;
    page.eval("document.body.innerText = 'top text'; true")
        .await
        .unwrap();

    // Same origin only: the one-evaluation read.
    add_frame(page, &format!("{base}/warm?same"), Some("inner text")).await;
    let same_only = frames(page).await;
    reads.take();
    page.page_state().await.unwrap();
    assert_eq!(reads.take(), (1, 0), "one evaluation reads both frames");
    assert_eq!(
        same_only,
        vec![
            (format!("{base}/warm?top"), "top text".to_string()),
            (format!("{base}/warm?same"), "inner text".to_string()),
        ]
    );

    // `localhost` is another origin than `127.0.0.1`: the top document cannot read that
    // frame, so every frame is read through its own context, and the same-origin frame
    // reads as it did.
    let other = base.replacen("127.0.0.1", "localhost", 1);
    assert_ne!(other, base, "the fixture server is on 127.0.0.1");
    add_frame(page, &format!("{other}/warm?other"), None).await;
    let mixed = frames(page).await;
    assert_eq!(mixed[..2], same_only[..], "{mixed:?}");
    assert_eq!(
        mixed[2..],
        [(format!("{other}/warm?other"), String::new())],
        "the other origin's frame, read through its own context"
    );
    reads.take();
    page.page_state().await.unwrap();
    assert_eq!(
        reads.take(),
        (1, 2),
        "the whole-page read, then each child frame's own"
    );

    opened.close().await;
}

/// Counts the device-metrics overrides sent to the page.
#[derive(Default)]
struct Overrides(Mutex<usize>);

impl Overrides {
    fn take(&self) -> usize {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Tamper for Overrides {
    fn command(&self, _: Route<'_>, message: &mut Value) -> Step {
        if message["method"] == "Emulation.setDeviceMetricsOverride" {
            *self.0.lock().unwrap() += 1;
        }
        Step::Relay
    }

    fn message(&self, _: Route<'_>, _: &mut Value) -> Step {
        Step::Relay
    }
}

/// The screenshot tests' viewport and image: the default's, the image at 3/4 scale.
const SHOT_VIEWPORT: Size = Size::new(1200, 800);
const SHOT_IMAGE: Size = Size::new(900, 600);

/// The red block's corners in CSS pixels, on a 1200 x 800 viewport.
const BLOCK: (f64, f64, f64, f64) = (400.0, 400.0, 800.0, 600.0);

/// Asserts the colour of the image's pixel at `(x, y)`.
#[track_caller]
fn assert_pixel(png: &[u8], (x, y): (u32, u32), rgb: [u8; 3], what: &str) {
    let image = image::load_from_memory(png).unwrap().to_rgb8();
    assert_eq!(image.get_pixel(x, y).0, rgb, "{what}");
}

/// A page draws at its screenshots' scale from the first capture on (so that a capture
/// changes no device metrics and costs one frame, not three), and the page cannot tell:
/// its size, pixel ratio and zoom, where a click lands and which events it gets are those
/// of its own viewport. Captures of an unchanged page are the same image, and a fault's
/// viewport keeps the drawing scale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_draw_at_their_scale_without_the_page_seeing_it() {
    let overrides = Arc::new(Overrides::default());
    let mut opened = OpenPage::open(SHOT_VIEWPORT, "/warm", overrides.clone()).await;
    let page = &mut opened.page;
    let (left, top, right, bottom) = BLOCK;
    page.eval(&format!(
        r#"(() => {{
          document.body.style.margin = '0';
          const b = document.createElement('div');
          b.id = 'block';
          b.style.cssText = 'position:absolute;left:{left}px;top:{top}px;width:{w}px;height:{h}px;background:#ff0000';
          document.body.appendChild(b);
          window.seen = [];
          for (const t of ['resize', 'click']) addEventListener(t, (e) => seen.push(t + ':' + (e.target.id || '')), true);
          return true;
        }})()"#,
        w = right - left,
        h = bottom - top,
    ))
    .await
    .unwrap();
    let metrics = "[innerWidth, innerHeight, devicePixelRatio, visualViewport.scale].join(' ')";
    let before = page.eval(metrics).await.unwrap();
    assert_eq!(before, "1200 800 1 1");

    let first = page.capture(SHOT_IMAGE).await.unwrap();
    assert_eq!(
        overrides.take(),
        1,
        "the first capture sets the drawing scale"
    );
    let second = page.capture(SHOT_IMAGE).await.unwrap();
    let third = page.capture(SHOT_IMAGE).await.unwrap();
    assert_eq!(
        overrides.take(),
        0,
        "later captures change no device metrics"
    );
    assert_eq!(first.png, second.png, "an unchanged page, the same image");
    assert_eq!(second.png, third.png, "an unchanged page, the same image");
    // The image is the whole viewport scaled by 3/4: the block where it is drawn.
    let size = image::load_from_memory(&first.png).unwrap();
    assert_eq!((size.width(), size.height()), (900, 600));
    assert_pixel(&first.png, (450, 375), [255, 0, 0], "inside the block");
    assert_pixel(&first.png, (295, 375), [255, 255, 255], "left of it");
    assert_pixel(&first.png, (450, 455), [255, 255, 255], "below it");

    // The page sees its own viewport: no resize, its metrics as before, and a click at a
    // viewport point lands on what is there.
    assert_eq!(page.eval(metrics).await.unwrap(), before);
    page.click(faultline_tasks::Point::new(600.0, 500.0))
        .await
        .unwrap();
    page.click(faultline_tasks::Point::new(300.0, 500.0))
        .await
        .unwrap();
    assert_eq!(
        page.eval("seen.join(',')").await.unwrap(),
        "click:block,click:",
        "no resize, and each click on what is under it"
    );

    // A fault's viewport: one override, which keeps the drawing scale.
    page.emulate_viewport(Size::new(1000, 700)).await.unwrap();
    assert_eq!(overrides.take(), 1);
    assert_eq!(page.eval(metrics).await.unwrap(), "1000 700 1 1");
    let moved = page.capture(SHOT_IMAGE).await.unwrap();
    assert_eq!(overrides.take(), 0, "the capture under it changes nothing");
    assert_pixel(
        &moved.png,
        (450, 375),
        [255, 0, 0],
        "inside the block, under the fault's viewport",
    );

    opened.close().await;
}

/// Regression: a screenshot's clip is in document coordinates, and it was taken at the
/// document's top whatever the scroll, so a scrolled page was captured as the top of the
/// document with only what overlapped the viewport drawn (a blank image, far enough
/// down). Now it is the viewport where the page is scrolled to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrolled_page_is_captured_where_it_is_scrolled_to() {
    let overrides = Arc::new(Overrides::default());
    let mut opened = OpenPage::open(SHOT_VIEWPORT, "/warm", overrides.clone()).await;
    let page = &mut opened.page;
    // Blue at the document's top, a green band at 1800-1850 and a red block at 2000-2200.
    page.eval(
        r#"(() => {
          document.body.style.cssText = 'margin:0;height:3000px;background:#ffffff';
          const block = (css) => {
            const b = document.createElement('div');
            b.style.cssText = 'position:absolute;' + css;
            document.body.appendChild(b);
          };
          block('left:0;top:0;width:1200px;height:100px;background:#0000ff');
          block('left:0;top:1800px;width:1200px;height:50px;background:#00ff00');
          block('left:400px;top:2000px;width:400px;height:200px;background:#ff0000');
          return true;
        })()"#,
    )
    .await
    .unwrap();
    let top = page.capture(SHOT_IMAGE).await.unwrap();
    assert_pixel(&top.png, (450, 30), [0, 0, 255], "the top, unscrolled");
    overrides.take();

    page.eval("window.scrollTo(0, 1800); window.scrollY")
        .await
        .unwrap();
    let scrolled = page.capture(SHOT_IMAGE).await.unwrap();
    assert_pixel(&scrolled.png, (450, 10), [0, 255, 0], "the band at the top");
    assert_pixel(&scrolled.png, (450, 225), [255, 0, 0], "the block below it");
    assert_pixel(&scrolled.png, (100, 225), [255, 255, 255], "beside it");
    assert_eq!(overrides.take(), 1, "drawn from the new scroll position on");
    let again = page.capture(SHOT_IMAGE).await.unwrap();
    assert_eq!(overrides.take(), 0, "the same position, nothing to change");
    assert_eq!(again.png, scrolled.png);

    page.eval("window.scrollTo(0, 0); window.scrollY")
        .await
        .unwrap();
    let back = page.capture(SHOT_IMAGE).await.unwrap();
    assert_eq!(
        back.png, top.png,
        "back at the top, the same image as before"
    );

    opened.close().await;
}
