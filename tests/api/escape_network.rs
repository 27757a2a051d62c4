//! The network floor tried from inside a machine, as a hostile agent would: the cloud metadata
//! address, blocked ranges routed to a decoy (private, shared, benchmarking), the host's own
//! addresses (its main interface, a public address, loopback, IPv6), each directly (the kernel
//! floor: refused at once) and through the egress proxy (403), in both network modes. A decoy
//! network namespace with a public address stands in for the internet. Needs root, like every
//! machine test.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{Backend, TestApp, User, sh, spawn, spawn_with};
use crate::sandboxes::{agent, environment, launch, wait_status};

fn host_sh(cmd: &str) -> bool {
    Command::new("sh").args(["-c", cmd]).status().is_ok_and(|s| s.success())
}

/// Serves `body` over HTTP on `listener` until the runtime ends.
fn serve(listener: std::net::TcpListener, body: &'static str) {
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let router = axum::Router::new().fallback(move || async move { body });
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
}

/// A network namespace holding a public address (`ip`, on a /30 whose other end `host_ip` is
/// therefore one of the host's own public addresses) and addresses of blocked ranges routed to it
/// from the host (`blocked`): without the floor a machine would reach them all. It answers HTTP
/// on port 80 of each with `decoy`. Removed with its routes on drop.
struct Decoy {
    netns: String,
    host_if: String,
    host_ip: Ipv4Addr,
    ip: Ipv4Addr,
    blocked: Vec<Ipv4Addr>,
}

/// Decoys of one test process never share names or addresses (the core unit tests use tags below 32).
static NEXT_TAG: AtomicU32 = AtomicU32::new(32);

impl Decoy {
    fn new() -> Decoy {
        let (tag, pid) = (NEXT_TAG.fetch_add(1, Ordering::Relaxed), std::process::id());
        assert!(tag < 64, "out of decoy addresses");
        // Just outside TEST-NET-3, so public: four internet addresses are shadowed on this host
        // while the test runs.
        let base = u32::from(Ipv4Addr::new(203, 0, 114, 0)) + 4 * tag;
        let (host_ip, ip) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
        let t = u8::try_from(tag).unwrap();
        let blocked = vec![Ipv4Addr::new(10, 203, t, 2), Ipv4Addr::new(100, 64, t, 2), Ipv4Addr::new(198, 18, t, 2)];
        let decoy =
            Decoy { netns: format!("acsesc{tag}-{pid}"), host_if: format!("ve{tag}-{pid}"), host_ip, ip, blocked };
        let (ns, ve) = (&decoy.netns, &decoy.host_if);
        let mut script = format!(
            "ip netns add {ns} && ip link add {ve} type veth peer name eth0 netns {ns} && \
             ip addr add {host_ip}/30 dev {ve} && ip link set {ve} up && \
             ip -n {ns} addr add {ip}/30 dev eth0 && ip -n {ns} link set eth0 up && ip -n {ns} link set lo up"
        );
        for extra in &decoy.blocked {
            script +=
                &format!(" && ip -n {ns} addr add {extra}/32 dev eth0 && ip route add {extra}/32 via {ip} dev {ve}");
        }
        assert!(host_sh(&script), "decoy setup");
        // Bound from a thread inside the namespace; the socket stays there wherever it is served from.
        let path = format!("/run/netns/{ns}");
        let listener = std::thread::spawn(move || {
            let ns = File::open(path).expect("decoy netns");
            // SAFETY: setns on an owned descriptor, on a thread that ends right after the bind.
            assert_eq!(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
            std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 80)).expect("decoy listener")
        })
        .join()
        .expect("decoy thread");
        serve(listener, "decoy");
        decoy
    }
}

impl Drop for Decoy {
    fn drop(&mut self) {
        // The routes go with the interface.
        host_sh(&format!("ip link del {} 2>/dev/null; ip netns del {} 2>/dev/null", self.host_if, self.netns));
    }
}

