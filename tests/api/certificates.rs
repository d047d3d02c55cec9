//! lps terminating TLS itself (issue 49): `--https`, with certificates ordered by ACME for
//! verified domains from a real ACME server on loopback: Debian's `pebble`, its own HTTPS
//! certificate made here and trusted through `--acme-ca-file`, resolving names through
//! `pebble-challtestsrv` as lps does (`domains.rs`). The certificates lps answers with are
//! checked by a real TLS client (rustls) against the root Pebble issued from (`/roots/0`).
//! Skipped with a notice where `pebble` is missing, unless `LPS_REQUIRE_PEBBLE` is set, as CI
//! sets it.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;
use crate::domains::{TestDns, add_with_record, page_path, pebble_installed};

/// Pebble on loopback, validating names at lps's ports.
struct TestAcme {
    child: Option<Child>,
    /// `--acme-directory`.
    directory: String,
    /// `--acme-ca-file`: the root of Pebble's own HTTPS certificate.
    ca_file: String,
    management: String,
    acme_port: u16,
    management_port: u16,
    dir: tempfile::TempDir,
}

impl Drop for TestAcme {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl TestAcme {
    /// Pebble's ports and its own HTTPS certificate (from a root made here), before it runs:
    /// lps is started knowing where Pebble will be, Pebble then knowing where lps is.
    fn prepare() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "lps test: Pebble's HTTPS root");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .unwrap();
        params.is_ca = rcgen::IsCa::ExplicitNoCa;
        let leaf = params.signed_by(&key, &ca).unwrap();
        let path = |name: &str| dir.path().join(name).display().to_string();
        std::fs::write(path("ca.pem"), ca.pem()).unwrap();
        std::fs::write(path("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(path("key.pem"), key.serialize_pem()).unwrap();
        let (acme_port, management_port) = (free_port(), free_port());
        Self {
            child: None,
            directory: format!("https://127.0.0.1:{acme_port}/dir"),
            ca_file: path("ca.pem"),
            management: format!("https://127.0.0.1:{management_port}"),
            acme_port,
            management_port,
            dir,
        }
    }

    /// Runs Pebble asking `dns` for names, validating HTTP-01 at `http_port` and TLS-ALPN-01
    /// at `tls_port`, issuing certificates valid for `validity` seconds.
    fn run(&mut self, dns: &TestDns, http_port: u16, tls_port: u16, validity: u64) {
        let path = |name: &str| self.dir.path().join(name).display().to_string();
        let config = json!({"pebble": {
            "listenAddress": format!("127.0.0.1:{}", self.acme_port),
            "managementListenAddress": format!("127.0.0.1:{}", self.management_port),
            "certificate": path("cert.pem"),
            "privateKey": path("key.pem"),
            "httpPort": http_port,
            "tlsPort": tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
            "certificateValidityPeriod": validity,
        }});
        std::fs::write(path("pebble.json"), config.to_string()).unwrap();
        let child = Command::new("pebble")
            .args(["-config", &path("pebble.json"), "-dnsserver", &dns.server])
            // No waits before validating, no nonces refused at random, no authorization
            // reused (each order is validated anew).
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_AUTHZREUSE", "0")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(path("pebble.log")).unwrap())
            .spawn()
            .unwrap();
        self.child = Some(child);
        // Pebble makes its root and intermediate keys as it starts: seconds on two cores busy
        // with the rest of the suite.
        for _ in 0..300 {
            if std::net::TcpStream::connect(("127.0.0.1", self.management_port)).is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                let log = std::fs::read_to_string(path("pebble.log")).unwrap_or_default();
                panic!("pebble exited ({status}):\n{log}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(path("pebble.log")).unwrap_or_default();
        panic!("pebble did not start within 30 s:\n{log}");
    }

    /// Runs Pebble validating at `server`'s ports (see [`TestAcme::run`]): the root it issues
    /// from.
    async fn run_for(&mut self, dns: &TestDns, server: &Server, validity: u64) -> RootCertStore {
        self.run(
            dns,
            port_of(&server.http),
            port_of(&https_of(server)),
            validity,
        );
        self.issuing_root().await
    }

    /// The root Pebble issues certificates from (its management API's `/roots/0`).
    async fn issuing_root(&self) -> RootCertStore {
        let ours = std::fs::read(&self.ca_file).unwrap();
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ours).unwrap())
            .build()
            .unwrap();
        let pem = client
            .get(format!("{}/roots/0", self.management))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let mut roots = RootCertStore::empty();
        for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            roots.add(certificate.unwrap()).unwrap();
        }
        roots
    }
}

