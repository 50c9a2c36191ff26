//! The credential plugins' process groups killed when Ctrl-C (or SIGTERM, SIGHUP) stops the command.
//!
//! A plugin runs in a process group of its own (so that a deadline can kill it with its children), and so
//! the terminal's Ctrl-C, sent to the foreground group, does not reach it: the kernel kills the plugin with
//! the command (`PR_SET_PDEATHSIG`), but a child the plugin started (a browser login's helper) would live
//! on. While a plugin runs, and only where the signal's action is the default (no one else handles it: the
//! one-shot commands), a handler kills every running plugin's group and then dies of the signal as the
//! default would. When the last plugin ends, the default action is put back.
//!
//! The handler may only call async-signal-safe functions: it reads atomics and calls kill(2), signal(2)
//! and raise(3).

use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals that stop a command from the terminal or a supervisor.
#[cfg(unix)]
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Process groups of the plugins running now (0: a free slot). Several contexts may each run a plugin.
static RUNNING: [AtomicI32; 32] = [const { AtomicI32::new(0) }; 32];

/// How many plugins run, and the signals whose action is ours while they do.
static INSTALLED: Mutex<(usize, Vec<libc::c_int>)> = Mutex::new((0, Vec::new()));

/// A running plugin's group, listed for the handler until dropped.
pub(crate) struct Listed(Option<usize>);

/// Lists `pgid` for the handler, installing it where the signals' actions are the default. With every slot
/// taken the group is not listed (the deadline still kills it).
pub(crate) fn list(pgid: u32) -> Listed {
    let Ok(pgid) = i32::try_from(pgid) else {
        return Listed(None);
    };
    let slot = RUNNING.iter().position(|slot| {
        slot.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    });
    if slot.is_some() {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if installed.0 == 0 {
            installed.1 = install();
        }
        installed.0 += 1;
    }
    Listed(slot)
}

impl Drop for Listed {
    fn drop(&mut self) {
        let Some(slot) = self.0.take() else {
            return;
        };
        RUNNING[slot].store(0, Ordering::SeqCst);
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        installed.0 -= 1;
        if installed.0 == 0 {
            restore(&std::mem::take(&mut installed.1));
        }
    }
}

/// Installs the handler for each signal whose action is the default; returns those.
#[cfg(unix)]
fn install() -> Vec<libc::c_int> {
    let mut ours = Vec::new();
    for signal in SIGNALS {
        // SAFETY: sigaction(2) reading the current action into a zeroed struct, then setting ours, a plain
        // extern "C" function; no memory is shared with the handler but the atomics above.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0
                || current.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) == 0 {
                ours.push(signal);
            }
        }
    }
    ours
}

#[cfg(not(unix))]
fn install() -> Vec<libc::c_int> {
    Vec::new()
}

/// Puts the default action back on `signals` where ours is still the action (a later handler stays).
#[cfg(unix)]
fn restore(signals: &[libc::c_int]) {
    for &signal in signals {
        // SAFETY: as in `install`.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            if libc::sigaction(signal, std::ptr::null(), &mut current) == 0
                && current.sa_sigaction == handler
            {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

#[cfg(not(unix))]
fn restore(_: &[libc::c_int]) {}

/// Kills every listed group, then dies of `signal` as its default action would.
#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    for slot in &RUNNING {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) is async-signal-safe; the group is one this process made.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
    // SAFETY: signal(2) and raise(3) are async-signal-safe; the default action ends the process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