/// A service on every address of the host (both families), standing for what a host runs.
fn host_service() -> u16 {
    let listener = std::net::TcpListener::bind("[::]:0").expect("host listener");
    let port = listener.local_addr().unwrap().port();
    serve(listener, "host");
    port
}

/// The host's source address toward `probe`, when it has a route there: its main address.
fn main_address(probe: &str) -> Option<IpAddr> {
    let any = if probe.starts_with('[') { "[::]:0" } else { "0.0.0.0:0" };
    let socket = UdpSocket::bind(any).ok()?;
    socket.connect(probe).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

fn url(ip: IpAddr, port: u16) -> String {
    format!("http://{}/", SocketAddr::new(ip, port))
}

/// How a probe leaves the machine.
#[derive(Clone, Copy)]
enum Via {
    /// No proxy: the kernel decides.
    Direct,
    /// A plain HTTP request through the egress proxy.
    Proxy,
    /// A CONNECT tunnel through the egress proxy.
    Tunnel,
}

/// A probe: its label, how it leaves, its URL.
type Probe = (String, Via, String);

/// Runs every probe from inside the machine in one script. The answer to a direct probe is
/// `<http code> <seconds> rc=<curl exit>` (7: could not connect); through the proxy, the HTTP
/// status, or the CONNECT answer's.
async fn probe(app: &TestApp, id: Uuid, probes: &[Probe]) -> BTreeMap<String, String> {
    let mut script = String::new();
    for (label, via, target) in probes {
        let line = match via {
            Via::Direct => format!(
                "printf '%s\\t' {label}; curl -s -o /dev/null --noproxy '*' -m 3 -w '%{{http_code}} %{{time_total}}' '{target}'; echo \" rc=$?\""
            ),
            Via::Proxy => format!(
                "printf '%s\\t' {label}; curl -s -o /dev/null --noproxy '' -x \"$http_proxy\" -m 5 -w '%{{http_code}}' '{target}'; echo"
            ),
            Via::Tunnel => format!(
                "printf '%s\\t' {label}; curl -s -o /dev/null --noproxy '' -p -x \"$http_proxy\" -m 5 -w '%{{http_connect}}' '{target}'; echo"
            ),
        };
        script += &line;
        script.push('\n');
    }
    let (code, out, err) = sh(app, id, &script).await;
    assert_eq!(code, Some(0), "{out} {err}");
    let answers: BTreeMap<String, String> = out
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(label, answer)| (label.to_owned(), answer.trim().to_owned()))
        .collect();
    assert_eq!(answers.len(), probes.len(), "{out} {err}");
    answers
}

/// A direct probe that could not connect, and learnt so at once (a reset or an ICMP error from the
/// floor, never a silent drop waited out).
fn assert_refused_at_once(answers: &BTreeMap<String, String>, label: &str) {
    let answer = &answers[label];
    let (timing, rc) = answer.rsplit_once(" rc=").unwrap_or_else(|| panic!("{label}: {answer}"));
    assert_eq!(rc, "7", "{label}: could connect or timed out: {answer}");
    let seconds: f64 = timing.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(f64::MAX);
    assert!(seconds < 1.0, "{label}: refused only after {seconds} s");
}