/// Pebble's DNS server (no AAAA records by default), a database and its first account; `None`
/// where Pebble is missing (see [`pebble_installed`]).
async fn with_pebble() -> Option<(TestDns, TestDb, Account)> {
    if !pebble_installed("pebble") {
        return None;
    }
    let dns = TestDns::start()?;
    dns.no_default_ipv6().await;
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    Some((dns, db, account))
}

/// Where the workspace's first domain's certificate stands (`https` of `/domains/get-list`).
async fn https_state(server: &Server, key: &str, ws: i64) -> serde_json::Value {
    let listed = server
        .get(key, &format!("/domains/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    listed["domains"][0]["https"].clone()
}

/// The HTTPS address a server announced.
fn https_of(server: &Server) -> String {
    server
        .stdout
        .iter()
        .find_map(|line| line.strip_prefix("HTTPS listening on https://"))
        .expect("an HTTPS listener")
        .to_owned()
}

fn port_of(address: &str) -> u16 {
    address.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// A TLS client (rustls) trusting `roots` only.
fn tls_client(roots: &RootCertStore) -> tokio_rustls::TlsConnector {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots.clone())
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// What a TLS client trusting `roots` gets for `path` at `address`, naming `name` (SNI and
/// `Host`): the certificate it was answered with (checked for that name against `roots`) and
/// the HTTP answer; or why the handshake failed.
async fn over_tls(
    address: &str,
    name: &str,
    path: &str,
    roots: &RootCertStore,
) -> Result<(CertificateDer<'static>, String), String> {
    let connector = tls_client(roots);
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|e| e.to_string())?;
    let server_name = ServerName::try_from(name.to_owned()).unwrap();
    let mut tls = connector
        .connect(server_name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let leaf = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    // lps closes with close_notify; a reset after the answer is read changes nothing.
    let _ = tls.read_to_end(&mut answer).await;
    Ok((leaf, String::from_utf8_lossy(&answer).into_owned()))
}

/// The serial number of a certificate, and the names it is for.
fn serial_and_names(certificate: &CertificateDer<'_>) -> (String, Vec<String>) {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate).unwrap();
    let names = parsed
        .subject_alternative_name()
        .unwrap()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .map(|name| name.to_string())
                .collect()
        })
        .unwrap_or_default();
    (parsed.raw_serial_as_string(), names)
}

/// Waits (at most a minute) until `name` is answered over TLS with a certificate other than
/// `not`: that certificate.
async fn certificate_served(
    address: &str,
    name: &str,
    roots: &RootCertStore,
    not: Option<&str>,
) -> CertificateDer<'static> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let tried = over_tls(address, name, "/", roots).await;
        if let Ok((leaf, _)) = &tried
            && not != Some(serial_and_names(leaf).0.as_str())
        {
            return leaf.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{name} got no (new) certificate at {address}: {:?}",
            tried.map(|(_, answer)| answer)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Certificates this server ordered, by outcome (`issued`, `failed`), from its `/metrics`.
async fn orders(server: &Server, outcome: &str) -> u64 {
    let text = server
        .send(server.client.get(server.url_of("/metrics")))
        .await
        .expect(200)
        .text;
    text.lines()
        .filter(|line| {
            line.starts_with("lps_acme_orders_total")
                && line.contains(&format!("outcome=\"{outcome}\""))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// lps on `db` with `--https` and ACME against `acme`'s directory (these flags besides).
fn serve_https(
    db: &TestDb,
    dns: &TestDns,
    directory: &str,
    ca_file: &str,
    flags: &[&str],
) -> Server {
    let mut args = vec![
        "--https",
        "127.0.0.1:0",
        "--dns-server",
        dns.server.as_str(),
        "--domain-retry-seconds",
        "1",
        "--acme-directory",
        directory,
        "--acme-ca-file",
        ca_file,
        "--acme-retry-seconds",
        "1",
    ];
    args.extend_from_slice(flags);
    Server::serve(db, &args)
}

/// [`verified`], and the campaign's pages handed out on it.
async fn verified_for(
    server: &Server,
    dns: &TestDns,
    key: &str,
    ws: i64,
    campaign: i64,
    hostname: &str,
) -> i64 {
    let id = verified(server, dns, key, ws, hostname).await;
    server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "domain_id": id}),
        )
        .await
        .expect(200);
    id
}

/// Adds `hostname` to the workspace with its record, and waits until it is verified.
async fn verified(server: &Server, dns: &TestDns, key: &str, ws: i64, hostname: &str) -> i64 {
    let domain = add_with_record(server, dns, key, ws, hostname).await;
    let id = domain["domain_id"].as_i64().unwrap();
    let checked = server
        .post(
            key,
            "/domains/verify",
            json!({"workspace_id": ws, "domain_id": id}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(checked["status"], "verified", "{checked}");
    id
}

#[tokio::test]
async fn a_verified_domain_is_certified_by_acme_and_its_pages_answer_over_https() {
    let Some((dns, db, account)) = with_pebble().await else {
        return;
    };
    let (other_ws, other_key) = add_workspace(&db, account.account_id, "Other");
    let (server, _acme, roots) = start_pair(&db, &dns, &[], NINETY_DAYS).await;
    let https = https_of(&server);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Spring", 1).await;
    let (_, others) = live_campaign(&server, &other_key, other_ws, "Autumn", 1).await;

    // Nothing is answered over TLS before a name is verified and certified; a name a stranger
    // asks for gets no certificate, and no order.
    assert!(
        over_tls(&https, "go.example.test", "/", &roots)
            .await
            .is_err()
    );
    assert!(
        over_tls(&https, "stranger.example.test", "/", &roots)
            .await
            .is_err()
    );
    assert_eq!(
        orders(&server, "issued").await + orders(&server, "failed").await,
        0
    );

    // Verified: ordered (TLS-ALPN-01, the default, validated on the HTTPS listener), and
    // answered with a chain a TLS client checks for that name against Pebble's root.
    let id = verified_for(&server, &dns, key, ws, campaign, "go.example.test").await;
    let leaf = certificate_served(&https, "go.example.test", &roots, None).await;
    let (_, names) = serial_and_names(&leaf);
    assert_eq!(names, ["DNSName(go.example.test)"]);
    let issued = https_state(&server, key, ws).await;
    assert_eq!(issued["status"], "issued", "{issued}");
    assert!(issued["expires_at"].is_string(), "{issued}");
    let own = page_path(&pages[0].1);
    let (_, answer) = over_tls(&https, "go.example.test", &own, &roots)
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains("strict-transport-security: max-age=31536000"),
        "{answer}"
    );
    assert!(
        answer.contains(&format!(
            "<meta property=\"og:url\" content=\"https://go.example.test{own}\""
        )),
        "{answer}"
    );
    // Another workspace's lead under that host is not found there.
    let (_, answer) = over_tls(&https, "go.example.test", &page_path(&others[0].1), &roots)
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");

    // Plain HTTP to the domain moves to HTTPS; the deployment's own address stays as it is.
    let not_following = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let plain = server
        .send(
            not_following
                .get(server.url_of(&own))
                .header("host", "go.example.test"),
        )
        .await;
    assert_eq!(plain.status, 308);
    assert_eq!(
        plain.header("location"),
        Some(format!("https://go.example.test:{}{own}", port_of(&https)).as_str())
    );
    server
        .send(server.client.get(&pages[0].1))
        .await
        .expect(200);

    // One order, whatever strangers named; still no certificate for them.
    assert!(
        over_tls(&https, "stranger.example.test", "/", &roots)
            .await
            .is_err()
    );
    assert_eq!(orders(&server, "issued").await, 1);
    assert_eq!(orders(&server, "failed").await, 0);

    // The certificates and their keys are for a trusted edge only, never a stranger on gRPC.
    let mut visitor = lps::proto::visitor_service_client::VisitorServiceClient::connect(
        server.grpc.clone().unwrap(),
    )
    .await
    .unwrap();
    let refused = visitor
        .list_certificates(lps::proto::ListCertificatesRequest {})
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);

    // The domain deleted: its certificate is forgotten and the name answered no more.
    server
        .post(
            key,
            "/domains/delete",
            json!({"workspace_id": ws, "domain_id": id}),
        )
        .await
        .expect(200);
    let deadline = Instant::now() + Duration::from_secs(20);
    while over_tls(&https, "go.example.test", "/", &roots)
        .await
        .is_ok()
    {
        assert!(
            Instant::now() < deadline,
            "a deleted domain is still answered over TLS"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Added and verified again: answered at once with the certificate kept, ordered nothing
    // new (deleting and adding a name again cannot spend the CA's limits).
    verified(&server, &dns, key, ws, "go.example.test").await;
    let again = certificate_served(&https, "go.example.test", &roots, None).await;
    assert_eq!(serial_and_names(&again).0, serial_and_names(&leaf).0);
    assert_eq!(orders(&server, "issued").await, 1);
}

/// The validity of the certificates Pebble issues in most tests.
const NINETY_DAYS: u64 = 90 * 86_400;

/// lps with `--https` (these flags besides), then Pebble validating at its ports, issuing
/// certificates valid for `validity` seconds.
async fn start_pair(
    db: &TestDb,
    dns: &TestDns,
    flags: &[&str],
    validity: u64,
) -> (Server, TestAcme, RootCertStore) {
    let mut acme = TestAcme::prepare();
    let server = serve_https(db, dns, &acme.directory, &acme.ca_file, flags);
    let roots = acme.run_for(dns, &server, validity).await;
    (server, acme, roots)
}

#[tokio::test]
async fn http_01_proves_a_name_and_a_certificate_near_its_end_is_renewed() {
    let Some((dns, db, account)) = with_pebble().await else {
        return;
    };
    // Certificates valid for 30 seconds: renewed a third of that before they end.
    let (server, _acme, roots) = start_pair(&db, &dns, &["--acme-challenge", "http-01"], 30).await;
    let https = https_of(&server);
    let (key, ws) = (&account.api_key, account.workspace_id);
    verified(&server, &dns, key, ws, "go.example.test").await;

    let first = certificate_served(&https, "go.example.test", &roots, None).await;
    let (first_serial, _) = serial_and_names(&first);
    let renewed = certificate_served(&https, "go.example.test", &roots, Some(&first_serial)).await;
    let (renewed_serial, names) = serial_and_names(&renewed);
    assert_ne!(renewed_serial, first_serial);
    assert_eq!(names, ["DNSName(go.example.test)"]);
    assert!(orders(&server, "issued").await >= 2);
    assert_eq!(orders(&server, "failed").await, 0);
    // The validation's answer is gone once the order is done.
    let answer = server
        .send(
            server
                .client
                .get(server.url_of("/.well-known/acme-challenge/no-such-token"))
                .header("host", "go.example.test"),
        )
        .await;
    assert_eq!(answer.status, 404);
}

#[tokio::test]
async fn two_processes_on_postgresql_share_one_certificate() {
    let Some((dns, db, account)) = with_pebble().await else {
        return;
    };
    if !db.is_postgres() {
        eprintln!("skipped: many processes share one database on PostgreSQL only");
        return;
    }
    let mut acme = TestAcme::prepare();
    let first = serve_https(&db, &dns, &acme.directory, &acme.ca_file, &[]);
    let second = serve_https(&db, &dns, &acme.directory, &acme.ca_file, &[]);
    // Pebble validates at the first process only: whichever process orders, the answer is
    // in the database for the other to give.
    let roots = acme.run_for(&dns, &first, NINETY_DAYS).await;
    let (key, ws) = (&account.api_key, account.workspace_id);
    verified(&second, &dns, key, ws, "go.example.test").await;

    let one = certificate_served(&https_of(&first), "go.example.test", &roots, None).await;
    let other = certificate_served(&https_of(&second), "go.example.test", &roots, None).await;
    assert_eq!(serial_and_names(&one).0, serial_and_names(&other).0);
    assert_eq!(
        orders(&first, "issued").await + orders(&second, "issued").await,
        1,
        "one process ordered, the other picked it up"
    );
}

#[tokio::test]
async fn an_acme_server_that_is_down_is_tried_again_and_the_owner_is_told_why() {
    let Some((dns, db, account)) = with_pebble().await else {
        return;
    };
    // lps up, the ACME server not yet.
    let mut acme = TestAcme::prepare();
    let server = serve_https(&db, &dns, &acme.directory, &acme.ca_file, &[]);
    let https = https_of(&server);
    let (key, ws) = (&account.api_key, account.workspace_id);
    verified(&server, &dns, key, ws, "go.example.test").await;

    // The order fails, is counted, and the domain says why and when it is tried again; its
    // pages stay served over plain HTTP meanwhile.
    let deadline = Instant::now() + Duration::from_secs(20);
    let failing = loop {
        let state = https_state(&server, key, ws).await;
        if state["status"] == "failing" {
            break state;
        }
        assert!(
            Instant::now() < deadline,
            "no failed order reported: {state}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(failing["reason"].as_str().unwrap().len() > 10, "{failing}");
    assert!(failing["next_order_at"].is_string(), "{failing}");
    assert_eq!(failing["expires_at"], serde_json::Value::Null);
    assert!(orders(&server, "failed").await >= 1);

    // The ACME server back: the next try succeeds by itself.
    let roots = acme.run_for(&dns, &server, NINETY_DAYS).await;
    certificate_served(&https, "go.example.test", &roots, None).await;
    let issued = https_state(&server, key, ws).await;
    assert_eq!(issued["status"], "issued", "{issued}");
    assert_eq!(issued["reason"], serde_json::Value::Null);
}

#[tokio::test]
async fn core_orders_and_an_edge_apart_answers_https_with_the_edge_secret_only() {
    let Some((dns, db, account)) = with_pebble().await else {
        return;
    };
    let mut acme = TestAcme::prepare();
    let secret = "an edge secret of the test";
    let core = Server::spawn(
        &[
            "core",
            "--database-url",
            &db.url,
            "--grpc",
            "127.0.0.1:0",
            "--edge-secret",
            secret,
            "--dns-server",
            &dns.server,
            "--domain-retry-seconds",
            "1",
            "--acme-directory",
            &acme.directory,
            "--acme-ca-file",
            &acme.ca_file,
            "--acme-retry-seconds",
            "1",
        ],
        false,
        true,
    );
    let core_url = core.grpc.clone().unwrap();
    let edge = |secret: Option<&str>| {
        let mut args = vec!["edge", "--core-url", &core_url, "--http", "127.0.0.1:0"];
        args.extend(["--https", "127.0.0.1:0"]);
        if let Some(secret) = secret {
            args.extend(["--edge-secret", secret]);
        }
        Server::spawn(&args, true, false)
    };
    let trusted = edge(Some(secret));
    let stranger = edge(None);
    let roots = acme.run_for(&dns, &trusted, NINETY_DAYS).await;
    let (key, ws) = (&account.api_key, account.workspace_id);
    verified(&trusted, &dns, key, ws, "go.example.test").await;

    certificate_served(&https_of(&trusted), "go.example.test", &roots, None).await;
    // An edge core does not trust is given no key, so it answers no HTTPS.
    assert!(
        over_tls(&https_of(&stranger), "go.example.test", "/", &roots)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_person_reaches_the_senders_domain_over_https_in_a_real_browser_and_is_counted() {
    let Some((dns, db, account)) = with_pebble().await else {
        return;
    };
    let Some(driver) = crate::browser::driver("custom domain over HTTPS").await else {
        return;
    };
    let (server, _acme, roots) = start_pair(&db, &dns, &[], NINETY_DAYS).await;
    let https = https_of(&server);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Spring", 1).await;
    let (lead, address) = &pages[0];
    verified_for(&server, &dns, key, ws, campaign, "go.example.test").await;
    let leaf = certificate_served(&https, "go.example.test", &roots, None).await;

    // The browser trusts the certificate lps got (as a real CA's would be), and finds the
    // domain at lps's HTTPS listener (as the CNAME would lead it there).
    let spki = {
        use base64::Engine as _;
        use sha2::Digest as _;
        let (_, parsed) = x509_parser::parse_x509_certificate(&leaf).unwrap();
        base64::engine::general_purpose::STANDARD
            .encode(sha2::Sha256::digest(parsed.tbs_certificate.subject_pki.raw))
    };
    let browser = crate::browser::browser_resolving_trusting(
        &driver,
        "MAP go.example.test 127.0.0.1",
        Some(&spki),
    )
    .await;
    let path = page_path(address);
    browser
        .goto(&format!(
            "https://go.example.test:{}{path}",
            port_of(&https)
        ))
        .await
        .unwrap();
    let seen = browser
        .execute(
            "return [document.querySelector('meta[property=\"og:url\"]').content, \
             window.isSecureContext, location.protocol]",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        seen,
        json!([format!("https://go.example.test{path}"), true, "https:"])
    );
    // A person stays a few seconds: the view counts, its beacons sent over HTTPS.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    one_view_counted(&server, key, *lead).await;
    browser.close().await.unwrap();
}

#[tokio::test]
async fn a_slow_tls_client_holds_its_connection_no_longer_than_a_slow_plain_one() {
    let Some((dns, db, account)) = with_pebble().await else {
        return;
    };
    let (server, _acme, roots) =
        start_pair(&db, &dns, &["--http-header-timeout", "2"], NINETY_DAYS).await;
    let https = https_of(&server);
    let (key, ws) = (&account.api_key, account.workspace_id);
    verified(&server, &dns, key, ws, "go.example.test").await;
    certificate_served(&https, "go.example.test", &roots, None).await;

    // Silent: closed within the header timeout.
    let started = Instant::now();
    let mut silent = tokio::net::TcpStream::connect(&https).await.unwrap();
    let mut nothing = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), silent.read_to_end(&mut nothing)).await;
    assert!(
        started.elapsed() < Duration::from_millis(3500),
        "{:?}",
        started.elapsed()
    );

    // A handshake that takes most of it, then no request: the request head had only what the
    // handshake left (not a whole header timeout more).
    let started = Instant::now();
    let tcp = tokio::net::TcpStream::connect(&https).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut tls = tls_client(&roots)
        .connect(ServerName::try_from("go.example.test").unwrap(), tcp)
        .await
        .expect("the handshake within the header timeout");
    let mut nothing = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut nothing)).await;
    assert!(
        started.elapsed() < Duration::from_millis(3000),
        "held {:?} with a header timeout of 2 s",
        started.elapsed()
    );
}
