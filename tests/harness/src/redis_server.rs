//! A real `redis-server` for tests: started on a free loopback port in a private temp directory,
//! without persistence, and stopped by PID when dropped (also on panic).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running redis-server owned by the test that started it.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    extra_args: Vec<String>,
    /// A program redis-server runs under (`valgrind --tool=callgrind`), if any: same PID, slower start.
    wrapper: Vec<String>,
}

impl RedisServer {
    /// Starts a server on a free port. Panics with a clear message if redis-server is missing.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a server with extra command-line arguments (e.g. `["--requirepass", "x"]`).
    ///
    /// With `RATELOCK_TESTS_LOAD_MODULE=1` in the environment every server also loads the ratelock
    /// module, so a test suite runs again with the module serving its calls (`make module-suites`).
    pub fn start_with(extra_args: &[&str]) -> Self {
        Self::start_under(&[], extra_args)
    }

    /// [`start_with`](Self::start_with), with redis-server run under `wrapper` (a program and its
    /// arguments that execs it in the same process, as `valgrind --tool=callgrind` does).
    pub fn start_under(wrapper: &[&str], extra_args: &[&str]) -> Self {
        let mut extra_args: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        if std::env::var_os("RATELOCK_TESTS_LOAD_MODULE").is_some_and(|v| v == "1")
            && !extra_args.iter().any(|a| a == "--loadmodule")
        {
            let module = crate::module::module_path().display().to_string();
            extra_args.splice(0..0, ["--loadmodule".to_owned(), module]);
        }
        for _attempt in 0..5 {
            let port = free_port();
            let dir = std::env::temp_dir().join(format!("ratelock-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("create redis temp dir");
            let mut server = RedisServer {
                child: None,
                port,
                dir,
                extra_args: extra_args.clone(),
                wrapper: wrapper.iter().map(|s| s.to_string()).collect(),
            };
            if server.spawn() {
                return server;
            }
        }
        panic!("could not start redis-server on a free port after 5 attempts");
    }

    fn spawn(&mut self) -> bool {
        let mut command = match self.wrapper.split_first() {
            Some((program, arguments)) => {
                let mut command = Command::new(program);
                command.args(arguments).arg("redis-server");
                command
            }
            None => Command::new("redis-server"),
        };
        let child = command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--enable-debug-command", "yes", "--dir"])
            .arg(&self.dir)
            .args(&self.extra_args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run redis-server ({e}); install it: apt-get install -y redis-server")
            });
        self.child = Some(child);
        let start_within = if self.wrapper.is_empty() { 10 } else { 60 };
        let deadline = Instant::now() + Duration::from_secs(start_within);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    self.child = None;
                    return false;
                }
            }
            let pid = self.child.as_ref().map_or(0, Child::id);
            match listener(self.port, pid) {
                Listener::That => return true,
                // Another test's server holds the port and ours cannot bind it: try another port.
                Listener::Another => break,
                Listener::Nobody => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        self.stop();
        false
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The PID of the running server.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A plain synchronous connection for inspecting the server from a test.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("connect to test redis")
    }

    /// How many calls of `command` (as `INFO commandstats` names it: `ping`, `cluster|slots`) the
    /// server has served since it started or its last `CONFIG RESETSTAT`.
    pub fn calls_of(&self, command: &str) -> u64 {
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut self.connection())
            .unwrap();
        let prefix = format!("cmdstat_{command}:calls=");
        stats
            .lines()
            .filter_map(|line| line.strip_prefix(prefix.as_str()))
            .filter_map(|rest| rest.split(',').next()?.parse::<u64>().ok())
            .sum()
    }

    /// How many `MOVED` replies the server has given (`INFO errorstats`).
    pub fn moved_replies(&self) -> u64 {
        let stats: String = redis::cmd("INFO")
            .arg("errorstats")
            .query(&mut self.connection())
            .unwrap();
        stats
            .lines()
            .filter_map(|line| line.strip_prefix("errorstat_MOVED:count="))
            .filter_map(|count| count.trim().parse::<u64>().ok())
            .sum()
    }

    /// Kills every normal client connection but the caller's (`CLIENT KILL TYPE normal SKIPME yes`), as
    /// an operator or an idle-closing proxy would.
    pub fn kill_clients(&self) {
        let _: redis::RedisResult<i64> = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("normal")
            .arg("SKIPME")
            .arg("yes")
            .query(&mut self.connection());
    }

    /// Stops the server by PID and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on its port after [`stop`](Self::stop) (empty: no persistence).
    pub fn start_again(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.spawn() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start again on port {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Freezes the server (SIGSTOP): connections stay open and the kernel still accepts new ones, but
    /// nothing is answered, as with a hung host.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, which: &str) {
        let pid = self.pid().expect("a running server");
        let status = Command::new("kill")
            .args([which, &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {which} {pid}");
    }

    /// Stops the server and starts a fresh one (no persistence: empty) on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A test that failed while the server was paused: let it run, so it exits at once on SIGKILL.
        if self.child.is_some() {
            let _ = Command::new("kill")
                .args(["-CONT", &self.pid().unwrap_or(0).to_string()])
                .status();
        }
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Who listens on a loopback port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listener {
    /// Nobody yet.
    Nobody,
    /// The process asked about.
    That,
    /// Another process: ours lost the port (it exits, unable to bind).
    Another,
}

/// Who listens on 127.0.0.1:`port`, as the kernel says (`/proc/net/tcp`, and `pid`'s open sockets).
///
/// A connect is not proof that our server is up: a port picked as free can be taken by another test's
/// server before ours binds it (ours then exits, and a connect reaches the other one), and a connect
/// to a port nobody listens on yet can connect to itself. Asking the server itself needs its password.
pub(crate) fn listener(port: u16, pid: u32) -> Listener {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("read /proc/net/tcp");
    let address = format!("0100007F:{port:04X}");
    // Columns: sl, local_address, rem_address, st (0A: listening), …, inode (the tenth).
    let inodes: Vec<&str> = table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|columns| columns.len() > 9 && columns[1] == address && columns[3] == "0A")
        .map(|columns| columns[9])
        .collect();
    if inodes.is_empty() {
        return Listener::Nobody;
    }
    let ours = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .any(|target| {
            let target = target.to_string_lossy();
            inodes.iter().any(|inode| target == format!("socket:[{inode}]"))
        });
    if ours {
        Listener::That
    } else {
        Listener::Another
    }
}

/// A port the OS reports free on the loopback interface.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("find a free loopback port")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port taken by another server between `free_port` and our bind: ours exits, and the port
    /// still answers. The kit must not take the other server for ours.
    #[test]
    fn a_port_another_server_holds_is_not_taken_for_ours() {
        let other = RedisServer::start();
        let mut ours = RedisServer {
            child: None,
            port: other.port(),
            dir: std::env::temp_dir().join(format!("ratelock-redis-{}-taken", std::process::id())),
            extra_args: Vec::new(),
            wrapper: Vec::new(),
        };
        std::fs::create_dir_all(&ours.dir).unwrap();
        assert!(!ours.spawn(), "the other server's answer was taken for ours");
        assert_eq!(listener(other.port(), other.pid().unwrap()), Listener::That);
    }

    /// A server with a password is found listening too (it answers nothing before AUTH).
    #[test]
    fn a_server_with_a_password_starts() {
        let server = RedisServer::start_with(&["--requirepass", "secret"]);
        assert_eq!(listener(server.port(), server.pid().unwrap()), Listener::That);
    }
}
