//! What an anonymous visitor can make lps spend, route by route: each visitor route sent the
//! worst input the documented limits allow, its server CPU and wall time printed (for the
//! note) and held under a bound far above a usual request and far below an outage. A cost that
//! grows with a stranger's input (the class of the link-preview card's quadratic fitting) is
//! found here, at the longest input the docs allow, not at typical ones.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// The CPU time the process has used so far (user and system), from `/proc`.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's closing parenthesis; utime and stime are 14th and 15th.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // Clock ticks of 1/100 s (Linux's USER_HZ).
    Duration::from_millis(ticks * 10)
}

/// Runs `requests` (each one request of the surface) and prints and answers the server's CPU
/// and the wall time per request.
async fn measure<F, Fut>(
    server: &Server,
    surface: &str,
    requests: u32,
    send: F,
) -> (Duration, Duration)
where
    F: Fn(u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let cpu_before = cpu_of(server.pid());
    let started = Instant::now();
    for n in 0..requests {
        send(n).await;
    }
    let wall = started.elapsed() / requests;
    let cpu = (cpu_of(server.pid()).saturating_sub(cpu_before)) / requests;
    println!("budget {surface}: {requests} requests, {cpu:?} CPU and {wall:?} wall each");
    (cpu, wall)
}

/// The longest value a lead's field may have.
const LONGEST: usize = 10_000;

#[tokio::test]
async fn no_visitor_route_costs_more_than_its_bound_at_the_documented_limits() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    // Pages are not kept, so each visit renders.
    let server = Server::serve(
        &db,
        &["--page-cache-mb", "0", "--rate-limit-per-minute", "100000"],
    );
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, _) = create_campaign(&server, key, ws, "Worst").await;
    let ids = json!({"workspace_id": ws, "campaign_id": campaign});
    // The costliest design the audit accepts: the most repetitions of the longest values
    // (found by halving until a submission is accepted).
    let mut repeat = 4_096;
    loop {
        let mut body = ids.clone();
        body["html"] = json!(format!(
            "{{% for i in range({repeat}) %}}<p>{{{{ first_name }}}} {{{{ company_name }}}}</p>{{% endfor %}}"
        ));
        let reply = server.post(key, "/pages/update-design", body).await;
        if reply.status == 200 {
            break;
        }
        assert_eq!(reply.status, 422, "{}", reply.text);
        repeat /= 2;
        assert!(repeat > 0, "no loop at all is accepted");
    }
    println!("budget: the costliest accepted design repeats the longest values {repeat} times");
    server
        .post(key, "/pages/publish", ids.clone())
        .await
        .expect(200);
    let longest = "W".repeat(LONGEST);
    let rows: Vec<_> = (0..5)
        .map(|n| {
            json!({"values": {"email": format!("worst{n}@example.com"),
                "first_name": longest, "company_name": longest}})
        })
        .collect();
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": rows}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let pages: Vec<String> = server
        .get(key, &format!("/leads/search?workspace_id={ws}"))
        .await
        .expect(200)
        .json()["leads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|lead| lead["service_page_url"].as_str().unwrap().to_owned())
        .collect();
    let server = &server;
    let pages = &pages;

    // A page render: fuel, output and a 1 s clock bound it.
    let (cpu, wall) = measure(
        server,
        "page render (worst design, longest values)",
        5,
        |n| async move {
            let page = server
                .send(server.client.get(&pages[n as usize % pages.len()]))
                .await;
            assert!(matches!(page.status, 200 | 503), "{}", page.status);
        },
    )
    .await;
    assert!(cpu < Duration::from_secs(3) && wall < Duration::from_secs(3));

    // A beacon: 4 KB of JSON at most.
    let padding = "x".repeat(3_500);
    let (cpu, wall) = measure(server, "beacon (4 KB)", 200, |n| {
        let padding = padding.clone();
        async move {
            server
                .send(
                    server
                        .client
                        .post(format!("{}/beacon", pages[n as usize % pages.len()]))
                        .header("content-type", "text/plain;charset=UTF-8")
                        .header("user-agent", DESKTOP_BROWSER)
                        .body(json!({"type": "click", "target": padding}).to_string()),
                )
                .await;
        }
    })
    .await;
    assert!(cpu < Duration::from_millis(50) && wall < Duration::from_millis(500));

    // A form post: 64 KB in many fields.
    let fields: String = (0..2_000)
        .map(|n| format!("field{n}=value{n}"))
        .collect::<Vec<_>>()
        .join("&");
    let fields = &fields[..fields.len().min(60_000)];
    let (cpu, wall) = measure(
        server,
        "form post (60 KB, 2,000 fields)",
        20,
        |n| async move {
            server
                .send(
                    server
                        .client
                        .post(&pages[n as usize % pages.len()])
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body(fields.to_owned()),
                )
                .await;
        },
    )
    .await;
    assert!(cpu < Duration::from_millis(300) && wall < Duration::from_secs(1));

    // The script, an unknown asset, an unknown page: fixed answers.
    for (surface, path) in [
        ("tracking script", "/p/track.js".to_owned()),
        ("unknown asset", "/assets/0123456789abcdef".to_owned()),
        ("unknown page", "/p/nothing/here".to_owned()),
    ] {
        let path = &path;
        let (cpu, wall) = measure(server, surface, 200, |_| async move {
            server.send(server.client.get(server.url_of(path))).await;
        })
        .await;
        assert!(cpu < Duration::from_millis(20) && wall < Duration::from_millis(200));
    }
}
