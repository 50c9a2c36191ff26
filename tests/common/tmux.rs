//! A terminal for tests: a tmux server of the test's own (its own socket), to run a program in a real
//! terminal and read its screen (`capture-pane`).

use std::process::Command;
use std::time::{Duration, Instant};

use testkit::waits::Deadline;

/// A tmux server of this test's own (its own socket), killed on drop.
pub struct Tmux(pub String);

impl Tmux {
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.0)
            .args(args)
            .output();
        let out = out.expect("tmux is installed (apt-get install tmux)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts `command` in a new 200x50 window with `env` (NAME=value, given to `env`: tmux's own `-e` does not
    /// reach PATH); when it exits, the pane says so and stays.
    pub fn start(&self, session: &str, env: &[String], command: &str) {
        let line = format!(
            "env {} {command}; echo \"plugin exited: $?\"; sleep 600",
            env.join(" ")
        );
        self.run(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "200",
            "-y",
            "50",
            &line,
        ]);
    }

    /// The screen, with (`escapes`) or without the colour escapes.
    pub fn screen(&self, session: &str, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", session];
        if escapes {
            args.push("-e");
        }
        self.run(&args)
    }

    /// Waits until the screen satisfies `check`; panics with the screen (the last seen) after `deadline`, or
    /// at once when the program ended (the pane says "plugin exited", see [`Tmux::start`]).
    pub fn wait_screen(
        &self,
        session: &str,
        deadline: impl Into<Deadline>,
        what: &str,
        check: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = deadline.into();
        let started = Instant::now();
        loop {
            let screen = self.screen(session, false);
            if check(&screen) {
                return screen;
            }
            assert!(
                !screen.contains("plugin exited:"),
                "waiting for {what}: the program ended; screen:\n{screen}"
            );
            assert!(
                started.elapsed() < deadline.limit(),
                "waited {:.1?} for {what}, past the deadline of {deadline}; screen:\n{screen}",
                started.elapsed()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}