/// The machine's egress records, host as dialed -> (status, error), once `n` have been written.
async fn egress(app: &TestApp, u: &User, id: Uuid, n: usize) -> BTreeMap<String, (Value, Value)> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = app.get(&format!("/api/sandboxes/{id}/egress"), &u.key).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let list = r.body["data"].as_array().unwrap().clone();
        if list.len() >= n || std::time::Instant::now() > deadline {
            return list
                .iter()
                .map(|e| (e["host"].as_str().unwrap().to_owned(), (e["status"].clone(), e["error"].clone())))
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A ready machine of an environment with this network configuration.
async fn machine(app: &TestApp, u: &User, network: Value) -> Uuid {
    let env = environment(app, u, network).await;
    let a = agent(app, u, json!({"environment_id": env})).await;
    let id = launch(app, u, a).await;
    wait_status(app, u, id, "ready").await;
    id
}

/// Every way out a machine must not have, directly and through the proxy; `port` is the host
/// service's.
fn forbidden(decoy: &Decoy, port: u16) -> Vec<Probe> {
    let metadata = IpAddr::from([169, 254, 169, 254]);
    // A machine's 127.0.0.1 is its own: the host's loopback has no address from inside at all.
    let mut direct = vec![
        ("metadata".to_owned(), url(metadata, 80)),
        ("loopback".to_owned(), url(Ipv4Addr::LOCALHOST.into(), port)),
    ];
    let mut proxied = vec![
        ("metadata".to_owned(), url(metadata, 80)),
        ("loopback".to_owned(), url(Ipv4Addr::LOCALHOST.into(), port)),
        ("loopback6".to_owned(), url(std::net::Ipv6Addr::LOCALHOST.into(), port)),
        ("mapped_metadata".to_owned(), url("::ffff:169.254.169.254".parse().unwrap(), 80)),
        ("nat64_metadata".to_owned(), url("64:ff9b::a9fe:a9fe".parse().unwrap(), 80)),
    ];
    for (i, ip) in decoy.blocked.iter().enumerate() {
        direct.push((format!("blocked{i}"), url((*ip).into(), 80)));
        proxied.push((format!("blocked{i}"), url((*ip).into(), 80)));
    }
    // The host's own: a public address, and its main addresses whatever they are.
    let mut own = vec![("host_public".to_owned(), IpAddr::from(decoy.host_ip))];
    own.extend(main_address("8.8.8.8:53").map(|ip| ("host_main".to_owned(), ip)));
    own.extend(main_address("[2001:4860:4860::8888]:53").map(|ip| ("host_main6".to_owned(), ip)));
    for (label, ip) in own {
        direct.push((label.clone(), url(ip, port)));
        proxied.push((label, url(ip, port)));
    }
    let mut probes: Vec<Probe> = Vec::new();
    probes.extend(direct.into_iter().map(|(l, u)| (format!("direct_{l}"), Via::Direct, u)));
    probes.extend(proxied.into_iter().map(|(l, u)| (format!("proxy_{l}"), Via::Proxy, u)));
    probes.push(("tunnel_metadata".into(), Via::Tunnel, "https://169.254.169.254/".into()));
    probes.push(("tunnel_blocked".into(), Via::Tunnel, format!("https://{}/", decoy.blocked[0])));
    probes
}

/// The callback key still reaches the API through the proxy.
async fn api_reachable(app: &TestApp, id: Uuid) {
    let script = "curl -s -o /dev/null -m 5 -w '%{http_code}' -H \"authorization: Bearer $ACS_API_KEY\" \"$ACS_API_URL/api/auth/me\"";
    let (_, out, err) = sh(app, id, script).await;
    assert_eq!(out, "200", "{err}");
}

async fn unrestricted_machines_reach_the_internet_and_no_blocked_range(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let decoy = Decoy::new();
    let port = host_service();
    let id = machine(&app, &u, json!({"networking_type": "unrestricted"})).await;
    let mut probes = forbidden(&decoy, port);
    probes.push(("direct_internet".into(), Via::Direct, url(decoy.ip.into(), 80)));
    probes.push(("proxy_internet".into(), Via::Proxy, url(decoy.ip.into(), 80)));
    let answers = probe(&app, id, &probes).await;

    assert!(answers["direct_internet"].starts_with("200 "), "{answers:#?}");
    assert_eq!(answers["proxy_internet"], "200", "{answers:#?}");
    for (label, via, _) in &probes {
        if label.ends_with("_internet") {
            continue;
        }
        match via {
            Via::Direct => assert_refused_at_once(&answers, label),
            Via::Proxy | Via::Tunnel => assert_eq!(answers[label], "403", "{label}: {answers:#?}"),
        }
    }
    // Every name is allowed here, so each proxied refusal is the address check.
    let proxied = probes.iter().filter(|(_, via, _)| !matches!(via, Via::Direct)).count();
    let records = egress(&app, &u, id, proxied).await;
    assert_eq!(records.len(), proxied, "{records:#?}");
    for (host, (status, error)) in &records {
        if *host == format!("{}:80", decoy.ip) {
            assert_eq!((status, error), (&json!(200), &Value::Null), "{host}");
        } else {
            assert_eq!((status, error), (&json!(403), &json!("address_not_allowed")), "{host}");
        }
    }
    api_reachable(&app, id).await;
}

async fn limited_machines_reach_no_blocked_range(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let decoy = Decoy::new();
    let port = host_service();
    // `localhost` is allowed by name, so the proxy gets as far as its address.
    let id =
        machine(&app, &u, json!({"networking_type": "limited", "networking_config": {"allowed_hosts": ["localhost"]}}))
            .await;
    let mut probes = forbidden(&decoy, port);
    probes.push(("direct_internet".into(), Via::Direct, url(decoy.ip.into(), 80)));
    probes.push(("proxy_internet".into(), Via::Proxy, url(decoy.ip.into(), 80)));
    probes.push(("proxy_localhost".into(), Via::Proxy, format!("http://localhost:{port}/")));
    let answers = probe(&app, id, &probes).await;
    for (label, via, _) in &probes {
        match via {
            Via::Direct => assert_refused_at_once(&answers, label),
            Via::Proxy | Via::Tunnel => assert_eq!(answers[label], "403", "{label}: {answers:#?}"),
        }
    }
    let records = egress(&app, &u, id, probes.iter().filter(|(_, via, _)| !matches!(via, Via::Direct)).count()).await;
    assert_eq!(
        records[&format!("localhost:{port}")],
        (json!(403), json!("address_not_allowed")),
        "an allowed name that resolves to the host: {records:#?}"
    );
    api_reachable(&app, id).await;
}

async fn exempting_a_block_in_the_proxy_leaves_the_kernel_floor_closed(b: Backend) {
    // What the tests' loopback upstreams use: every block exempted in the proxy.
    let app = spawn_with(b, &[("sandbox.blocked_cidrs", json!([]))]).await;
    let u = app.user().await;
    let decoy = Decoy::new();
    let port = host_service();
    let id = machine(&app, &u, json!({"networking_type": "unrestricted"})).await;
    let private = IpAddr::from(decoy.blocked[0]);
    let probes = [
        ("proxy_private", Via::Proxy, url(private, 80)),
        ("direct_private", Via::Direct, url(private, 80)),
        ("direct_metadata", Via::Direct, url([169, 254, 169, 254].into(), 80)),
        ("proxy_loopback", Via::Proxy, url(Ipv4Addr::LOCALHOST.into(), port)),
        ("proxy_host_public", Via::Proxy, url(decoy.host_ip.into(), port)),
        ("direct_host_public", Via::Direct, url(decoy.host_ip.into(), port)),
    ]
    .map(|(label, via, url)| (label.to_owned(), via, url));
    let answers = probe(&app, id, &probes).await;
    assert_eq!(answers["proxy_private"], "200", "exempted in the proxy: {answers:#?}");
    assert_eq!(answers["proxy_loopback"], "200", "{answers:#?}");
    assert_eq!(answers["proxy_host_public"], "403", "the host's public addresses are never exempted: {answers:#?}");
    for label in ["direct_private", "direct_metadata", "direct_host_public"] {
        assert_refused_at_once(&answers, label);
    }
}

crate::both!(
    unrestricted_machines_reach_the_internet_and_no_blocked_range,
    limited_machines_reach_no_blocked_range,
    exempting_a_block_in_the_proxy_leaves_the_kernel_floor_closed,
);
