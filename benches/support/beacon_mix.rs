//! Beacons as people's browsers send them, for wrk: a person's mix of kinds (view 40%, time
//! 25%, scroll 20%, click 15%) from 2,000 visitors, each with a cookie and an address of its own
//! (`X-Forwarded-For`, so the server under test trusts loopback as its proxy), to random pages.
//! Each beacon carries a page load id the benchmark makes up, as the load generator of issue
//! 50's figures did: lps keeps every such beacon, as `automated` (no page load it served has
//! the id), so what is measured is taking, classifying and storing beacons, not counting them.
//!
//! Each wrk run sends from 2,000 visitors of its own ([`visitors_of_a_run`]): lps drops what one
//! address sends past 2,000 beacons an hour (`BEACONS_PER_ADDRESS`), and on a fast machine the
//! benchmark's runs together sent more than that from one set of 2,000 addresses (4,081,724
//! acknowledged, 4,000,000 stored), so it waited for beacons lps had rightly dropped.
//!
//! Also how many beacons a database holds, read as the largest event id (a count would scan
//! the table, on the CPU the server runs on, every time it is asked).

#![allow(dead_code)] // each benchmark uses its part

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Visitors in the mix, each with its cookie and address.
pub const VISITORS: usize = 2_000;
/// Distinct beacons the script cycles through (about 20 MB of Lua strings).
const REQUESTS: usize = 50_000;

/// The `n`th beacon's body, for the page at index `page`.
pub fn body(n: usize, page: usize) -> serde_json::Value {
    let mut body = match n % 20 {
        0..8 => serde_json::json!({"type": "view"}),
        8..13 => serde_json::json!({"type": "time", "seconds": 5 + n % 60}),
        13..17 => serde_json::json!({"type": "scroll"}),
        _ => serde_json::json!({"type": "click", "target": "https://cal.example/book"}),
    };
    // One page load per visitor and page.
    body["view_id"] = serde_json::json!(format!("{:016x}{page:016x}", n % VISITORS));
    body["interaction"] = serde_json::json!("pointer");
    body
}

/// The `n`th beacon's page, among `pages`.
pub fn page(n: usize, pages: usize) -> usize {
    n.wrapping_mul(7_919) % pages
}

/// Sets of visitors the script can send from: a set's addresses are 10.(A + 8 x set).B.1, and A
/// is below 8 for 2,000 visitors.
const VISITOR_SETS: usize = 32;

/// The next wrk run's set of visitors, one no run used before it (after [`VISITOR_SETS`] runs,
/// the first set's again): each run sends at most a few hundred beacons an address, well
/// within the address's budget, where the same visitors in every run reached it.
fn visitors_of_a_run() -> String {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    (RUNS.fetch_add(1, Ordering::Relaxed) % VISITOR_SETS).to_string()
}

/// wrk's arguments for one run of `script` (written by [`write_wrk_script`]), from a set of
/// visitors of its own ([`visitors_of_a_run`]); `wrk_run` passes what follows "--" to the
/// script.
pub fn wrk_args(script: &Path) -> [String; 4] {
    [
        "-s".to_owned(),
        script.display().to_string(),
        "--".to_owned(),
        visitors_of_a_run(),
    ]
}

/// The `n`th beacon's visitor in the first set: its cookie and its address (10.A.B.1: a network
/// of its own, so no network's budget is reached). The script moves both to the run's set.
pub fn visitor(n: usize) -> (String, String) {
    let v = n % VISITORS;
    (
        format!("lps_vid={v:032x}"),
        format!("10.{}.{}.1", v / 256, v % 256),
    )
}

/// Writes a wrk script sending the mix to the pages at `paths` (each `/p/{campaign}/{lead}`),
/// every request made once when a thread starts and then sent in turn. Returns the script.
pub fn write_wrk_script(dir: &Path, paths: &[String], user_agent: &str) -> PathBuf {
    let list = dir.join("beacons.txt");
    let script = dir.join("beacons.lua");
    let mut lines = String::new();
    for n in 0..REQUESTS {
        let page = page(n, paths.len());
        let (cookie, address) = visitor(n);
        lines.push_str(&format!(
            "{}/beacon\t{cookie}\t{address}\t{}\n",
            paths[page],
            body(n, page)
        ));
    }
    std::fs::write(&list, lines).unwrap();
    std::fs::write(
        &script,
        format!(
            r#"local requests = {{}}
local n = 0
function init(args)
  -- The run's set of visitors (`visitors_of_a_run`): its cookie ids start with the set's
  -- number, its addresses' second byte is moved by 8 a set.
  local set = tonumber(args[1] or "0")
  for line in io.lines("{list}") do
    local path, cookie, address, body = line:match("([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)")
    local a, b = address:match("^10%.(%d+)%.(%d+)%.1$")
    address = string.format("10.%d.%s.1", tonumber(a) + 8 * set, b)
    cookie = string.format("lps_vid=%02x", set) .. cookie:sub(11)
    requests[#requests + 1] = wrk.format("POST", path, {{
      ["Host"] = wrk.host .. ":" .. wrk.port,
      ["Content-Type"] = "text/plain;charset=UTF-8",
      ["User-Agent"] = "{user_agent}",
      ["Cookie"] = cookie,
      ["X-Forwarded-For"] = address,
    }}, body)
  end
  n = math.random(#requests)
end
request = function()
  n = n % #requests + 1
  return requests[n]
end
"#,
            list = list.display(),
        ),
    )
    .unwrap();
    script
}

/// The beacons `database` holds so far, as its largest event id (events are only appended while
/// a benchmark runs, so the difference of two readings is what was stored between them).
pub async fn stored(database: &sqlx::AnyPool) -> i64 {
    sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM page_events")
        .fetch_one(database)
        .await
        .expect("the largest event id")
}

/// A pool on the database at `url`, for [`stored`].
pub async fn connect(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::pool::PoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .expect("the benchmark's database")
}
