//! nginx as an outside anchor for benchmarks: one worker serving a directory of static files,
//! tuned as people run it (`open_file_cache`, `sendfile`), and whatever else a benchmark adds
//! to its server (a `location` answering beacons, say).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// nginx with one worker serving `root`, for as long as this lives.
pub struct Nginx {
    child: Child,
    pub url: String,
}

impl Nginx {
    #[allow(dead_code)] // a benchmark that adds to nginx's server calls `start_with` alone
    pub fn start(dir: &Path, root: &Path) -> Option<Self> {
        Self::start_with(dir, root, "")
    }

    /// nginx as [`Nginx::start`], with `server` added to its `server` block.
    pub fn start_with(dir: &Path, root: &Path, server: &str) -> Option<Self> {
        let binary = ["nginx", "/usr/sbin/nginx"]
            .into_iter()
            .find(|b| Command::new(b).arg("-v").output().is_ok())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf: PathBuf = dir.join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "worker_processes 1;\ndaemon off;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log;\n\
                 events {{ worker_connections 4096; }}\n\
                 http {{\n  access_log off;\n  default_type text/html;\n  keepalive_requests 100000000;\n\
                 open_file_cache max=20000 inactive=60s;\n\
                 sendfile on; tcp_nopush on;\n\
                 client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;\n\
                 fastcgi_temp_path {dir}/fastcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;\n\
                 server {{ listen 127.0.0.1:{port}; root {root}; {server} }}\n}}\n",
                dir = dir.display(),
                root = root.display(),
            ),
        )
        .unwrap();
        let child = Command::new(binary)
            .args(["-e", &dir.join("error.log").display().to_string()])
            .args([
                "-p",
                &dir.display().to_string(),
                "-c",
                &conf.display().to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(Self { child, url });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Nginx {
    /// A fast shutdown (`SIGTERM`), which stops the worker too: killing the master alone left
    /// its worker running, and every later benchmark on the machine shared the CPU with it.
    fn drop(&mut self) {
        // SAFETY: `kill` on the id of a child this process still owns (not yet waited for).
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}
